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
// on top of the module's one factory, which serves the informers. It knows
// that factory only through the Root a drop-in package hands it, so that it
// stays below the root package; ID is the root's InformerID.
package gvrfactory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/settle"
)

// Root is the part of the module's factory (informers.Factory) that a
// Factory uses.
type Root[ID comparable] interface {
	StartWithContext(ctx context.Context)
	Shutdown()
	WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult
	RemoveInformer(resource schema.GroupVersionResource) bool
	Ready() error
	SyncStatus() map[ID]bool
	Notices() []string
	WaitForResourceVersion(ctx context.Context, resource schema.GroupVersionResource, namespace, resourceVersion string) error
}

// Informer is what the root factory hands out per resource
// (informers.GenericInformer).
type Informer interface {
	Informer() cache.SharedIndexInformer
}

// Form says which of the root factory's forms a Factory serves.
type Form[ID comparable] struct {
	// Example is an object of the cached type.
	Example runtime.Object
	// ID names the root's informer of resource in this form; Resource
	// says whether id is one of this form's, and its resource.
	ID       func(resource schema.GroupVersionResource) ID
	Resource func(id ID) (schema.GroupVersionResource, bool)
	// Lister builds the lister client-go's informer of this form has.
	Lister func(indexer cache.Indexer, resource schema.GroupVersionResource) cache.GenericLister
}

// Factory is client-go's dynamic or metadata factory on the root factory.
type Factory[ID comparable] struct {
	form Form[ID]
	root Root[ID]
	// get returns the root factory's informer of resource in this form.
	get func(resource schema.GroupVersionResource) (Informer, error)

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

// New returns the Factory of form over root, whose informer of a resource
// get returns.
func New[ID comparable](form Form[ID], root Root[ID], get func(schema.GroupVersionResource) (Informer, error)) *Factory[ID] {
	return &Factory[ID]{
		form:    form,
		root:    root,
		get:     get,
		handed:  make(map[schema.GroupVersionResource]*GenericInformer),
		refused: make(map[schema.GroupVersionResource]*refusal),
	}
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

// Filtered are the options of the namespace and tweak that client-go's
// filtered constructors take, made by the root's option functions
// withNamespace and withTweak: none for all namespaces and no tweak.
func Filtered[O any](namespace string, tweakListOptions func(*metav1.ListOptions), withNamespace func(string) O, withTweak func(func(*metav1.ListOptions)) O) []O {
	var opts []O
	if namespace != metav1.NamespaceAll {
		opts = append(opts, withNamespace(namespace))
	}
	if tweakListOptions != nil {
		opts = append(opts, withTweak(tweakListOptions))
	}
	return opts
}

// Build builds the root factory of a drop-in package (pkg) whose own
// options had errs. Under check, as the package's New: strict builds it or
// says why not, and any error is one error prefixed with pkg. Otherwise,
// as client-go's constructors, which cannot fail: errs are logged, and
// lenient builds it, logging its own.
func Build[R any](pkg string, check bool, errs []error, strict func() (R, error), lenient func() R) (R, error) {
	if !check {
		Log(errs)
		return lenient(), nil
	}
	root, err := strict()
	if err != nil {
		// The root's "informers: " prefix gives way to pkg's.
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		var zero R
		return zero, fmt.Errorf("%s: %w", pkg, errors.Join(errs...))
	}
	return root, nil
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
func (f *Factory[ID]) ForResource(resource schema.GroupVersionResource) *GenericInformer {
	gi, err := f.get(resource)
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

func (f *Factory[ID]) newGeneric(informer cache.SharedIndexInformer, resource schema.GroupVersionResource) *GenericInformer {
	return &GenericInformer{informer: informer, resource: resource, lister: f.form.Lister}
}

// Start runs every informer requested so far that is not running yet.
func (f *Factory[ID]) Start(stopCh <-chan struct{}) {
	f.StartWithContext(wait.ContextForChannel(stopCh))
}

// StartWithContext is Start until ctx is done.
func (f *Factory[ID]) StartWithContext(ctx context.Context) {
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
func (f *Factory[ID]) Shutdown() {
	f.mu.Lock()
	f.shutDown = true
	f.mu.Unlock()
	f.root.Shutdown()
}

// WaitForCacheSync waits until every started informer has synced, or one
// cannot, or stopCh is closed, and reports each by resource.
func (f *Factory[ID]) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
	synced, _ := f.WaitSynced(wait.ContextForChannel(stopCh))
	return synced
}

// WaitSynced is WaitForCacheSync with a context; the error
// names each informer that has not synced and why, and wraps the context's
// cause when ctx ended first.
func (f *Factory[ID]) WaitSynced(ctx context.Context) (map[schema.GroupVersionResource]bool, error) {
	res := f.root.WaitForCacheSyncWithContext(ctx)
	synced := make(map[schema.GroupVersionResource]bool)
	for id, ok := range f.root.SyncStatus() {
		if resource, mine := f.form.Resource(id); mine {
			synced[resource] = ok
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
func (f *Factory[ID]) RemoveInformer(resource schema.GroupVersionResource) bool {
	f.mu.Lock()
	_, refused := f.refused[resource]
	delete(f.refused, resource)
	delete(f.handed, resource)
	f.mu.Unlock()
	return f.root.RemoveInformer(resource) || refused
}

// Ready is [informers.Factory.Ready], naming also the resources
// ForResource could not serve.
func (f *Factory[ID]) Ready() error {
	var problems []string
	if err := f.root.Ready(); err != nil {
		problems = append(problems, strings.TrimPrefix(err.Error(), "informers not ready: "))
	}
	f.mu.Lock()
	for _, resource := range slices.SortedFunc(maps.Keys(f.refused), compareResources) {
		if r := f.refused[resource]; r.started {
			problems = append(problems, fmt.Sprintf("%v: not started: %v", f.form.ID(resource), r.err))
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
func (f *Factory[ID]) SyncStatus() map[ID]bool {
	out := f.root.SyncStatus()
	f.mu.Lock()
	defer f.mu.Unlock()
	for resource, r := range f.refused {
		if r.started {
			out[f.form.ID(resource)] = false
		}
	}
	return out
}

// Notices is [informers.Factory.Notices].
func (f *Factory[ID]) Notices() []string { return f.root.Notices() }

// WaitForResourceVersion is the root's WaitForResourceVersion.
func (f *Factory[ID]) WaitForResourceVersion(ctx context.Context, resource schema.GroupVersionResource, namespace, resourceVersion string) error {
	return f.root.WaitForResourceVersion(ctx, resource, namespace, resourceVersion)
}

func compareResources(a, b schema.GroupVersionResource) int {
	return strings.Compare(a.String(), b.String())
}

// Standalone returns the informer of one resource of f, a factory of its
// own that is never started: the caller runs the informer. Besides
// indexers it has the namespace index, as every factory informer.
func (f *Factory[ID]) Standalone(resource schema.GroupVersionResource, indexers cache.Indexers) *GenericInformer {
	gi := f.ForResource(resource)
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
func (f *Factory[ID]) SettleTargets() []settle.Target {
	var out []settle.Target
	if src, ok := any(f.root).(settle.Source); ok {
		out = src.SettleTargets()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, resource := range slices.SortedFunc(maps.Keys(f.refused), compareResources) {
		r := f.refused[resource]
		out = append(out, settle.Target{Name: fmt.Sprint(f.form.ID(resource)), Refused: r.err, Started: r.started})
	}
	return out
}
