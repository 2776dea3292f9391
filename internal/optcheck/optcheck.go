/*
Copyright The kubeinformers Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package optcheck is what the factory's options found wrong: the checks
// of option values that need nothing of the root, the errors the options
// record, and which informers each invalid narrowing option refuses (fail
// closed). The root's options record their values and call it; the
// resolution of a spec asks Errors.Refusal.
//
// Fail closed: an option that narrows what informers list (namespaces,
// selectors, shards) must never widen it when its value is bad. New
// returns every error. The client-go compatible constructors, which
// cannot return an error, log it (Errors.Log); for client-go's own
// options they then behave as client-go does, but an informer that an
// invalid narrowing option was meant for does not run at all: it makes no
// request, never syncs, and Ready and WaitForCacheSync name it with the
// error.
package optcheck

import (
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/binding"
	"github.com/kubeinformers/informers/internal/multinamespace"
	"github.com/kubeinformers/informers/sharding"
)

// Refuses reports whether the informer of resource (namespaced or not)
// must not run because of an invalid narrowing option.
type Refuses func(resource schema.GroupVersionResource, namespaced bool) bool

// Which informers an invalid narrowing option refuses.
var (
	Every      Refuses = func(schema.GroupVersionResource, bool) bool { return true }
	Namespaced Refuses = func(_ schema.GroupVersionResource, namespaced bool) bool { return namespaced }
)

// Of refuses the informers of resource.
func Of(resource schema.GroupVersionResource) Refuses {
	return func(r schema.GroupVersionResource, _ bool) bool { return r == resource }
}

// Sharded refuses the informers a shard on field applies to: all of them,
// but only the namespaced ones for the namespace hash.
func Sharded(field sharding.Field) Refuses {
	if field == sharding.FieldNamespace {
		return Namespaced
	}
	return Every
}

// Errors are what a factory's options found wrong, in the order found.
type Errors struct {
	list []optionError
}

// optionError is an invalid option value.
type optionError struct {
	err error
	// refuses selects the informers that must not run because of err; nil
	// for client-go's options.
	refuses Refuses
}

// Invalid records an error of one of client-go's own options.
func (e *Errors) Invalid(err error) {
	e.list = append(e.list, optionError{err: err})
}

// Narrowing records an error of an option that narrows what informers
// list; the informers refuses selects will not run.
func (e *Errors) Narrowing(err error, refuses Refuses) {
	e.list = append(e.list, optionError{err: err, refuses: refuses})
}

// All returns the errors, for New.
func (e *Errors) All() []error {
	out := make([]error, 0, len(e.list))
	for _, o := range e.list {
		out = append(out, o.err)
	}
	return out
}

// Log logs each error, for the client-go compatible constructors, as
// logged by the caller.
func (e *Errors) Log(logger klog.Logger) {
	logger = logger.WithCallDepth(1)
	for _, o := range e.list {
		if o.refuses != nil {
			logger.Error(o.err, "Invalid informer factory option: the informers it narrows will not run")
		} else {
			logger.Error(o.err, "Ignoring an invalid informer factory option")
		}
	}
}

// Refusal joins the errors of the invalid narrowing options meant for the
// informers of resource, or returns nil.
func (e *Errors) Refusal(resource schema.GroupVersionResource, namespaced bool) error {
	var errs []error
	for _, o := range e.list {
		if o.refuses != nil && o.refuses(resource, namespaced) {
			errs = append(errs, o.err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("not started: an invalid option would have widened what it lists: %w", errors.Join(errs...))
}

// NamespacesChangeable says why a factory's namespaces cannot change at
// run time (SetNamespaces), or returns nil, from its namespace options:
// namespaces (WithNamespaces), namespace and namespaceSet (WithNamespace,
// given or not), and clientGo, set for a factory of a client-go compatible
// constructor.
func (e *Errors) NamespacesChangeable(namespaces []string, namespace string, namespaceSet, clientGo bool) error {
	refusal := e.Refusal(schema.GroupVersionResource{}, true)
	switch {
	case len(namespaces) > 0 && namespaceSet:
		return fmt.Errorf("the factory's namespace options are invalid (WithNamespace and WithNamespaces both given)")
	case len(namespaces) > 0:
		return nil
	case refusal != nil:
		// An invalid WithNamespaces, say: the namespaced informers do
		// not run, and a new set must not make them.
		return fmt.Errorf("an invalid option keeps the factory's informers from running: %w", refusal)
	case !namespaceSet || namespace == "":
		return errors.New("the factory watches all namespaces (built with neither WithNamespaces nor WithNamespace); build it with WithNamespaces to change them at run time")
	case clientGo:
		return fmt.Errorf("the factory was built by a client-go compatible constructor with WithNamespace(%q), whose informers are client-go's single-namespace ones; build it with New or NewForConfig, or with WithNamespaces", namespace)
	}
	return nil
}

// New is the verdict of the root's New: the errors of its arguments (a
// nil client, unless withoutClientset, or one besides it; a negative
// default resync period), then the options', as one error; nil if there
// are none.
func (e *Errors) New(noClient, withoutClientset bool, defaultResync time.Duration) error {
	var errs []error
	switch {
	case noClient && !withoutClientset:
		errs = append(errs, errors.New("the kubernetes.Interface is nil"))
	case !noClient && withoutClientset:
		errs = append(errs, errors.New("WithoutClientset: a kubernetes.Interface was given as well"))
	}
	if defaultResync < 0 {
		errs = append(errs, fmt.Errorf("the default resync period %v is negative", defaultResync))
	}
	if err := errors.Join(append(errs, e.All()...)...); err != nil {
		return fmt.Errorf("informers: %w", err)
	}
	return nil
}

// CustomResync returns the resync periods of WithCustomResyncConfig by Go
// type, without the entries that name no type (a nil key) or have a
// negative period, each of which it reports to invalid.
func CustomResync(config map[metav1.Object]time.Duration, invalid func(error)) map[reflect.Type]time.Duration {
	out := make(map[reflect.Type]time.Duration, len(config))
	for obj, period := range config {
		t := reflect.TypeOf(obj)
		switch {
		case t == nil:
			invalid(fmt.Errorf("WithCustomResyncConfig: a nil key names no type (resync period %v)", period))
		case period < 0:
			invalid(fmt.Errorf("WithCustomResyncConfig: the resync period %v for %v is negative", period, t))
		default:
			out[t] = period
		}
	}
	return out
}

// Unserved names, sorted, the resources of WithResourceOptions that
// nothing serves (served says which are served), for Notices: New cannot
// tell, as a binding comes after it.
func Unserved(resources iter.Seq[schema.GroupVersionResource], served func(schema.GroupVersionResource) bool) []string {
	var out []string
	byName := func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) }
	for _, resource := range slices.SortedFunc(resources, byName) {
		if !served(resource) {
			out = append(out, fmt.Sprintf("WithResourceOptions(%v): no informer serves it: the resource is not built in, not bound (a generated New, gensupport.Bind) and the factory has no dynamic or metadata client (NewForConfig, WithDynamicClient)", resource))
		}
	}
	return out
}

// Resource is what the options of one resource (the root's
// ResourceOptions) are checked with: the values that can be checked
// alone, what the root knows of the resource, and what the checks that
// need the root's tables found.
type Resource struct {
	Resource schema.GroupVersionResource
	// BuiltIn says whether the resource is built in, and Namespaced then
	// its scope; Hint names the built-in resources close to one that is
	// not (binding.Suggest), "" if none is.
	BuiltIn, Namespaced bool
	Hint                string

	Namespaces                   []string
	LabelSelector, FieldSelector string
	ShardSelector                apisharding.Selector
	Protobuf                     bool
	ResyncPeriod                 time.Duration
	Indexers                     cache.Indexers
	// KeepFields and ListMode are what the projection and the list modes
	// found wrong with the values of those fields, or nil.
	KeepFields, ListMode error
	// MemoryBudget is in bytes; 0 means none.
	MemoryBudget int64
}

// Check says what is wrong with the options of r, as far as can be told
// without the rest of the factory's options.
func (r Resource) Check() []error {
	var errs []error
	if r.MemoryBudget < 0 {
		errs = append(errs, fmt.Errorf("MemoryBudget %d: a budget must be positive (0 for none)", r.MemoryBudget))
	}
	if r.BuiltIn {
		if len(r.Namespaces) > 0 && !r.Namespaced {
			errs = append(errs, namespacesOnClusterScoped(r.Namespaces))
		}
	} else if err := binding.ValidateResource(r.Resource); err != nil {
		errs = append(errs, err)
	} else if r.Hint != "" {
		errs = append(errs, fmt.Errorf("not a known resource%s", r.Hint))
	}
	if r.Namespaces != nil {
		if err := multinamespace.Check(r.Namespaces); err != nil {
			errs = append(errs, fmt.Errorf("namespaces: %w", err))
		}
	}
	if _, err := labels.Parse(r.LabelSelector); err != nil {
		errs = append(errs, fmt.Errorf("LabelSelector %q: %w", r.LabelSelector, err))
	}
	if _, err := fields.ParseSelector(r.FieldSelector); err != nil {
		errs = append(errs, fmt.Errorf("FieldSelector %q: %w", r.FieldSelector, err))
	}
	if r.BuiltIn && !r.Namespaced {
		if err := shardedByNamespace(r.ShardSelector); err != nil {
			errs = append(errs, err)
		}
	}
	if r.Protobuf && !r.BuiltIn {
		errs = append(errs, errors.New("field Protobuf: only built-in resources are served in protobuf to typed informers; dynamic, metadata and custom resources stay on JSON"))
	}
	if r.KeepFields != nil {
		errs = append(errs, r.KeepFields)
	}
	if r.ListMode != nil {
		errs = append(errs, fmt.Errorf("ListMode: %w", r.ListMode))
	}
	if r.ResyncPeriod < 0 {
		errs = append(errs, fmt.Errorf("ResyncPeriod %v is negative", r.ResyncPeriod))
	}
	if _, ok := r.Indexers[cache.NamespaceIndex]; ok {
		errs = append(errs, fmt.Errorf("indexers: %q is the namespace index every informer already has", cache.NamespaceIndex))
	}
	for name, fn := range r.Indexers {
		if fn == nil {
			errs = append(errs, fmt.Errorf("indexers: the index function %q is nil", name))
		}
	}
	return errs
}

// ClusterScoped says what is wrong with the options given for a
// cluster-scoped resource that only its scope tells: the check of a bound
// resource, whose scope is known once it is bound, as Resource.Check is
// for a built-in one.
func ClusterScoped(namespaces []string, shardSelector apisharding.Selector) error {
	var errs []error
	if len(namespaces) > 0 {
		errs = append(errs, fmt.Errorf("WithResourceOptions: %w", namespacesOnClusterScoped(namespaces)))
	}
	if err := shardedByNamespace(shardSelector); err != nil {
		errs = append(errs, fmt.Errorf("WithResourceOptions: %w", err))
	}
	return errors.Join(errs...)
}

func namespacesOnClusterScoped(namespaces []string) error {
	return fmt.Errorf("namespaces %q set on a cluster-scoped resource", namespaces)
}

// shardedByNamespace is the error of a shard selector on the namespace
// hash, for a cluster-scoped resource; nil for any other selector.
func shardedByNamespace(sel apisharding.Selector) error {
	if sel == nil {
		return nil
	}
	for _, r := range sel.Requirements() {
		if r.Key == string(sharding.FieldNamespace) {
			return fmt.Errorf("shard %s: a cluster-scoped resource cannot be sharded by namespace", sel)
		}
	}
	return nil
}

// FieldName names field in an option's errors as a caller writes it.
func FieldName(field sharding.Field) string {
	switch field {
	case sharding.FieldUID:
		return "sharding.FieldUID"
	case sharding.FieldNamespace:
		return "sharding.FieldNamespace"
	}
	return fmt.Sprintf("%q", field)
}
