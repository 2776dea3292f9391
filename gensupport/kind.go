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

package gensupport

import (
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/accessor"
	"github.com/kubeinformers/informers/internal/binding"
	"github.com/kubeinformers/informers/internalinterfaces"
)

// Kind is the accessor of one kind that generated code embeds: it resolves
// the shared informer once, through the factory's registry, and then
// serves it, its type-safe form and its lister without allocating, as the
// built-in accessors do. After [informers.Factory.RemoveInformer] the next call
// resolves a fresh informer. The zero value is ready for [Kind.Init].
type Kind[T TypedObject, L any] struct {
	k accessor.Kind[T, L]
}

// Init sets up the accessor. factory is the one its group was built with:
// if it is a [Binder] whose Binding holds resource, the accessor serves
// the bound informer; otherwise (a factory of another implementation) it
// calls fallback once per informer, which asks that factory for the
// informer through its InformerFor, as informer-gen's accessors do. example is an empty object of the type and
// newLister the kind's lister constructor (client-gen's NewGadgetLister).
func (k *Kind[T, L]) Init(factory any, resource schema.GroupVersionResource, example T, fallback func() cache.SharedIndexInformer, newLister func(cache.Indexer) L) {
	var via internalinterfaces.SharedInformerFactory = &fallbackFactory{informer: fallback}
	if binder, ok := factory.(Binder); ok {
		if b := binder.Binding(); b != nil {
			if r := b.resources[resource]; r != nil {
				via = &boundFactory{b: b, r: r}
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
	b *Binding
	r *binding.Resource
}

var (
	_ accessor.Resolver                        = &boundFactory{}
	_ internalinterfaces.SharedInformerFactory = &boundFactory{}
	_ internalinterfaces.SharedInformerFactory = &fallbackFactory{}
)

func (b *boundFactory) ResolveTyped(*accessor.Request) (cache.SharedIndexInformer, *atomic.Bool) {
	return b.b.host.ResolveBound(b.r)
}

func (b *boundFactory) Start(stopCh <-chan struct{}) { b.b.factory.Start(stopCh) }
func (b *boundFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	return b.b.factory.InformerFor(obj, newFunc)
}
func (b *boundFactory) InformerName() *cache.InformerName { return b.b.factory.InformerName() }

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
