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
	"reflect"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/accessor"
	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internalinterfaces"
)

// This file builds the factory's informers, of every form. The list and
// watch calls themselves come from internal/listwatch, the same code the
// standalone New…Informer functions use.
//
// Dynamic and metadata informers are built here rather than with client-go's
// dynamicinformer and metadatainformer: those hide their ListWatch, and the
// factory needs its own hooks in it (Ready's error record now, per-resource
// selectors and shard filters next). What they do is otherwise the same,
// request for request; test/conformance's differential test checks that.

var (
	unstructuredType    = reflect.TypeFor[*unstructured.Unstructured]()
	partialMetadataType = reflect.TypeFor[*metav1.PartialObjectMetadata]()
)

// InformerFor returns the shared informer for obj's type. The first call
// for a type builds it with newFunc, the type's resync period (see
// [WithCustomResyncConfig]) and the factory's transform, if any. The
// accessors share the informer it returns, whichever comes first.
//
// Like client-go, it still builds informers after Shutdown, but Start no
// longer runs them.
func (f *sharedInformerFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	f.lock.Lock()
	defer f.lock.Unlock()

	informerType := reflect.TypeOf(obj)
	if e, exists := f.byType[informerType]; exists {
		return e.informer
	}
	e := &entry{id: InformerID{Form: FormTyped, Type: informerType}}
	e.informer = newFunc(f.client, f.resyncFor(informerType))
	f.setTransform(e)
	f.register(e)
	return e.informer
}

// ResolveTyped implements [accessor.Resolver]: it is InformerFor for the
// generated accessors, which also say which resource they serve.
func (f *sharedInformerFactory) ResolveTyped(req *accessor.Request) (cache.SharedIndexInformer, *atomic.Bool) {
	f.lock.Lock()
	defer f.lock.Unlock()

	informerType := reflect.TypeOf(req.Example)
	if e, exists := f.byType[informerType]; exists {
		if e.id.Resource.Resource == "" {
			// InformerFor built it before anyone said which resource it
			// serves; now RemoveInformer and Ready can name it.
			e.id.Resource = req.Resource
			f.entries[registryKey{form: FormTyped, resource: req.Resource}] = e
		}
		return e.informer, &e.removed
	}
	e := &entry{id: InformerID{Form: FormTyped, Resource: req.Resource, Type: informerType}}
	cfg := accessor.TypedListWatch(f.client, req.Resource, req.Namespace, req.Requests)
	cfg.Tweak = req.Tweak
	e.informer = f.newInformer(e, cfg, f.client, req.Example, f.resyncFor(informerType))
	f.register(e)
	return e.informer, &e.removed
}

// resolve returns the dynamic or metadata informer for id, building it on
// first use. The caller has checked that the client it needs is there.
func (f *sharedInformerFactory) resolve(id InformerID) *entry {
	f.lock.Lock()
	defer f.lock.Unlock()

	key := registryKey{form: id.Form, resource: id.Resource}
	if e, exists := f.entries[key]; exists {
		return e
	}
	e := &entry{id: id}
	cfg := listwatch.Config{Resource: id.Resource, Namespace: f.namespaceFor(id), Tweak: f.tweakListOptions}
	var example runtime.Object
	var client any
	switch id.Form {
	case FormDynamic:
		e.id.Type, example, client = unstructuredType, &unstructured.Unstructured{}, f.dynamicClient
		cfg.Requests = func(ns string) listwatch.Requests {
			return listwatch.Of(f.dynamicClient.Resource(id.Resource).Namespace(ns))
		}
	case FormMetadata:
		e.id.Type, example, client = partialMetadataType, &metav1.PartialObjectMetadata{}, f.metadataClient
		cfg.Requests = func(ns string) listwatch.Requests {
			return listwatch.Of(f.metadataClient.Resource(id.Resource).Namespace(ns))
		}
	}
	e.informer = f.newInformer(e, cfg, client, example, f.defaultResync)
	f.register(e)
	return e
}

// namespaceFor is the namespace a dynamic or metadata informer lists in:
// none for a built-in cluster-scoped resource, the factory's otherwise. A
// custom resource's scope is not known without discovery, so, as with
// client-go's dynamicinformer, the factory namespace applies to it.
func (f *sharedInformerFactory) namespaceFor(id InformerID) string {
	if isBuiltIn(id.Resource) && !IsNamespaced(id.Resource) {
		return metav1.NamespaceAll
	}
	return f.namespace
}

// newInformer builds one informer of the factory from its list/watch
// configuration; the caller holds f.lock. client is what the informer's
// requests go through: a fake client makes the informer fall back from
// watch-list streaming to list and watch, as client-go's informers do.
func (f *sharedInformerFactory) newInformer(e *entry, cfg listwatch.Config, client any, example runtime.Object, resync time.Duration) cache.SharedIndexInformer {
	cfg.Observe = e.health.observe
	opts := cache.SharedIndexInformerOptions{
		ResyncPeriod:      resync,
		Indexers:          cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		ObjectDescription: e.id.Resource.String(),
	}
	if e.id.Form != FormMetadata {
		// A metadata informer would take the typed informer's metrics
		// identity when it came first; the typed one keeps it.
		opts.Identifier = f.informerName.WithResource(e.id.Resource)
	}
	informer := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(listwatch.New(cfg), client), example, opts)
	e.informer = informer
	f.setTransform(e)
	return informer
}

// resyncFor is the resync period of a typed informer.
func (f *sharedInformerFactory) resyncFor(t reflect.Type) time.Duration {
	if period, exists := f.customResync[t]; exists {
		return period
	}
	return f.defaultResync
}

// setTransform applies the factory's transforms to a new informer: the
// user's (WithTransform) first, so that it sees the whole object, then
// the lean-memory one (WithLeanMemory).
func (f *sharedInformerFactory) setTransform(e *entry) {
	transform := chainTransforms(f.transform, f.leanTransform)
	if transform == nil {
		return
	}
	if err := e.informer.SetTransform(transform); err != nil {
		// SetTransform only fails on a running informer, which a fresh
		// one should never be; say so instead of dropping it.
		klog.Background().Error(err, "Cannot set the factory transform", "informer", e.id)
	}
}

// chainTransforms returns a transform that applies first, then second;
// either may be nil.
func chainTransforms(first, second cache.TransformFunc) cache.TransformFunc {
	switch {
	case first == nil:
		return second
	case second == nil:
		return first
	}
	return func(obj any) (any, error) {
		obj, err := first(obj)
		if err != nil {
			return nil, err
		}
		return second(obj)
	}
}
