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

package informers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/accessor"
	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internalinterfaces"
	"github.com/kubeinformers/informers/sharding"
)

// This file binds typed resources of API groups this module does not ship
// (a user's own custom resources, with a clientset from client-gen) to a
// Factory, so that their typed informers share its registry, options and
// life cycle with the built-in ones. kubeinformers-gen generates the calls:
// a group's informer packages declare a TypedResource per kind, and the
// generated factory package's New(factory, client) calls Bind. Bound
// informers are built as ResolveTyped builds the built-in ones (build.go),
// through the same list and watch layer (internal/listwatch).

// TypedObject is what the Go type of a typed resource is: a pointer to an
// API struct, such as *examplev1.Gadget, that is a [runtime.Object] with
// object metadata.
type TypedObject interface {
	cache.Object
	runtime.Object
}

// Requests are the list and watch calls of one resource in one namespace
// (or cluster-wide), as a typed client such as
// client.ExampleV1().Gadgets(namespace) makes them. Build them with
// [RequestsOf].
type Requests struct {
	List  func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// ResourceClient is the part of a typed resource client (client-gen's
// GadgetInterface, say) that an informer needs. L is its list type.
type ResourceClient[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// RequestsOf reduces a typed resource client to its [Requests].
func RequestsOf[L runtime.Object](client ResourceClient[L]) Requests {
	return Requests(listwatch.Of[L](client))
}

// TypedResource describes one typed resource of a generated group: its
// GroupVersionResource, its scope, its Go type T and how a clientset of
// type C lists and watches it. Generated code declares one per kind with
// [NewTypedResource] and passes them to [Bind]; it also builds the kind's
// standalone informers with [TypedResource.NewInformer].
type TypedResource[T TypedObject, C any] struct {
	resource   schema.GroupVersionResource
	namespaced bool
	example    T
	requests   func(client C, namespace string) Requests
}

// NewTypedResource describes a typed resource: resource is what the API
// server serves it as (group, version and the plural, lower-case
// resource), namespaced its scope, example an empty object of its Go type
// (&examplev1.Gadget{}), and requests returns its list and watch calls
// through a clientset for a namespace ("" for all namespaces, and always
// "" for a cluster-scoped resource), such as
//
//	func(c versioned.Interface, namespace string) informers.Requests {
//		return informers.RequestsOf(c.ExampleV1().Gadgets(namespace))
//	}
//
// It only records them; [Bind] checks them.
func NewTypedResource[T TypedObject, C any](resource schema.GroupVersionResource, namespaced bool, example T, requests func(client C, namespace string) Requests) *TypedResource[T, C] {
	return &TypedResource[T, C]{resource: resource, namespaced: namespaced, example: example, requests: requests}
}

// Resource returns the resource the API server serves the type as.
func (r *TypedResource[T, C]) Resource() schema.GroupVersionResource { return r.resource }

// Namespaced reports whether the resource's objects live in a namespace.
func (r *TypedResource[T, C]) Namespaced() bool { return r.namespaced }

// NewInformer builds an informer of the resource that no factory shares,
// the way the generated New…InformerWithOptions functions do: it lists and
// watches through client in namespace ([metav1.NamespaceAll] for all;
// ignored for a cluster-scoped resource), with options' resync period,
// indexers, informer name (metrics identity, may be nil) and tweak of
// every request (may be nil). A nil client does not panic in the
// informer's goroutine: its list and watch return an error naming the
// resource.
func (r *TypedResource[T, C]) NewInformer(client C, namespace string, options internalinterfaces.InformerOptions) cache.TypedSharedIndexInformer[T] {
	if !r.namespaced {
		namespace = metav1.NamespaceAll
	}
	cfg := listwatch.Config{Resource: r.resource, Namespace: namespace, Missing: missingClient[C]()}
	if !isNil(client) && r.requests != nil {
		cfg.Requests = func(ns string) listwatch.Requests { return listwatch.Requests(r.requests(client, ns)) }
	}
	cfg.Tweak = options.TweakListOptions
	informer := cache.NewSharedIndexInformerWithOptions(
		cache.ToListWatcherWithWatchListSemantics(listwatch.New(cfg), client),
		r.example,
		cache.SharedIndexInformerOptions{
			ResyncPeriod:      options.ResyncPeriod,
			Indexers:          options.Indexers,
			Identifier:        options.InformerName.WithResource(r.resource),
			ObjectDescription: r.resource.String(),
		},
	)
	return cache.NewTypedSharedIndexInformer[T](informer)
}

// BindableResource is a resource that [Bind] takes with a clientset of
// type C: a [*TypedResource] with that client type.
type BindableResource[C any] interface {
	// bindWith returns the resource as the factory holds it, its informer
	// served through client.
	bindWith(client C) (*boundResource, error)
}

func (r *TypedResource[T, C]) bindWith(client C) (*boundResource, error) {
	t := reflect.TypeOf(r.example)
	var problems []error
	if err := validateResource(r.resource); err != nil {
		problems = append(problems, err)
	} else if isBuiltIn(r.resource) {
		problems = append(problems, errors.New("it is a built-in resource, which the factory serves already"))
	}
	if t == nil || t.Kind() != reflect.Pointer || reflect.ValueOf(r.example).IsNil() {
		problems = append(problems, fmt.Errorf("the example object is %#v; it must be an empty object of the type, such as &examplev1.Gadget{}", r.example))
	}
	if r.requests == nil {
		problems = append(problems, errors.New("the requests function is nil"))
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	b := &boundResource{
		resource:   r.resource,
		namespaced: r.namespaced,
		typ:        t,
		example:    r.example,
		client:     client,
		missing:    missingClient[C](),
		typed:      func(i cache.SharedIndexInformer) cache.SharedIndexInformer { return accessor.Typed[T](i) },
	}
	if !isNil(client) {
		b.requests = func(ns string) listwatch.Requests { return listwatch.Requests(r.requests(client, ns)) }
	}
	return b, nil
}

// boundResource is a typed resource as its factory holds it once bound.
type boundResource struct {
	resource   schema.GroupVersionResource
	namespaced bool
	typ        reflect.Type
	example    runtime.Object
	// client is the clientset the requests go through: a fake one makes
	// the informer list and watch rather than stream (see build).
	client any
	// requests is nil without a client; missing then names it.
	requests func(namespace string) listwatch.Requests
	missing  string
	// typed wraps a new informer in its type-safe form, which the factory
	// shares, as for the built-in kinds.
	typed func(cache.SharedIndexInformer) cache.SharedIndexInformer
	// refused, if set, is why the informer must not run: what Bind found
	// wrong that only the resource's scope or client could tell.
	refused error
}

// bindings are the factory's bound resources, by resource and by Go type;
// guarded by the factory's lock.
type bindings struct {
	byResource map[schema.GroupVersionResource]*boundResource
	byType     map[reflect.Type]*boundResource
}

// Binding is a set of typed resources bound to a [Factory] by [Bind]. The
// factory package kubeinformers-gen generates wraps one in its
// SharedInformerFactory view, and the generated kind accessors reach their
// informers through it ([Binder], [Kind]).
type Binding struct {
	f         *sharedInformerFactory
	resources map[schema.GroupVersionResource]*boundResource
}

// Binder is implemented by the generated factory views: it hands the
// generated accessors ([Kind.Init]) the Binding their informers come from.
type Binder interface {
	Binding() *Binding
}

// Bind binds typed resources, served through client, to factory: from
// then on their informers are typed informers of that factory, built and
// run like the built-in ones. Each of them
//
//   - is requested through a [Kind] accessor, [Binding.InformerFor], the
//     factory's InformerFor with an object of its type, or ForResource,
//     which returns the typed informer instead of a dynamic one;
//   - takes the factory's options: [WithResourceOptions] given for its
//     resource (with or without a dynamic client), [WithNamespace] and
//     [WithNamespaces] if it is namespaced, [WithTweakListOptions],
//     [WithTransform], [WithLeanMemory], [WithCustomResyncConfig], the
//     shard options and the membership;
//   - starts with the factory's Start, is waited for by WaitForCacheSync,
//     stops with Shutdown or [Factory.RemoveInformer], and is named by
//     resource in [Factory.Ready], [Factory.SyncStatus] and sync errors.
//
// Bind checks what needs the resources' scope and client: a nil client,
// namespaces or a namespace shard in WithResourceOptions for a
// cluster-scoped resource. It returns these as one error naming each
// resource, and the resources they concern are bound refused (fail
// closed): their informers never run, make no request, and Ready names
// them with the error. Resources that cannot be bound at all (an invalid
// or built-in resource, no example object, the resource bound before to
// another Go type or scope) are left out, also with an error. The Binding
// is returned whenever factory is one of this package's, so that
// constructors that cannot return an error, as the generated
// NewSharedInformerFactory, log it and go on.
//
// A resource is bound once per factory: binding it again, to the same Go
// type and scope (calling a generated New twice, say), shares the first
// binding's informer and client.
//
// factory must come from this package ([New], [NewForConfig],
// [NewSharedInformerFactoryWithOptions], …).
func Bind[C any](factory Factory, client C, resources ...BindableResource[C]) (*Binding, error) {
	f, ok := factory.(*sharedInformerFactory)
	if !ok || f == nil {
		return nil, fmt.Errorf("informers: Bind: the factory %T is not one of this package's (use informers.New or NewForConfig)", factory)
	}
	var clientErr error
	if isNil(client) {
		clientErr = fmt.Errorf("not started: %s", missingClient[C]())
	}
	b := &Binding{f: f, resources: make(map[schema.GroupVersionResource]*boundResource, len(resources))}

	f.lock.Lock()
	defer f.lock.Unlock()
	if f.bindings.byResource == nil {
		f.bindings.byResource = make(map[schema.GroupVersionResource]*boundResource)
		f.bindings.byType = make(map[reflect.Type]*boundResource)
	}
	var errs []error
	for i, res := range resources {
		if res == nil {
			errs = append(errs, fmt.Errorf("resource %d is nil", i))
			continue
		}
		r, err := res.bindWith(client)
		if err != nil {
			errs = append(errs, fmt.Errorf("%v: %w", resourceName(res), err))
			continue
		}
		if prev := f.bindings.byResource[r.resource]; prev != nil {
			if prev.typ != r.typ || prev.namespaced != r.namespaced {
				errs = append(errs, fmt.Errorf("%v: already bound to %v (%s); cannot bind it to %v (%s)", r.resource, prev.typ, scope(prev.namespaced), r.typ, scope(r.namespaced)))
				continue
			}
			b.resources[r.resource] = prev
			continue
		}
		if prev := f.bindings.byType[r.typ]; prev != nil {
			errs = append(errs, fmt.Errorf("%v: its type %v is already bound to %v", r.resource, r.typ, prev.resource))
			continue
		}
		if e := f.byType[r.typ]; e != nil {
			errs = append(errs, fmt.Errorf("%v: an informer of %v was built by InformerFor before the binding; bind before requesting informers", r.resource, r.typ))
			continue
		}
		var refusals []error
		if clientErr != nil {
			refusals = append(refusals, clientErr)
		}
		if err := f.checkScope(r); err != nil {
			refusals = append(refusals, fmt.Errorf("not started: %w", err))
		}
		if len(refusals) > 0 {
			r.refused = errors.Join(refusals...)
			errs = append(errs, fmt.Errorf("%v: %w", r.resource, r.refused))
		}
		f.bindings.byResource[r.resource] = r
		f.bindings.byType[r.typ] = r
		b.resources[r.resource] = r
	}
	if err := errors.Join(errs...); err != nil {
		return b, fmt.Errorf("informers: Bind: %w", err)
	}
	return b, nil
}

// checkScope says what is wrong with the options of a bound resource that
// only its scope tells, as checkResourceOptions does for built-in ones.
func (f *sharedInformerFactory) checkScope(r *boundResource) error {
	if r.namespaced {
		return nil
	}
	ro, ok := f.resourceOptions[r.resource]
	if !ok {
		return nil
	}
	var errs []error
	if len(ro.Namespaces) > 0 {
		errs = append(errs, fmt.Errorf("WithResourceOptions: namespaces %q set on a cluster-scoped resource", ro.Namespaces))
	}
	if sel := ro.ShardSelector; sel != nil {
		for _, req := range sel.Requirements() {
			if req.Key == string(sharding.FieldNamespace) {
				errs = append(errs, fmt.Errorf("WithResourceOptions: shard %s: a cluster-scoped resource cannot be sharded by namespace", sel))
				break
			}
		}
	}
	return errors.Join(errs...)
}

// boundType returns the binding of a Go type, or nil.
func (f *sharedInformerFactory) boundType(t reflect.Type) *boundResource {
	f.lock.Lock()
	defer f.lock.Unlock()
	return f.bindings.byType[t]
}

// boundInformer returns the typed informer of resource if it is bound,
// else nil; ForResource serves it.
func (f *sharedInformerFactory) boundInformer(resource schema.GroupVersionResource) cache.SharedIndexInformer {
	f.lock.Lock()
	r := f.bindings.byResource[resource]
	f.lock.Unlock()
	if r == nil {
		return nil
	}
	return f.informerFor(r.request()).informer
}

// Factory returns the factory the resources are bound to.
func (b *Binding) Factory() Factory { return b.f }

// Resources returns the resources bound by this Binding, sorted.
func (b *Binding) Resources() []schema.GroupVersionResource {
	return slices.SortedFunc(maps.Keys(b.resources), compareResources)
}

// InformerFor is the factory's InformerFor for the generated view, whose
// InformerFor takes the user's clientset: it returns the shared informer
// of obj's type. For a bound type that is the bound typed informer, and
// newFunc is not called; for any other type, the first call builds it
// with newFunc and the type's resync period, as the factory's InformerFor
// does.
func (b *Binding) InformerFor(obj runtime.Object, newFunc func(resyncPeriod time.Duration) cache.SharedIndexInformer) cache.SharedIndexInformer {
	return b.f.InformerFor(obj, func(_ kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return newFunc(resync)
	})
}

// Kind is the accessor of one kind that generated code embeds: it resolves
// the shared informer once, through the factory's registry, and then
// serves it, its type-safe form and its lister without allocating, as the
// built-in accessors do. After [Factory.RemoveInformer] the next call
// resolves a fresh informer. The zero value is ready for [Kind.Init].
type Kind[T TypedObject, L any] struct {
	k accessor.Kind[T, L]
}

// Init sets up the accessor. factory is the one its group was built with:
// if it is a [Binder] whose Binding holds resource, the accessor serves
// the bound informer; otherwise (a factory of another implementation) it
// calls fallback once per informer, typically
// factory.InformerFor(&examplev1.Gadget{}, f.defaultInformer) as
// informer-gen's accessors do. example is an empty object of the type and
// newLister the kind's lister constructor (client-gen's NewGadgetLister).
func (k *Kind[T, L]) Init(factory any, resource schema.GroupVersionResource, example T, fallback func() cache.SharedIndexInformer, newLister func(cache.Indexer) L) {
	var via internalinterfaces.SharedInformerFactory = &fallbackFactory{informer: fallback}
	if binder, ok := factory.(Binder); ok {
		if b := binder.Binding(); b != nil {
			if r := b.resources[resource]; r != nil {
				via = &boundFactory{f: b.f, r: r}
			}
		}
	}
	k.k.Init(via, resource, metav1.NamespaceAll, nil, example, nil, newLister)
}

// Informer returns the shared informer.
func (k *Kind[T, L]) Informer() cache.SharedIndexInformer { return k.k.Informer() }

// Typed returns the shared informer with type-safe methods; it is the
// same value as Informer for a bound resource.
func (k *Kind[T, L]) Typed() cache.TypedSharedIndexInformer[T] { return k.k.Typed() }

// Lister returns the lister over the shared informer's indexer.
func (k *Kind[T, L]) Lister() L { return k.k.Lister() }

// boundFactory is what a Kind of a bound resource resolves through: the
// factory, asked for that resource. accessor.Kind calls ResolveTyped only;
// the other methods complete the interface it takes, and act on the
// factory.
type boundFactory struct {
	f *sharedInformerFactory
	r *boundResource
}

var (
	_ accessor.Resolver                        = &boundFactory{}
	_ internalinterfaces.SharedInformerFactory = &boundFactory{}
	_ internalinterfaces.SharedInformerFactory = &fallbackFactory{}
)

func (b *boundFactory) ResolveTyped(*accessor.Request) (cache.SharedIndexInformer, *atomic.Bool) {
	e := b.f.informerFor(b.r.request())
	return e.informer, &e.removed
}

func (b *boundFactory) Start(stopCh <-chan struct{}) { b.f.Start(stopCh) }
func (b *boundFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	return b.f.InformerFor(obj, newFunc)
}
func (b *boundFactory) InformerName() *cache.InformerName { return b.f.informerName }

// fallbackFactory is what a Kind resolves through when its factory is not
// a Binder: the generated accessor's own InformerFor call. accessor.Kind
// calls InformerFor only; Start has nothing of its own to run (the
// generated accessor's factory runs what fallback returns).
type fallbackFactory struct {
	informer func() cache.SharedIndexInformer
}

func (f *fallbackFactory) Start(<-chan struct{}) {}
func (f *fallbackFactory) InformerFor(runtime.Object, internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	return f.informer()
}
func (f *fallbackFactory) InformerName() *cache.InformerName { return nil }

// Lazy holds a value built on first use and shared afterwards, so that
// generated group and version accessors (factory.Example().V1()) cost two
// atomic loads once built instead of allocations on every call. The zero
// value is ready to use.
type Lazy[V any] struct {
	l accessor.Lazy[V]
}

// Get returns the value, building it with build on the first call.
func (l *Lazy[V]) Get(build func() V) V { return l.l.Get(build) }

// isNil reports whether v is nil or a nil pointer, map, slice, channel or
// function in an interface.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// missingClient names a nil clientset of type C, for errors.
func missingClient[C any]() string {
	return fmt.Sprintf("the clientset (%v) is nil", reflect.TypeFor[C]())
}

// resourceName names a resource Bind could not take, for its error.
func resourceName(res any) string {
	if r, ok := res.(interface {
		Resource() schema.GroupVersionResource
	}); ok {
		return r.Resource().String()
	}
	return fmt.Sprintf("%T", res)
}

func scope(namespaced bool) string {
	if namespaced {
		return "namespaced"
	}
	return "cluster-scoped"
}

// unservedOptions names the resources given [WithResourceOptions] that
// nothing can serve: not built in, not bound, and no dynamic or metadata
// client. New cannot tell, as a binding comes after it; Notices reports
// them. The caller holds f.lock.
func (f *sharedInformerFactory) unservedOptions() []string {
	if f.dynamicClient != nil || f.metadataClient != nil {
		return nil
	}
	var out []string
	for _, resource := range slices.SortedFunc(maps.Keys(f.resourceOptions), compareResources) {
		if !isBuiltIn(resource) && f.bindings.byResource[resource] == nil {
			out = append(out, fmt.Sprintf("WithResourceOptions(%v): no informer serves it: the resource is not built in, not bound (Bind, a generated New) and the factory has no dynamic or metadata client (NewForConfig, WithDynamicClient)", resource))
		}
	}
	return out
}
