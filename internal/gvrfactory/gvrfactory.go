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

// Package gvrfactory is what the dynamicinformer and metadatainformer
// packages share: client-go's factory contract keyed by resource
// (ForResource without an error, WaitForCacheSync by GroupVersionResource)
// on top of the module's one factory, which serves the informers.
package gvrfactory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/settle"
	"github.com/kubeinformers/informers/internal/untyped"
	"github.com/kubeinformers/informers/internalinterfaces"
)

// Form says which of the factory's forms a Factory serves.
type Form struct {
	// Form is the root factory's form (dynamic or metadata).
	Form informers.Form
	// Example is an object of the cached type.
	Example runtime.Object
	// Options are the root options that make the root factory serve this
	// form for every resource, given before the user's.
	Options []informers.SharedInformerOption
	// Get returns the root factory's informer of resource in this form.
	Get func(f informers.Factory, resource schema.GroupVersionResource) (informers.GenericInformer, error)
	// Lister builds the lister client-go's informer of this form has.
	Lister func(indexer cache.Indexer, resource schema.GroupVersionResource) cache.GenericLister
}

// Factory is client-go's dynamic or metadata factory on the root factory.
type Factory struct {
	form Form
	root informers.Factory

	mu sync.Mutex
	// handed keeps the GenericInformer handed out per resource, so that
	// ForResource returns the same value until the informer is removed.
	handed map[schema.GroupVersionResource]*GenericInformer
	// refused are the resources ForResource could not serve (an invalid
	// GroupVersionResource), with why; started once Start has run.
	refused map[schema.GroupVersionResource]*refusal
	// shutDown is set by Shutdown; Start ignores refused informers then.
	shutDown bool
}

type refusal struct {
	err      error
	informer *GenericInformer
	started  bool
}

// New builds the root factory without a typed client from the form's
// options, the base options (client, namespace, tweak) and the user's, in
// that order. It returns the factory and what was wrong with the options;
// the factory is usable either way (an invalid narrowing option keeps the
// informers it was meant for from running).
func New(form Form, defaultResync time.Duration, base, user []informers.SharedInformerOption) (*Factory, []error) {
	all := make([]any, 0, len(form.Options)+len(base)+len(user))
	for _, list := range [][]informers.SharedInformerOption{form.Options, base, user} {
		for _, o := range list {
			if o == nil {
				all = append(all, nil) // reported by the root, by position
				continue
			}
			all = append(all, o)
		}
	}
	root, errs := untyped.New(defaultResync, all)
	return &Factory{
		form:    form,
		root:    root.(informers.Factory),
		handed:  make(map[schema.GroupVersionResource]*GenericInformer),
		refused: make(map[schema.GroupVersionResource]*refusal),
	}, errs
}

// Apply applies a drop-in package's own options to f in order, as client-go
// applies them; a nil option is an error that names its position.
func Apply[F comparable, O ~func(F) F](f F, options []O) (F, []error) {
	var errs []error
	var zero F
	for i, opt := range options {
		if opt == nil {
			errs = append(errs, fmt.Errorf("option %d is nil", i))
			continue
		}
		if next := opt(f); next != zero {
			f = next
		}
	}
	return f, errs
}

// Filtered are the root options of the namespace and tweak that client-go's
// filtered constructors take.
func Filtered(namespace string, tweakListOptions func(*metav1.ListOptions)) []informers.SharedInformerOption {
	var opts []informers.SharedInformerOption
	if namespace != metav1.NamespaceAll {
		opts = append(opts, informers.WithNamespace(namespace))
	}
	if tweakListOptions != nil {
		opts = append(opts, informers.WithTweakListOptions(internalinterfaces.TweakListOptionsFunc(tweakListOptions)))
	}
	return opts
}

// CheckNew is the input check of a drop-in package's New: a nil client
// (named by clientType), a negative resync period and the option errors,
// joined into one error prefixed with the package's name; nil if none.
func CheckNew(pkg, clientType string, clientNil bool, defaultResync time.Duration, optionErrs []error) error {
	var errs []error
	if clientNil {
		errs = append(errs, fmt.Errorf("the %s is nil", clientType))
	}
	if defaultResync < 0 {
		errs = append(errs, fmt.Errorf("the default resync period %v is negative", defaultResync))
	}
	if err := errors.Join(append(errs, optionErrs...)...); err != nil {
		return fmt.Errorf("%s: %w", pkg, err)
	}
	return nil
}

// Log logs option errors as the root's client-go compatible constructors do.
func Log(errs []error) {
	for _, err := range errs {
		klog.Background().Error(err, "Invalid informer factory option")
	}
}

// ForResource returns the shared informer of resource. A resource the
// factory cannot serve (an invalid GroupVersionResource) gets an informer
// that never runs, which WaitForCacheSync reports as not synced and Ready
// names with the reason: client-go's would send requests that cannot
// succeed, for ever.
func (f *Factory) ForResource(resource schema.GroupVersionResource) *GenericInformer {
	gi, err := f.form.Get(f.root, resource)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		r := f.refused[resource]
		if r == nil {
			r = &refusal{err: err, informer: f.newGeneric(refusedInformer(f.form.Example, err), resource)}
			f.refused[resource] = r
		}
		return r.informer
	}
	if h := f.handed[resource]; h != nil && h.informer == gi.Informer() {
		return h
	}
	h := f.newGeneric(gi.Informer(), resource)
	f.handed[resource] = h
	return h
}

func (f *Factory) newGeneric(informer cache.SharedIndexInformer, resource schema.GroupVersionResource) *GenericInformer {
	return &GenericInformer{informer: informer, resource: resource, lister: f.form.Lister}
}

// Start runs every informer requested so far that is not running yet.
func (f *Factory) Start(stopCh <-chan struct{}) {
	f.StartWithContext(wait.ContextForChannel(stopCh))
}

// StartWithContext is Start until ctx is done.
func (f *Factory) StartWithContext(ctx context.Context) {
	f.mu.Lock()
	if !f.shutDown {
		for _, r := range f.refused {
			r.started = true // never run: counted, so that it is reported
		}
	}
	f.mu.Unlock()
	f.root.StartWithContext(ctx)
}

// Shutdown marks the factory as shut down and waits for its informers'
// goroutines to end.
func (f *Factory) Shutdown() {
	f.mu.Lock()
	f.shutDown = true
	f.mu.Unlock()
	f.root.Shutdown()
}

// WaitForCacheSync waits until every started informer has synced, or one
// cannot, or stopCh is closed, and reports each by resource.
func (f *Factory) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
	synced, _ := f.WaitSynced(wait.ContextForChannel(stopCh))
	return synced
}

// WaitSynced is WaitForCacheSync with a context; the error
// names each informer that has not synced and why, and wraps the context's
// cause when ctx ended first.
func (f *Factory) WaitSynced(ctx context.Context) (map[schema.GroupVersionResource]bool, error) {
	res := f.root.WaitForCacheSyncWithContext(ctx)
	synced := make(map[schema.GroupVersionResource]bool)
	for id, ok := range f.root.SyncStatus() {
		if id.Form == f.form.Form {
			synced[id.Resource] = ok
		}
	}
	errs := []error{res.Err}
	f.mu.Lock()
	for resource, r := range f.refused {
		if r.started {
			synced[resource] = false
			errs = append(errs, fmt.Errorf("%v: %w", resource, r.err))
		}
	}
	f.mu.Unlock()
	if res.Err == nil && len(errs) > 1 {
		if cause := context.Cause(ctx); cause != nil {
			errs[0] = cause
		}
	}
	return synced, errors.Join(errs...)
}

// RemoveInformer stops and drops the informer of resource; see
// [informers.Factory.RemoveInformer].
func (f *Factory) RemoveInformer(resource schema.GroupVersionResource) bool {
	f.mu.Lock()
	_, refused := f.refused[resource]
	delete(f.refused, resource)
	delete(f.handed, resource)
	f.mu.Unlock()
	return f.root.RemoveInformer(resource) || refused
}

// Ready is [informers.Factory.Ready], naming also the resources
// ForResource could not serve.
func (f *Factory) Ready() error {
	var problems []string
	if err := f.root.Ready(); err != nil {
		problems = append(problems, strings.TrimPrefix(err.Error(), "informers not ready: "))
	}
	f.mu.Lock()
	for _, resource := range slices.SortedFunc(maps.Keys(f.refused), compareResources) {
		if r := f.refused[resource]; r.started {
			problems = append(problems, fmt.Sprintf("%s: not started: %v", f.id(resource), r.err))
		}
	}
	f.mu.Unlock()
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("informers not ready: %s", strings.Join(problems, "; "))
}

// SyncStatus is [informers.Factory.SyncStatus], with the resources
// ForResource could not serve as not synced.
func (f *Factory) SyncStatus() map[informers.InformerID]bool {
	out := f.root.SyncStatus()
	f.mu.Lock()
	defer f.mu.Unlock()
	for resource, r := range f.refused {
		if r.started {
			out[f.id(resource)] = false
		}
	}
	return out
}

// Notices is [informers.Factory.Notices].
func (f *Factory) Notices() []string { return f.root.Notices() }

func (f *Factory) id(resource schema.GroupVersionResource) informers.InformerID {
	return informers.InformerID{Form: f.form.Form, Resource: resource, Type: reflect.TypeOf(f.form.Example)}
}

func compareResources(a, b schema.GroupVersionResource) int {
	return strings.Compare(a.String(), b.String())
}

// Standalone returns the informer of one resource, built by a factory of
// its own that is never started: the caller runs the informer.
func Standalone(form Form, resource schema.GroupVersionResource, resyncPeriod time.Duration, indexers cache.Indexers, base []informers.SharedInformerOption) *GenericInformer {
	f, errs := New(form, resyncPeriod, base, nil)
	Log(errs)
	gi := f.ForResource(resource)
	// Every factory informer has the namespace index; add the others.
	extra := maps.Clone(indexers)
	delete(extra, cache.NamespaceIndex)
	if len(extra) > 0 {
		if err := gi.informer.AddIndexers(extra); err != nil {
			// A new informer that has not run accepts any indexer whose
			// name it does not have yet; say so rather than drop it.
			klog.Background().Error(err, "Cannot add the indexers", "resource", resource)
		}
	}
	return gi
}

// GenericInformer is client-go's GenericInformer of the dynamic and
// metadata forms: the shared informer, and a lister of the form's objects.
type GenericInformer struct {
	informer cache.SharedIndexInformer
	resource schema.GroupVersionResource
	lister   func(cache.Indexer, schema.GroupVersionResource) cache.GenericLister
}

// Informer returns the shared informer.
func (g *GenericInformer) Informer() cache.SharedIndexInformer { return g.informer }

// Lister returns a lister over the informer's cache.
func (g *GenericInformer) Lister() cache.GenericLister {
	return g.lister(g.informer.GetIndexer(), g.resource)
}

// refusedInformer is an informer that is never started; if someone runs it
// anyway, every list fails with err (and the reflector backs off).
func refusedInformer(example runtime.Object, err error) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nil, err },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return nil, err
		},
	}
	return cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// SettleTargets is the root factory's (settle.Source, for
// informertest.Settle), with the resources ForResource could not serve as
// informers that never run.
func (f *Factory) SettleTargets() []settle.Target {
	var out []settle.Target
	if src, ok := f.root.(settle.Source); ok {
		out = src.SettleTargets()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, resource := range slices.SortedFunc(maps.Keys(f.refused), compareResources) {
		r := f.refused[resource]
		out = append(out, settle.Target{Name: f.id(resource).String(), Refused: r.err, Started: r.started})
	}
	return out
}
