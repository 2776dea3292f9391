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

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/accessor"
	"github.com/kubeinformers/informers/internal/binding"
	"github.com/kubeinformers/informers/internal/informer"
	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internalinterfaces"
)

// This file creates the factory's informers: informerFor is the one
// get-or-build path, and every creation path is a thin adapter that says
// what it asks for (a recipe): the typed accessors (ResolveTyped),
// InformerFor, the bound types (ResolveBound), and
// ForResource and ForMetadata (resources.go). On first use informerFor
// resolves the recipe into a spec (spec.go), makes the hooks the informer
// reports to and builds it (internal/informer) and registers it
// (registry.go).

// informerFor is the one get-or-build path: it returns the entry of the
// informer req asks for, and on first use resolves its spec (spec.go),
// makes its hooks (status.go), builds it (build.go) and registers it.
func (f *sharedInformerFactory) informerFor(req recipe) *entry {
	f.lock.Lock()
	defer f.lock.Unlock()
	if e := f.lookup(req.id); e != nil {
		return e
	}
	spec := f.resolveSpec(req)
	h := informer.NewHooks(spec, &f.metrics.Shard, metricsProvider.On)
	b := informer.Build(spec, h)
	e := &entry{id: req.id, informer: b.Informer, base: b.Base, hooks: h, shard: b.Shard, namespaces: b.Namespaces, refused: spec.Refused}
	if e.refused == nil {
		e.refused = b.Refused
	}
	// Register it: typed informers also by Go type, which InformerFor and
	// WaitForCacheSync speak.
	if e.id.Resource.Resource != "" {
		f.entries[registryKey{form: e.id.Form, resource: e.id.Resource}] = e
	}
	if e.id.Form == FormTyped && e.id.Type != nil {
		f.byType[e.id.Type] = e
	}
	return e
}

// lookup returns the entry of id, or nil; the caller holds f.lock.
func (f *sharedInformerFactory) lookup(id InformerID) *entry {
	if id.Form == FormTyped {
		return f.byType[id.Type]
	}
	return f.entries[registryKey{form: id.Form, resource: id.Resource}]
}

// InformerFor returns the shared informer for obj's type. The first call
// for a type builds it with newFunc, the type's resync period and the
// factory's transform, if any; for a built-in type, its [ResourceOptions]
// decide both. The accessors share the informer it returns, whichever
// comes first. For a type bound with the generated New(factory, client),
// it is the bound typed informer, and newFunc is not called.
//
// Like client-go, it still builds informers after Shutdown, but Start no
// longer runs them.
func (f *sharedInformerFactory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	informerType := reflect.TypeOf(obj)
	if r := f.boundType(informerType); r != nil {
		req := boundRecipe(r)
		return f.informerFor(req).informer
	}
	// typeResources names the resource of a built-in type, so that its
	// options apply and RemoveInformer and Ready can name it.
	return f.informerFor(recipe{
		id: InformerID{Form: FormTyped, Resource: typeResources[informerType], Type: informerType},
		Request: informer.Request{Namespaced: true, NewInformer: func(resync time.Duration) cache.SharedIndexInformer {
			return newFunc(f.client, resync)
		}},
	}).informer
}

// ResolveTyped implements [accessor.Resolver]: it is InformerFor for the
// generated accessors, which also say which resource they serve and how to
// list and watch it.
func (f *sharedInformerFactory) ResolveTyped(req *accessor.Request) (cache.SharedIndexInformer, *atomic.Bool) {
	r := recipe{id: InformerID{Form: FormTyped, Resource: req.Resource, Type: reflect.TypeOf(req.Example)}, Request: informer.Request{
		Namespaced: namespacedResources[req.Resource], // IsNamespaced
		Group:      true, Namespace: req.Namespace, Tweak: req.Tweak,
		Missing: "the kubernetes.Interface is nil", Client: f.client, Example: req.Example,
		Typed: req.Typed,
	}}
	if f.client != nil {
		client, requests := f.client, req.Requests
		r.Requests = func(ns string) listwatch.Requests { return requests(client, ns) }
	}
	e := f.informerFor(r)
	return e.informer, &e.removed
}

// ResolveBound implements binding.Host: the generated kind accessors of a
// bound resource get their informer here.
func (f *sharedInformerFactory) ResolveBound(r *binding.Resource) (cache.SharedIndexInformer, *atomic.Bool) {
	req := boundRecipe(r)
	e := f.informerFor(req)
	return e.informer, &e.removed
}

// boundRecipe is the recipe of the typed informer of a bound resource:
// built as the built-in ones are.
func boundRecipe(r *binding.Resource) recipe {
	return recipe{id: InformerID{Form: FormTyped, Resource: r.Resource, Type: r.Type}, Request: informer.Request{
		Namespaced: r.Namespaced,
		Requests:   r.Requests, Missing: r.Missing, Client: r.Client, Example: r.Example,
		Typed: r.Typed, Refused: r.Refused,
	}}
}
