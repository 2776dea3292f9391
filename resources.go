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
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/binding"
	"github.com/kubeinformers/informers/internal/informer"
	"github.com/kubeinformers/informers/internal/listwatch"
)

// GenericInformer is a shared informer reached by resource rather than by
// type: the same informer the typed accessor returns, with a lister of
// untyped objects.
type GenericInformer interface {
	Informer() cache.SharedIndexInformer
	Lister() cache.GenericLister
}

type genericInformer struct {
	informer cache.SharedIndexInformer
	resource schema.GroupResource
}

var _ GenericInformer = &genericInformer{}

// Informer returns the shared informer.
func (f *genericInformer) Informer() cache.SharedIndexInformer {
	return f.informer
}

// Lister returns a lister over the shared informer's indexer.
func (f *genericInformer) Lister() cache.GenericLister {
	return cache.NewGenericLister(f.informer.GetIndexer(), f.resource)
}

// ErrUnknownResource is wrapped by the error ForResource returns for a
// resource the factory has no informer for. Test for it with [errors.Is].
var ErrUnknownResource = errors.New("no informer found")

// ForResource returns the shared informer for resource.
//
// For the built-in resources ([SupportedResources]) it is the typed
// informer the accessors share, and so it is for a resource bound with
// [github.com/kubeinformers/informers/gensupport.Bind] (a user's own type,
// through the New(factory, client) that
// kubeinformers-gen generates). For any other resource, such as a custom
// resource, it is a shared dynamic informer of *unstructured.Unstructured
// when the factory has a dynamic client ([NewForConfig],
// [WithDynamicClient]). Otherwise it is an error wrapping
// [ErrUnknownResource] that names the resource and, where it can tell, what
// was probably meant.
func (f *sharedInformerFactory) ForResource(resource schema.GroupVersionResource) (GenericInformer, error) {
	// The built-in resources are served by their generated accessors,
	// which share the typed informer (generic.go).
	if !f.dynamicBuiltIns {
		if informer := f.informerForResource(resource); informer != nil {
			return &genericInformer{informer: informer, resource: resource.GroupResource()}, nil
		}
	}
	req, err := f.resourceRecipe(FormDynamic, resource)
	if err != nil {
		return nil, err
	}
	e := f.informerFor(req)
	return &genericInformer{informer: e.informer, resource: resource.GroupResource()}, nil
}

// ForMetadata returns the shared informer that caches only the metadata of
// resource's objects, as *metav1.PartialObjectMetadata. See [Factory].
func (f *sharedInformerFactory) ForMetadata(resource schema.GroupVersionResource) (GenericInformer, error) {
	req, err := f.resourceRecipe(FormMetadata, resource)
	if err != nil {
		return nil, err
	}
	e := f.informerFor(req)
	return &genericInformer{informer: e.informer, resource: resource.GroupResource()}, nil
}

// resourceRecipe says which informer ForResource (form FormDynamic, for a
// resource its accessors do not serve) or ForMetadata asks for, or why
// there is none: a bound resource's typed informer, else the dynamic or
// metadata informer of a valid resource the factory has the client for.
func (f *sharedInformerFactory) resourceRecipe(form Form, resource schema.GroupVersionResource) (recipe, error) {
	if form == FormDynamic && !f.dynamicBuiltIns {
		f.lock.Lock()
		bound := f.bindings.Bound(resource)
		f.lock.Unlock()
		if bound != nil {
			return boundRecipe(bound), nil
		}
	}
	if err := binding.ValidateResource(resource); err != nil {
		if form == FormMetadata {
			return recipe{}, fmt.Errorf("informers: ForMetadata(%v): %w", resource, err)
		}
		return recipe{}, fmt.Errorf("%w for %v: %w", ErrUnknownResource, resource, err)
	}
	req := recipe{id: InformerID{Form: form, Resource: resource}, Request: informer.Request{Namespaced: isNamespacedOrUnknown(resource)}}
	switch form {
	case FormDynamic:
		// Under WithDynamicBuiltIns a near miss of a built-in resource is
		// requested as given, and the server's 404 names it (Ready).
		if hint := binding.Suggest(resource, supportedResources); hint != "" && !f.dynamicBuiltIns {
			// A typo, not a resource a dynamic informer should retry
			// forever.
			return recipe{}, fmt.Errorf("%w for %v%s", ErrUnknownResource, resource, hint)
		}
		if f.dynamicClient == nil {
			// The message starts like client-go's, for callers that match it.
			return recipe{}, fmt.Errorf("%w for %v (it is not built in; a factory with a dynamic client, from NewForConfig or WithDynamicClient, would serve it)", ErrUnknownResource, resource)
		}
		req.id.Type, req.Example, req.Client = reflect.TypeFor[*unstructured.Unstructured](), &unstructured.Unstructured{}, f.dynamicClient
		req.Requests = func(ns string) listwatch.Requests {
			return listwatch.Of(f.dynamicClient.Resource(resource).Namespace(ns))
		}
	case FormMetadata:
		if f.metadataClient == nil {
			return recipe{}, fmt.Errorf("informers: ForMetadata(%v): the factory has no metadata client (use NewForConfig or WithMetadataClient)", resource)
		}
		req.id.Type, req.Example, req.Client = reflect.TypeFor[*metav1.PartialObjectMetadata](), &metav1.PartialObjectMetadata{}, f.metadataClient
		req.Requests = func(ns string) listwatch.Requests {
			return listwatch.Of(f.metadataClient.Resource(resource).Namespace(ns))
		}
	}
	return req, nil
}
