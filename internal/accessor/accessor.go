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

// Package accessor holds the logic that every generated informer shares, so
// that the generated per-kind files only bind types to it.
//
// It is internal: the public surface of each kind (NewXInformer, XInformer,
// TypedXInformer, …) is generated with upstream's exact signatures.
package accessor

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/shard"
	"github.com/kubeinformers/informers/internalinterfaces"
)

// Object is what an API type's pointer is: a cache.Object that is also a
// runtime.Object, as every generated kind is.
type Object interface {
	cache.Object
	runtime.Object
}

// RequestsFunc returns the list and watch calls of one kind for a clientset
// and a namespace (ignored for cluster-scoped kinds). Generated code binds
// it to the kind's typed client, such as client.CoreV1().Pods(namespace).
type RequestsFunc func(client kubernetes.Interface, namespace string) listwatch.Requests

// NewInformer builds a typed shared index informer for one resource, the way
// every generated NewTypedXInformerWithOptions does.
//
// A nil client does not panic in the reflector's goroutine: list and watch
// return an error that names the resource.
func NewInformer[T Object](client kubernetes.Interface, gvr schema.GroupVersionResource, namespace string, options internalinterfaces.InformerOptions, example T, requests RequestsFunc) cache.TypedSharedIndexInformer[T] {
	cfg := TypedListWatch(client, gvr, namespace, requests)
	cfg.Tweak = options.TweakListOptions
	informer := cache.NewSharedIndexInformerWithOptions(
		cache.ToListWatcherWithWatchListSemantics(listwatch.New(cfg), client),
		example,
		cache.SharedIndexInformerOptions{
			ResyncPeriod: options.ResyncPeriod,
			Indexers:     options.Indexers,
			// The identity names the real REST resource (see the generated
			// GVRs), so metrics line up with what the API server serves.
			Identifier: options.InformerName.WithResource(gvr),
		},
	)
	return cache.NewTypedSharedIndexInformer[T](informer)
}

// TypedListWatch returns the list/watch configuration of a typed resource
// served by client, without a tweak.
func TypedListWatch(client kubernetes.Interface, gvr schema.GroupVersionResource, namespace string, requests RequestsFunc) listwatch.Config {
	cfg := listwatch.Config{Options: listwatch.Options{Resource: gvr, Missing: "the kubernetes.Interface is nil"}, Namespace: namespace}
	if client != nil {
		cfg.Requests = func(ns string) listwatch.Requests { return requests(client, ns) }
	}
	return cfg
}

// Typed converts an informer to its typed form without wrapping it twice:
// informers built by NewInformer already are typed. An informer with
// SetShardSelector (every factory informer) keeps it: client-go's typed
// wrapper only forwards the methods of its SharedIndexInformer, which has
// SetShardSelector from client-go v0.38 on only.
func Typed[T cache.Object](informer cache.SharedIndexInformer) cache.TypedSharedIndexInformer[T] {
	if typed, ok := informer.(cache.TypedSharedIndexInformer[T]); ok {
		return typed
	}
	typed := cache.NewTypedSharedIndexInformer[T](informer)
	if setter, ok := informer.(shard.Setter); ok {
		return &typedShardable[T]{TypedSharedIndexInformer: typed, setter: setter}
	}
	return typed
}

// typedShardable is a typed informer that keeps its untyped informer's
// SetShardSelector.
type typedShardable[T cache.Object] struct {
	cache.TypedSharedIndexInformer[T]
	setter shard.Setter
}

// SetShardSelector is the untyped informer's; see
// cache.SharedInformer.SetShardSelector (client-go v0.38).
func (t *typedShardable[T]) SetShardSelector(selector apisharding.Selector) error {
	return t.setter.SetShardSelector(selector)
}

// Request is what a kind accessor asks its factory for: the shared informer
// of one typed resource, with everything needed to build it.
type Request struct {
	Example   runtime.Object
	Resource  schema.GroupVersionResource
	Namespace string
	Tweak     internalinterfaces.TweakListOptionsFunc
	Requests  RequestsFunc
	// NewInformer builds the informer the way client-go's factory would;
	// it is what a factory that is not a Resolver gets through InformerFor.
	NewInformer internalinterfaces.NewInformerFunc
	// Typed wraps a new informer in its type-safe form, which the factory
	// then shares, so that Informer() and TypedInformer() are one value
	// as they are for the standalone constructors.
	Typed func(cache.SharedIndexInformer) cache.SharedIndexInformer
}

// Resolver is implemented by this module's factory. Unlike InformerFor it
// learns the resource, so it can apply per-resource options, and it hands
// back a flag that is set once the informer has been removed, so that the
// accessor knows to ask again.
type Resolver interface {
	ResolveTyped(req *Request) (informer cache.SharedIndexInformer, removed *atomic.Bool)
}

// Kind is the per-kind accessor that a version's Pods(), Nodes(), …
// return. Generated code embeds it and adds TypedInformer with the kind's
// own return type.
//
// Upstream rebuilds the typed wrapper and the lister on every Informer() and
// Lister() call. Kind resolves them once through the factory and then
// serves them from an atomic pointer, so a controller calling Lister() in
// its sync loop does not allocate. The factory may remove an informer
// (Factory.RemoveInformer); the removed flag it hands back makes the next
// call resolve a fresh one.
type Kind[T Object, L any] struct {
	factory   internalinterfaces.SharedInformerFactory
	req       Request
	newLister func(cache.Indexer) L

	resolved atomic.Pointer[resolved[T, L]]
}

type resolved[T Object, L any] struct {
	informer cache.SharedIndexInformer // as the factory shares it
	typed    cache.TypedSharedIndexInformer[T]
	lister   L
	removed  *atomic.Bool // nil: never removed
}

// Init sets up the accessor for factory: the kind's resource, the namespace
// and tweak its group was built with, an example object, the kind's typed
// calls and its lister constructor.
func (k *Kind[T, L]) Init(factory internalinterfaces.SharedInformerFactory, gvr schema.GroupVersionResource, namespace string,
	tweak internalinterfaces.TweakListOptionsFunc, example T, requests RequestsFunc, newLister func(cache.Indexer) L) {
	k.factory, k.newLister = factory, newLister
	k.req = Request{Example: example, Resource: gvr, Namespace: namespace, Tweak: tweak, Requests: requests}
	k.req.NewInformer = k.defaultInformer
	k.req.Typed = func(i cache.SharedIndexInformer) cache.SharedIndexInformer {
		return Typed[T](i)
	}
}

// Informer returns the factory's shared informer for the kind.
func (k *Kind[T, L]) Informer() cache.SharedIndexInformer { return k.get().informer }

// Typed returns the factory's shared informer for the kind, with type-safe
// methods.
func (k *Kind[T, L]) Typed() cache.TypedSharedIndexInformer[T] { return k.get().typed }

// Lister returns a lister over the shared informer's indexer.
func (k *Kind[T, L]) Lister() L { return k.get().lister }

func (k *Kind[T, L]) get() *resolved[T, L] {
	r := k.resolved.Load()
	if r != nil && (r.removed == nil || !r.removed.Load()) {
		return r
	}
	return k.resolve(r)
}

func (k *Kind[T, L]) resolve(old *resolved[T, L]) *resolved[T, L] {
	var informer cache.SharedIndexInformer
	var removed *atomic.Bool
	if res, ok := k.factory.(Resolver); ok {
		informer, removed = res.ResolveTyped(&k.req)
	} else {
		informer = k.factory.InformerFor(k.req.Example, k.req.NewInformer)
	}
	r := &resolved[T, L]{informer: informer, typed: Typed[T](informer), lister: k.newLister(informer.GetIndexer()), removed: removed}
	// Racing callers all got the same informer from the factory; keep the
	// first wrapper so that every caller sees one value.
	if !k.resolved.CompareAndSwap(old, r) {
		if cur := k.resolved.Load(); cur != nil && (cur.removed == nil || !cur.removed.Load()) {
			return cur
		}
		k.resolved.Store(r)
	}
	return r
}

// defaultInformer is the NewInformerFunc handed to a factory that is not a
// Resolver: the kind's informer with the namespace index, the factory's
// informer name and the group's list options tweak.
func (k *Kind[T, L]) defaultInformer(client kubernetes.Interface, resyncPeriod time.Duration) cache.SharedIndexInformer {
	return NewInformer(client, k.req.Resource, k.req.Namespace, internalinterfaces.InformerOptions{
		ResyncPeriod:     resyncPeriod,
		Indexers:         cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		InformerName:     k.factory.InformerName(),
		TweakListOptions: k.req.Tweak,
	}, k.req.Example.(T), k.req.Requests)
}

// Lazy holds a value built on first use and shared afterwards. Groups and
// versions use it so that factory.Core().V1() costs two atomic loads once
// built, instead of two allocations per call.
type Lazy[V any] struct {
	mu sync.Mutex
	v  atomic.Pointer[V]
}

// Get returns the value, building it with build on the first call.
func (l *Lazy[V]) Get(build func() V) V {
	if v := l.v.Load(); v != nil {
		return *v
	}
	return l.slow(build)
}

func (l *Lazy[V]) slow(build func() V) V {
	l.mu.Lock()
	defer l.mu.Unlock()
	if v := l.v.Load(); v != nil {
		return *v
	}
	v := build()
	l.v.Store(&v)
	return v
}
