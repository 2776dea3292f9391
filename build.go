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
	"fmt"
	"maps"
	"reflect"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/accessor"
	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/multinamespace"
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
// for a type builds it with newFunc, the type's resync period and the
// factory's transform, if any; for a built-in type, its [ResourceOptions]
// decide both. The accessors share the informer it returns, whichever
// comes first.
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
	if r := f.bindings.byType[informerType]; r != nil {
		return f.resolveBound(r).informer
	}
	// typeResources names the resource of a built-in type, so that its
	// options apply and RemoveInformer and Ready can name it.
	e := &entry{id: InformerID{Form: FormTyped, Resource: typeResources[informerType], Type: informerType}}
	s := f.settingsFor(e.id, true, f.namespace, f.tweakListOptions)
	e.informer = newFunc(f.client, s.resync)
	f.watchErrors(e, e.informer, "")
	f.setTransform(e, s.transform)
	if s.shard != nil && s.refused == nil {
		if err := applyShard(e.informer, s.shard, f.shardOption); err != nil {
			// Fail closed: an informer that cannot be sharded does not
			// run, rather than list everything.
			s.refused = fmt.Errorf("not started: %w", err)
		}
	}
	e.refused = s.refused
	f.register(e)
	return e.informer
}

// ResolveTyped implements [accessor.Resolver]: it is InformerFor for the
// generated accessors, which also say which resource they serve and how to
// list and watch it.
func (f *sharedInformerFactory) ResolveTyped(req *accessor.Request) (cache.SharedIndexInformer, *atomic.Bool) {
	f.lock.Lock()
	defer f.lock.Unlock()

	informerType := reflect.TypeOf(req.Example)
	if e, exists := f.byType[informerType]; exists {
		return e.informer, &e.removed
	}
	e := &entry{id: InformerID{Form: FormTyped, Resource: req.Resource, Type: informerType}}
	s := f.settingsFor(e.id, IsNamespaced(req.Resource), req.Namespace, req.Tweak)
	cfg := accessor.TypedListWatch(f.client, req.Resource, "", req.Requests)
	f.build(e, s, cfg, f.client, req.Example)
	if req.Typed != nil {
		e.informer = req.Typed(e.informer)
	}
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
	cfg := listwatch.Config{Resource: id.Resource}
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
	// A custom resource's scope is not known without discovery, so, as
	// with client-go's dynamicinformer, the factory namespace applies to
	// it; a built-in cluster-scoped resource is listed cluster-wide.
	namespaced := !isBuiltIn(id.Resource) || IsNamespaced(id.Resource)
	s := f.settingsFor(e.id, namespaced, f.namespace, f.tweakListOptions)
	f.build(e, s, cfg, client, example)
	f.register(e)
	return e
}

// build makes e's informer from the effective settings and the list/watch
// configuration (Requests and Missing set; the rest is filled in here):
// one informer per namespace, under a composite when there are several.
// The caller holds f.lock. client is what the requests go through: a fake
// client makes the informer fall back from watch-list streaming to list
// and watch, as client-go's informers do.
func (f *sharedInformerFactory) build(e *entry, s settings, cfg listwatch.Config, client any, example runtime.Object) {
	// One shard for all the informer's namespaces, which SetShardSelector
	// may replace until the informer starts; one sync gate over all their
	// first watches.
	shard := &informerShard{e: e, source: s.shard}
	e.shard = shard
	e.gate = newSyncGate(s.namespaces)
	var departures *listwatch.Departures
	if s.shard != nil && s.shard.field != "" {
		departures = &listwatch.Departures{} // a membership moves the shard
	}
	pre := f.listWatchMode(e, s, &cfg, client)
	newOne := func(namespace string) cache.SharedIndexInformer {
		c := cfg
		c.Namespace, c.Tweak = namespace, s.tweak
		c.Shard = shard
		// Errors name the namespace only where there are several.
		source := ""
		if len(s.namespaces) > 1 {
			source = namespace
		}
		c.Observe = func(err error) { e.health.observe(source, err) }
		c.Watched = e.gate.watched(namespace)
		opts := cache.SharedIndexInformerOptions{
			ResyncPeriod:      s.resync,
			Indexers:          maps.Clone(s.indexers),
			ObjectDescription: e.id.Resource.String(),
		}
		if e.id.Form != FormMetadata {
			// A metadata informer would take the typed informer's metrics
			// identity when it came first; the typed one keeps it.
			opts.Identifier = f.informerName.WithResource(e.id.Resource)
		}
		// A shard handover reads the informer's cache (internal/listwatch).
		var informer cache.SharedIndexInformer
		c.Store = func() cache.Store { return informer.GetStore() }
		c.Example, c.Departures = example, departures
		informer = cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(listwatch.New(c), listwatch.Semantics(client, c.Mode)), example, opts)
		f.watchErrors(e, informer, source)
		return informer
	}
	var informer cache.SharedIndexInformer
	if len(s.namespaces) == 1 {
		informer = newOne(s.namespaces[0])
	} else {
		perNamespace := make(map[string]cache.SharedIndexInformer, len(s.namespaces))
		for _, ns := range s.namespaces {
			perNamespace[ns] = newOne(ns)
		}
		informer = multinamespace.New(perNamespace)
	}
	e.informer = newFactoryInformer(informer, shard, e.gate, departures)
	if pre != nil {
		setPretransform(e, pre)
	}
	e.refused = s.refused
}

// watchErrors records the errors of an informer's watch stream, which
// reach the handler rather than the list/watch calls, for Ready; and logs
// them as client-go does.
func (f *sharedInformerFactory) watchErrors(e *entry, informer cache.SharedIndexInformer, source string) {
	if err := informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		e.health.observe(source, err)
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}); err != nil {
		// Only a running informer refuses, and a new one is not running;
		// without the handler Ready just knows less.
		klog.Background().Error(err, "Cannot watch the errors of an informer", "informer", e.id)
	}
}

// setTransform applies the informer's transform: the user's (WithTransform
// or ResourceOptions.Transform) first, so that it sees the whole object,
// then the lean-memory one (WithLeanMemory).
func (f *sharedInformerFactory) setTransform(e *entry, user cache.TransformFunc) {
	transform := chainTransforms(user, f.leanTransform)
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
