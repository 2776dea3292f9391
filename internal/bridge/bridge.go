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
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/budget"
	"github.com/kubeinformers/informers/internal/informer"
	"github.com/kubeinformers/informers/internalinterfaces"
)

// Factory is implemented by the factories of package informers.
type Factory interface {
	// BridgeSettings returns the settings the factory's options made.
	BridgeSettings() Settings
	// Informers returns the informers the factory holds for resource, in
	// every form; WaitsForResource, NamespaceListed and OverBudget ask
	// them.
	Informers(resource schema.GroupVersionResource) []Informer
	// BorrowName makes the factory report this module's metrics under
	// label, and leaves its informer name (WithInformerName, which
	// several factories share) to the caller: Shutdown does not release
	// it. Call it before the factory builds an informer.
	BorrowName(label string)
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
	// CustomResync are the types of WithCustomResyncConfig, in no order.
	CustomResync []reflect.Type
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
	Namespaces, Selectors, Tweak, Transform, Resync bool
}

// Informer is one informer a factory holds, as Factory.Informers returns
// it.
type Informer struct {
	// Name names it in errors (the root's InformerID).
	Name  string
	Hooks *informer.Hooks
	// FollowsSet says its namespaces follow the factory's set
	// (SetNamespaces).
	FollowsSet bool
}

// WaitsForResource reports whether f holds an informer of resource and
// every one of them waits for the server to serve it (WithAPIDiscovery).
func WaitsForResource(f Factory, resource schema.GroupVersionResource) bool {
	all := f.Informers(resource)
	for _, i := range all {
		if !i.Hooks.Absent() {
			return false
		}
	}
	return len(all) > 0
}

// NamespaceListed reports whether every informer of resource whose
// namespaces follow f's set (SetNamespaces) has synced namespace; while
// one has not, the last error of its list or watch of namespace, if any.
func NamespaceListed(f Factory, resource schema.GroupVersionResource, namespace string) (bool, error) {
	listed := true
	for _, i := range f.Informers(resource) {
		if !i.FollowsSet {
			continue
		}
		ok, err := i.Hooks.NamespaceListed(namespace)
		if err != nil {
			return false, fmt.Errorf("%s: namespace %s: %w", i.Name, namespace, err)
		}
		listed = listed && ok
	}
	return listed, nil
}

// OverBudget returns why f's informers of resource are stopped over a
// memory budget, or nil.
func OverBudget(f Factory, resource schema.GroupVersionResource) error {
	var errs []error
	for _, i := range f.Informers(resource) {
		errs = append(errs, i.Hooks.Stopped())
	}
	return errors.Join(errs...)
}
