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

// Package bridge is what the controller-runtime bridge (the crcache
// module) asks of a factory beyond its public API. crcache builds one
// factory per informer from controller-runtime's cache.Options and the
// user's factory options together; to refuse a setting given both ways,
// and to give controller-runtime an informer that reports synced while it
// waits for its resource, it needs what the options set and what the
// informers do, which the public API does not say.
package bridge

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/budget"
	"github.com/kubeinformers/informers/internalinterfaces"
)

// Factory is implemented by the factories of package informers.
type Factory interface {
	// BridgeSettings returns the settings the factory's options made.
	BridgeSettings() Settings
	// WaitsForResource reports whether the factory holds an informer of
	// resource and every one of them waits for the server to serve it
	// (WithAPIDiscovery).
	WaitsForResource(resource schema.GroupVersionResource) bool
	// NamespaceListed reports whether every informer of resource whose
	// namespaces follow the factory's set (SetNamespaces) has synced
	// namespace; while one has not, the last error of its list or watch
	// of namespace, if any.
	NamespaceListed(resource schema.GroupVersionResource, namespace string) (bool, error)
	// BorrowName makes the factory report this module's metrics under
	// label, and leaves its informer name (WithInformerName, which
	// several factories share) to the caller: Shutdown does not release
	// it. Call it before the factory builds an informer.
	BorrowName(label string)
	// OverBudget returns why the factory's informers of resource are
	// stopped over a memory budget, or nil.
	OverBudget(resource schema.GroupVersionResource) error
	// SetResourceMemoryBudget is the factory's.
	SetResourceMemoryBudget(resource schema.GroupVersionResource, bytes int64) error
}

// Settings are the factory-wide settings of its options that
// controller-runtime's cache.Options can also make.
type Settings struct {
	// Namespaces are those of WithNamespace or WithNamespaces; nil for
	// every namespace.
	Namespaces []string
	// Tweak and Transform are those of WithTweakListOptions and
	// WithTransform, or nil.
	Tweak     internalinterfaces.TweakListOptionsFunc
	Transform cache.TransformFunc
	// APIDiscovery is whether WithAPIDiscovery was given.
	APIDiscovery bool
	// InformerName is that of WithInformerName, or nil.
	InformerName *cache.InformerName
	// MemoryPool is the budget of WithMemoryBudget, shared by every
	// factory built with the option; nil for none.
	MemoryPool *budget.Pool
	// Resources are the settings of WithResourceOptions, by resource.
	Resources map[schema.GroupVersionResource]ResourceSettings
}

// ResourceSettings says which settings of one resource's
// ResourceOptions are set.
type ResourceSettings struct {
	Namespaces, Selectors, Tweak, Transform bool
}
