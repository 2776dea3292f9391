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
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/binding"
	"github.com/kubeinformers/informers/internal/informer"
	"github.com/kubeinformers/informers/internal/optcheck"
	"github.com/kubeinformers/informers/internal/projection"
	"github.com/kubeinformers/informers/internalinterfaces"
)

// ResourceOptions configures the informers of one resource, in every form:
// the typed accessor (factory.Core().V1().Pods()), ForResource, and the
// dynamic and metadata informers. Give it with [WithResourceOptions]. A
// field left at its zero value falls back to the factory-wide setting.
//
// Precedence, field by field:
//
//   - Namespaces replaces the factory's [WithNamespace] or [WithNamespaces]
//     for this resource. It may not be set for a cluster-scoped resource.
//   - LabelSelector and FieldSelector are combined (AND) with whatever the
//     factory-wide [WithTweakListOptions] sets: the factory's tweak runs
//     first, then these selectors are appended to the request's.
//   - TweakListOptions runs last, after the factory's tweak and the
//     selectors above, so it sees and may change all of them.
//   - Transform replaces the factory's [WithTransform] for this resource.
//     KeepFields, then the lean-memory transform ([WithLeanMemory]),
//     apply to its result.
//   - ResyncPeriod, if positive, replaces [WithCustomResyncConfig] and the
//     factory's default resync period.
//   - Indexers are added to the namespace index every factory informer
//     has; they may not redefine it.
//   - ListMode, if set, replaces the factory's [WithListMode].
//   - Protobuf, if set, turns [WithProtobuf] on for this resource's typed
//     informer; it is an error on a resource that is not built in.
//   - ShardSelector replaces the factory's shard ([WithShardSelector],
//     [WithShard] or [WithShardMembership]) for this
//     resource; an empty one ([apisharding.Everything]) leaves the resource
//     unsharded.
type ResourceOptions struct {
	// Namespaces limits a namespaced resource to these namespaces: one
	// list and watch per namespace, never a cluster-wide request.
	Namespaces []string
	// LabelSelector and FieldSelector filter on the server, in the syntax
	// of [metav1.ListOptions].
	LabelSelector string
	FieldSelector string
	// TweakListOptions changes every list and watch request of the
	// resource.
	TweakListOptions internalinterfaces.TweakListOptionsFunc
	// Transform is applied to objects before they are cached.
	Transform cache.TransformFunc
	// ResyncPeriod is how often handlers get every object again.
	ResyncPeriod time.Duration
	// Indexers are added to the informer.
	Indexers cache.Indexers
	// ShardSelector, if set, limits this resource to the objects it
	// matches, sent as given, as [WithShardSelector] does factory-wide.
	// Build it with apimachinery's sharding package, or from this
	// module's with [sharding.Selector.APISelector].
	ShardSelector apisharding.Selector
	// ListMode is how the resource's informers get their initial state;
	// see [ListMode].
	ListMode ListMode
	// Protobuf makes the resource's typed informer ask for protobuf, as
	// [WithProtobuf] does factory-wide. Only built-in resources have it.
	Protobuf bool
	// KeepFields keeps only these fields of cached objects, by JSON path
	// ("spec.nodeName"; a path keeps its subtree), and identity, labels,
	// owners, finalizers, versions and timestamps of metadata; handlers
	// and indexers see the rest at its zero value. A path the resource's
	// Go type lacks is an error. Metadata informers refuse it. See the
	// repository's docs/lean-memory.md.
	KeepFields []string
	// MemoryBudget, if positive, caps the estimate of the resource's
	// informer in bytes, as [WithMemoryBudget] caps the factory's (both
	// apply); negative is an error. See [Factory.SetResourceMemoryBudget].
	MemoryBudget int64
}

// WithResourceOptions sets the options of one resource; see
// [ResourceOptions] for how they combine with the factory-wide ones.
// Invalid values and a resource given twice are errors from [New] that
// name the resource and the value. Under the client-go compatible
// constructors the resource's informers then do not run: they never list
// it unfiltered (see [NewSharedInformerFactoryWithOptions]). A resource
// that is not built in is accepted, since a typed binding made after New
// (gensupport.Bind) may serve it; if nothing serves it once the factory
// runs, [Factory.Notices] names it.
func WithResourceOptions(resource schema.GroupVersionResource, options ResourceOptions) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		errs := checkResourceOptions(resource, options)
		if _, dup := factory.resourceOptions[resource]; dup {
			factory.invalidNarrowing(fmt.Errorf("WithResourceOptions(%v): given twice", resource), optcheck.Of(resource))
			return factory
		}
		if len(errs) > 0 {
			factory.invalidNarrowing(fmt.Errorf("WithResourceOptions(%v): %w", resource, errors.Join(errs...)), optcheck.Of(resource))
			return factory
		}
		if factory.resourceOptions == nil {
			factory.resourceOptions = make(map[schema.GroupVersionResource]ResourceOptions)
		}
		options.Namespaces, options.KeepFields = slices.Clone(options.Namespaces), slices.Clone(options.KeepFields)
		options.Indexers = maps.Clone(options.Indexers)
		factory.resourceOptions[resource] = options
		return factory
	}
}

// checkResourceOptions says what is wrong with the options of resource,
// as far as can be told without the rest of the factory's options
// (internal/optcheck).
func checkResourceOptions(resource schema.GroupVersionResource, o ResourceOptions) []error {
	return optcheck.Resource{
		Resource: resource, BuiltIn: isBuiltIn(resource), Namespaced: IsNamespaced(resource),
		Hint:       binding.Suggest(resource, supportedResources),
		Namespaces: o.Namespaces, LabelSelector: o.LabelSelector, FieldSelector: o.FieldSelector,
		ShardSelector: o.ShardSelector, Protobuf: o.Protobuf, ResyncPeriod: o.ResyncPeriod, Indexers: o.Indexers,
		KeepFields: projection.CheckResource(typeResources, resource, o.KeepFields),
		ListMode:   checkListMode(o.ListMode), MemoryBudget: o.MemoryBudget,
	}.Check()
}

// settings are o as internal/informer resolves them.
func (o ResourceOptions) settings() informer.Resource {
	return informer.Resource{
		Namespaces: o.Namespaces, LabelSelector: o.LabelSelector, FieldSelector: o.FieldSelector,
		Tweak: o.TweakListOptions, Resync: o.ResyncPeriod, Indexers: o.Indexers, Transform: o.Transform,
		KeepFields: o.KeepFields, Mode: listModes[o.ListMode], ShardSelector: o.ShardSelector,
		Protobuf: o.Protobuf, MemoryBudget: o.MemoryBudget,
	}
}
