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
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/binding"
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
	if f.dynamicBuiltIns {
		return f.dynamicForResource(resource)
	}
	if informer := f.informerForResource(resource); informer != nil {
		return &genericInformer{informer: informer, resource: resource.GroupResource()}, nil
	}
	if informer := f.boundInformer(resource); informer != nil {
		return &genericInformer{informer: informer, resource: resource.GroupResource()}, nil
	}
	if err := validateResource(resource); err != nil {
		return nil, fmt.Errorf("%w for %v: %w", ErrUnknownResource, resource, err)
	}
	hint := suggest(resource)
	switch {
	case hint != "":
		// A near miss of a built-in resource is a typo, not a resource a
		// dynamic informer should retry forever.
		return nil, fmt.Errorf("%w for %v%s", ErrUnknownResource, resource, hint)
	case f.dynamicClient == nil:
		// The message starts like client-go's, for callers that match it.
		return nil, fmt.Errorf("%w for %v (it is not built in; a factory with a dynamic client, from NewForConfig or WithDynamicClient, would serve it)", ErrUnknownResource, resource)
	}
	e := f.informerFor(f.unstructuredRequest(FormDynamic, resource))
	return &genericInformer{informer: e.informer, resource: resource.GroupResource()}, nil
}

// ForMetadata returns the shared informer that caches only the metadata of
// resource's objects, as *metav1.PartialObjectMetadata. See [Factory].
func (f *sharedInformerFactory) ForMetadata(resource schema.GroupVersionResource) (GenericInformer, error) {
	if err := validateResource(resource); err != nil {
		return nil, fmt.Errorf("informers: ForMetadata(%v): %w", resource, err)
	}
	if f.metadataClient == nil {
		return nil, fmt.Errorf("informers: ForMetadata(%v): the factory has no metadata client (use NewForConfig or WithMetadataClient)", resource)
	}
	e := f.informerFor(f.unstructuredRequest(FormMetadata, resource))
	return &genericInformer{informer: e.informer, resource: resource.GroupResource()}, nil
}

// unstructuredRequest is the request of the dynamic or metadata informer
// of resource; the caller has checked that the client it needs is there.
func (f *sharedInformerFactory) unstructuredRequest(form Form, resource schema.GroupVersionResource) request {
	// A custom resource's scope is not known without discovery, so, as
	// with client-go's dynamicinformer, the factory namespace applies to
	// it; a built-in cluster-scoped resource is listed cluster-wide.
	req := request{id: InformerID{Form: form, Resource: resource}, namespaced: !isBuiltIn(resource) || IsNamespaced(resource)}
	switch form {
	case FormDynamic:
		req.id.Type, req.example, req.client = reflect.TypeFor[*unstructured.Unstructured](), &unstructured.Unstructured{}, f.dynamicClient
		req.requests = func(ns string) listwatch.Requests {
			return listwatch.Of(f.dynamicClient.Resource(resource).Namespace(ns))
		}
	case FormMetadata:
		req.id.Type, req.example, req.client = reflect.TypeFor[*metav1.PartialObjectMetadata](), &metav1.PartialObjectMetadata{}, f.metadataClient
		req.requests = func(ns string) listwatch.Requests {
			return listwatch.Of(f.metadataClient.Resource(resource).Namespace(ns))
		}
	}
	return req
}

// validateResource says what is wrong with a resource that is not built in.
func validateResource(resource schema.GroupVersionResource) error {
	return binding.ValidateResource(resource)
}

// isBuiltIn reports whether resource is one of [SupportedResources].
func isBuiltIn(resource schema.GroupVersionResource) bool {
	_, ok := builtInResources[resource]
	return ok
}

var builtInResources = func() map[schema.GroupVersionResource]struct{} {
	m := make(map[schema.GroupVersionResource]struct{}, len(supportedResources))
	for _, r := range supportedResources {
		m[r] = struct{}{}
	}
	return m
}()

// SupportedResources returns the built-in resources: those with a typed
// informer and accessor in this module, which ForResource serves with the
// typed informer on any factory. A factory with a dynamic client serves
// any other resource too, as a dynamic informer. The slice is sorted by
// API group and version, and is a copy.
func SupportedResources() []schema.GroupVersionResource {
	return slices.Clone(supportedResources)
}

// IsNamespaced reports whether resource is one of the built-in resources
// ([SupportedResources]) whose objects live in a namespace. It is false for
// every other resource, custom resources included, whose scope is not
// known without discovery: the factory treats those as namespaced, so
// that WithNamespace and WithNamespaces apply to them; a cluster-scoped
// custom resource under either is then requested in a namespace, which
// the server answers with 404 Not Found (Ready names it). Serve such a
// resource from a factory without WithNamespace or WithNamespaces.
func IsNamespaced(resource schema.GroupVersionResource) bool {
	return namespacedResources[resource]
}

// suggest names supported resources close to an unknown one: the same
// resource spelt differently (a kind, a singular, other case), or the
// versions its group and resource are served in.
func suggest(resource schema.GroupVersionResource) string {
	want := strings.ToLower(resource.Resource)
	var spelt, versions []string
	for _, r := range supportedResources {
		if r.Group != resource.Group {
			continue
		}
		switch {
		case r.Resource == resource.Resource:
			versions = append(versions, r.Version)
		case r.Version == resource.Version && (r.Resource == want || r.Resource == want+"s" || r.Resource == want+"es" ||
			strings.TrimSuffix(r.Resource, "ies") == strings.TrimSuffix(want, "y")):
			spelt = append(spelt, fmt.Sprintf("%q", r.Resource))
		}
	}
	switch {
	case len(spelt) > 0:
		return fmt.Sprintf(" (resources are plural and lower case: did you mean %s?)", strings.Join(spelt, " or "))
	case len(versions) > 0:
		return fmt.Sprintf(" (%s is served in version %s)", resource.GroupResource(), strings.Join(versions, ", "))
	}
	return ""
}
