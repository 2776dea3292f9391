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
	"errors"
	"reflect"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/informer"
	"github.com/kubeinformers/informers/internal/multinamespace"
	"github.com/kubeinformers/informers/internal/shard"
)

// This file holds the registry: every informer the factory holds, as an
// entry, and how they are named (InformerID). Creating them is create.go,
// running and stopping them run.go, reporting on them status.go.

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
	if id.Form == FormTyped {
		return informer.Name(id.Resource, id.Type) // internal/informer/spec.go
	}
	return informer.Name(id.Resource, id.Type) + " [" + string(id.Form) + "]"
}

// errRemoved is the cause with which RemoveInformer stops an informer.
var errRemoved = errors.New("informer removed from its factory")

// entry is one informer the factory holds. The registry is keyed by form
// and resource (entries) and, for typed informers, by Go type (byType),
// which is what InformerFor and WaitForCacheSync speak.
type entry struct {
	id       InformerID
	informer cache.SharedIndexInformer
	// base is the factory's own wrapper under any typed form; nil for an
	// informer built by InformerFor's newFunc.
	base *informer.Informer
	// hooks are what the informer reports to (internal/informer).
	hooks *informer.Hooks
	// shard is the shard its informer follows; nil for an informer built
	// by InformerFor's newFunc.
	shard *shard.Informer
	// namespaces is the composite whose namespaces follow the factory's
	// set (SetNamespaces, namespaces.go); nil for any other informer.
	namespaces *multinamespace.Informer
	// removed is set by RemoveInformer. Accessors that cached the informer
	// check it on every call and resolve again once it is set.
	removed atomic.Bool
	// refused, if set, is why the informer must not run (an option it
	// cannot honour without widening what it lists); Start skips it, and
	// WaitForCacheSync and Ready report it.
	refused error

	// run is set by Start, under the factory lock (internal/informer).
	run informer.Run
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
		if e.run.Done() != nil {
			out = append(out, e)
		}
	}
	return out
}
