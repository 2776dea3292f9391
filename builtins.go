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
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// This file says which resources are built in: those with a generated
// typed informer (the tables in generic.go; near-miss hints: binding.Suggest).

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

// isNamespacedOrUnknown is the scope the factory gives a resource: a
// custom resource's scope is not known without discovery, so, as with
// client-go's dynamicinformer, the factory namespace applies to it; a
// built-in cluster-scoped resource is listed cluster-wide.
func isNamespacedOrUnknown(resource schema.GroupVersionResource) bool {
	return !isBuiltIn(resource) || IsNamespaced(resource)
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
