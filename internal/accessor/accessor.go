// Package accessor holds the logic that every generated informer shares, so
// that the generated per-kind files only bind types to it.
//
// It is internal: the public surface of each kind (NewXInformer, XInformer,
// TypedXInformer, …) is generated with upstream's exact signatures.
package accessor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internalinterfaces"
)

// Client is the part of a typed client (such as
// client.CoreV1().Pods(namespace)) that an informer needs.
type Client[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Object is what an API type's pointer is: a cache.Object that is also a
// runtime.Object, as every generated kind is.
type Object interface {
	cache.Object
	runtime.Object
}

// NewInformer builds a typed shared index informer for one resource, the way
// every generated NewTypedXInformerWithOptions does.
//
// The resource's typed client is obtained through newClient on every list
// and watch, as upstream does, so a clientset whose methods return fresh
// clients behaves the same. A nil client does not panic in the reflector's
// goroutine: list and watch return an error that names the resource.
func NewInformer[T Object, L runtime.Object](client kubernetes.Interface, gvr schema.GroupVersionResource, options internalinterfaces.InformerOptions, example T, newClient func() Client[L]) cache.TypedSharedIndexInformer[T] {
	tweak := options.TweakListOptions
	// prepare applies the tweak to a request's options, or says why no
	// request can be made.
	prepare := func(verb string, opts *metav1.ListOptions) error {
		if client == nil {
			return fmt.Errorf("informers: cannot %s %s: the kubernetes.Interface is nil", verb, gvr)
		}
		if tweak != nil {
			tweak(opts)
		}
		return nil
	}
	list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		if err := prepare("list", &opts); err != nil {
			return nil, err
		}
		return newClient().List(ctx, opts)
	}
	watchFunc := func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		if err := prepare("watch", &opts); err != nil {
			return nil, err
		}
		return newClient().Watch(ctx, opts)
	}
	lw := &cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			return list(context.Background(), opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			return watchFunc(context.Background(), opts)
		},
		ListWithContextFunc:  list,
		WatchFuncWithContext: watchFunc,
	}
	informer := cache.NewSharedIndexInformerWithOptions(
		cache.ToListWatcherWithWatchListSemantics(lw, client),
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

// Typed converts an informer to its typed form without wrapping it twice:
// informers built by NewInformer already are typed.
func Typed[T cache.Object](informer cache.SharedIndexInformer) cache.TypedSharedIndexInformer[T] {
	if typed, ok := informer.(cache.TypedSharedIndexInformer[T]); ok {
		return typed
	}
	return cache.NewTypedSharedIndexInformer[T](informer)
}

// Kind is the per-kind accessor that a version's Pods(), Nodes(), …
// return. Generated code embeds it and adds TypedInformer with the kind's
// own return type.
//
// Upstream rebuilds the typed wrapper and the lister on every Informer() and
// Lister() call. Kind resolves them once, through the factory's InformerFor,
// and then serves them from an atomic pointer: the informer is the same one
// (the factory keeps one per type and never replaces it), and the lister
// reads the same indexer, but a controller calling Lister() in its sync loop
// no longer allocates.
type Kind[T Object, L any] struct {
	factory     internalinterfaces.SharedInformerFactory
	tweak       internalinterfaces.TweakListOptionsFunc
	example     T
	newInformer func(kubernetes.Interface, internalinterfaces.InformerOptions) cache.SharedIndexInformer
	newLister   func(cache.Indexer) L

	resolved atomic.Pointer[resolved[T, L]]
}

type resolved[T Object, L any] struct {
	informer cache.TypedSharedIndexInformer[T]
	lister   L
}

// Init sets up the accessor. newInformer builds the informer the factory
// shares (namespace already bound for namespaced kinds); newLister wraps an
// indexer in the kind's lister.
func (k *Kind[T, L]) Init(factory internalinterfaces.SharedInformerFactory, tweak internalinterfaces.TweakListOptionsFunc, example T,
	newInformer func(kubernetes.Interface, internalinterfaces.InformerOptions) cache.SharedIndexInformer, newLister func(cache.Indexer) L) {
	k.factory, k.tweak, k.example, k.newInformer, k.newLister = factory, tweak, example, newInformer, newLister
}

// Informer returns the factory's shared informer for the kind.
func (k *Kind[T, L]) Informer() cache.SharedIndexInformer { return k.get().informer }

// Typed returns the factory's shared informer for the kind, with type-safe
// methods.
func (k *Kind[T, L]) Typed() cache.TypedSharedIndexInformer[T] { return k.get().informer }

// Lister returns a lister over the shared informer's indexer.
func (k *Kind[T, L]) Lister() L { return k.get().lister }

func (k *Kind[T, L]) get() *resolved[T, L] {
	if r := k.resolved.Load(); r != nil {
		return r
	}
	informer := k.factory.InformerFor(k.example, k.defaultInformer)
	r := &resolved[T, L]{informer: Typed[T](informer), lister: k.newLister(informer.GetIndexer())}
	// Racing callers all got the same informer from the factory; keep the
	// first wrapper so that every caller sees one value.
	if !k.resolved.CompareAndSwap(nil, r) {
		r = k.resolved.Load()
	}
	return r
}

// defaultInformer is the NewInformerFunc handed to the factory: the kind's
// informer with the namespace index, the factory's informer name and its
// list options tweak.
func (k *Kind[T, L]) defaultInformer(client kubernetes.Interface, resyncPeriod time.Duration) cache.SharedIndexInformer {
	return k.newInformer(client, internalinterfaces.InformerOptions{
		ResyncPeriod:     resyncPeriod,
		Indexers:         cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		InformerName:     k.factory.InformerName(),
		TweakListOptions: k.tweak,
	})
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
