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
	"reflect"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/accessor"
	"github.com/kubeinformers/informers/internalinterfaces"
)

// This file holds the registry: every informer the factory holds, as an
// entry, and how they are named (InformerID); and the one get-or-build
// path, informerFor, of which every creation path is a thin adapter that
// says what it asks for (a request): the typed accessors (ResolveTyped),
// InformerFor, ForResource and ForMetadata (resources.go) and the bound
// types (bind.go). Resolving a request into a spec is spec.go, building
// the informer build.go, running and stopping it run.go, reporting on it
// status.go.

// Form is how an informer holds its objects.
type Form string

const (
	// FormTyped informers cache the API's Go types, such as *corev1.Pod.
	FormTyped Form = "typed"
	// FormDynamic informers cache *unstructured.Unstructured; ForResource
	// returns them for resources that are not built in.
	FormDynamic Form = "dynamic"
	// FormMetadata informers cache *metav1.PartialObjectMetadata only; see
	// Factory.ForMetadata.
	FormMetadata Form = "metadata"
)

// InformerID names one informer of a factory.
type InformerID struct {
	// Form is how the informer holds its objects.
	Form Form
	// Resource is the resource it lists and watches. It is empty for a
	// typed informer that was only ever requested through InformerFor with
	// a type this module does not know.
	Resource schema.GroupVersionResource
	// Type is the Go type of the cached objects: the API type for the
	// typed form, *unstructured.Unstructured or *metav1.PartialObjectMetadata
	// for the others.
	Type reflect.Type
}

// String formats the ID for humans, such as "pods (v1)",
// "widgets.example.com/v1 [dynamic]" or "deployments.apps/v1 [metadata]".
func (id InformerID) String() string {
	var s string
	switch r := id.Resource; {
	case r.Resource == "" && id.Type != nil:
		s = id.Type.String()
	case r.Group == "":
		s = fmt.Sprintf("%s (%s)", r.Resource, r.Version)
	default:
		s = fmt.Sprintf("%s.%s/%s", r.Resource, r.Group, r.Version)
	}
	if id.Form != FormTyped {
		s += " [" + string(id.Form) + "]"
	}
	return s
}

// errRemoved is the cause with which RemoveInformer stops an informer.
var errRemoved = errors.New("informer removed from its factory")

// entry is one informer the factory holds. The registry is keyed by form
// and resource (entries) and, for typed informers, by Go type (byType),
// which is what InformerFor and WaitForCacheSync speak.
type entry struct {
	id       InformerID
	informer cache.SharedIndexInformer
	// hooks are what the informer reports to (status.go).
	hooks *hooks
	// shard is the shard its informer follows; nil for an informer built
	// by InformerFor's newFunc.
	shard *informerShard
	// removed is set by RemoveInformer. Accessors that cached the informer
	// check it on every call and resolve again once it is set.
	removed atomic.Bool
	// refused, if set, is why the informer must not run (an option it
	// cannot honour without widening what it lists); Start skips it, and
	// WaitForCacheSync and Ready report it.
	refused error

	// Set by Start, under the factory lock. Each informer runs under its
	// own context so that RemoveInformer can stop it alone.
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// informerFor is the one get-or-build path: it returns the entry of the
// informer req asks for, and on first use resolves its spec (spec.go),
// makes its hooks (status.go), builds it (build.go) and registers it.
func (f *sharedInformerFactory) informerFor(req request) *entry {
	f.lock.Lock()
	defer f.lock.Unlock()
	if e := f.lookup(req.id); e != nil {
		return e
	}
	spec := f.resolveSpec(req)
	h := newHooks(spec)
	informer, shard, refused := build(spec, h)
	e := &entry{id: spec.id, informer: informer, hooks: h, shard: shard, refused: spec.refused}
	if e.refused == nil {
		e.refused = refused
	}
	// Register: typed informers also by Go type, which InformerFor and
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
		return f.informerFor(r.request()).informer
	}
	// typeResources names the resource of a built-in type, so that its
	// options apply and RemoveInformer and Ready can name it.
	return f.informerFor(request{
		id:         InformerID{Form: FormTyped, Resource: typeResources[informerType], Type: informerType},
		namespaced: true,
		newInformer: func(resync time.Duration) cache.SharedIndexInformer {
			return newFunc(f.client, resync)
		},
	}).informer
}

// ResolveTyped implements [accessor.Resolver]: it is InformerFor for the
// generated accessors, which also say which resource they serve and how to
// list and watch it.
func (f *sharedInformerFactory) ResolveTyped(req *accessor.Request) (cache.SharedIndexInformer, *atomic.Bool) {
	cfg := accessor.TypedListWatch(f.client, req.Resource, "", req.Requests)
	e := f.informerFor(request{
		id:         InformerID{Form: FormTyped, Resource: req.Resource, Type: reflect.TypeOf(req.Example)},
		namespaced: IsNamespaced(req.Resource),
		group:      true, namespace: req.Namespace, tweak: req.Tweak,
		requests: cfg.Requests, missing: cfg.Missing, client: f.client, example: req.Example,
		typed: req.Typed,
	})
	return e.informer, &e.removed
}

// registryKey is the key of the registry's main index.
type registryKey struct {
	form     Form
	resource schema.GroupVersionResource
}

// all returns every entry once; the caller holds f.lock.
func (f *sharedInformerFactory) all() []*entry {
	out := make([]*entry, 0, len(f.entries)+len(f.byType))
	for _, e := range f.entries {
		out = append(out, e)
	}
	for _, e := range f.byType {
		if e.id.Resource.Resource == "" { // not also in entries
			out = append(out, e)
		}
	}
	return out
}

// started returns the informers Start has run so far.
func (f *sharedInformerFactory) started() []*entry {
	f.lock.Lock()
	defer f.lock.Unlock()
	var out []*entry
	for _, e := range f.all() {
		if e.done != nil {
			out = append(out, e)
		}
	}
	return out
}
