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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/budget"
	"github.com/kubeinformers/informers/internal/informer"
	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/projection"
	"github.com/kubeinformers/informers/internal/shard"
	"github.com/kubeinformers/informers/internalinterfaces"
)

// This file resolves everything that decides one informer into its spec
// (internal/informer's Spec), before anything is built: the precedence of
// ResourceOptions over the factory-wide options, the transform chain, the
// shard, and which informers an invalid option refuses (fail closed). It
// is the only code that reads the factory's option values for an
// informer; the build step (internal/informer) reads only the spec.

// recipe is what a creation path (create.go's adapters) asks for: which
// informer, and where its objects come from.
type recipe struct {
	id InformerID
	// namespaced is whether the resource lives in namespaces (true when not
	// known, as for a custom resource).
	namespaced bool
	// group, when set, makes namespace and tweak the base of the
	// informer's namespaces and requests: those a typed accessor's group
	// was built with. Otherwise the factory's apply.
	group     bool
	namespace string
	tweak     internalinterfaces.TweakListOptionsFunc
	// requests returns the list and watch calls of a namespace; nil when
	// there is no client, which missing then names.
	requests func(namespace string) listwatch.Requests
	missing  string
	// client is what the requests go through: a fake client makes the
	// informer list and watch rather than stream, as client-go's do.
	client  any
	example runtime.Object
	// typed wraps the built informer in its type-safe form, which the
	// factory then shares; nil for the dynamic and metadata forms.
	typed func(cache.SharedIndexInformer) cache.SharedIndexInformer
	// newInformer, if set, builds the informer instead of the factory's
	// list and watch: InformerFor's newFunc.
	newInformer func(resync time.Duration) cache.SharedIndexInformer
	// refused is a reason not to run that the creation path found (Bind).
	refused error
}

// resolveSpec applies the options to a recipe, in this order: identity
// and source, refusal, namespaces and requests, resync and indexers, the
// user's and the lean transform, list mode and metrics identity; then the
// shard; then what follows from them (Spec.Finish: the shard's selector
// or refusal, the per-page pretransform, the departures wrapper, the
// stream semantics). Build (internal/informer) reads nothing but the spec
// it returns.
func (f *sharedInformerFactory) resolveSpec(req recipe) *informer.Spec {
	resource := req.id.Resource
	ro := f.resourceOptions[resource]
	s := &informer.Spec{
		Name: req.id.String(), Resource: resource, Typed: req.typed, NewInformer: req.newInformer,
		ListWatch: listwatch.Options{
			Resource: resource, Requests: req.requests, Missing: req.missing, Client: req.client, Example: req.example,
		},
	}
	lw := &s.ListWatch
	s.Refused = f.optionErrs.Refusal(resource, req.namespaced) // internal/optcheck
	if req.refused != nil {
		s.Refused = errors.Join(req.refused, s.Refused)
	}

	namespace, tweak := f.namespace, f.tweakListOptions
	if req.group {
		namespace, tweak = req.namespace, req.tweak
	}
	switch {
	case !req.namespaced:
		s.Namespaces = []string{metav1.NamespaceAll}
	case len(ro.Namespaces) > 0:
		s.Namespaces = slices.Clone(ro.Namespaces)
	case len(f.namespaces) > 0 && namespace == metav1.NamespaceAll:
		s.Namespaces = slices.Clone(f.namespaces)
		s.FollowsSet = f.namespacesChangeable() == nil
	default:
		s.Namespaces = []string{namespace}
		// A group the factory made has the factory's namespace; one a
		// user made with another keeps it.
		s.FollowsSet = namespace != metav1.NamespaceAll && namespace == f.namespace && f.namespacesChangeable() == nil
	}
	if s.FollowsSet && f.currentNamespaces != nil {
		s.Namespaces = slices.Clone(f.currentNamespaces) // namespaces.go
	}
	lw.Tweak = listwatch.JoinTweaks(tweak, ro.LabelSelector, ro.FieldSelector, ro.TweakListOptions)

	s.Resync = f.defaultResync
	if period, ok := f.customResync[req.id.Type]; ok && req.id.Form == FormTyped {
		s.Resync = period
	}
	if ro.ResyncPeriod > 0 {
		s.Resync = ro.ResyncPeriod
	}
	s.Indexers = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	maps.Copy(s.Indexers, ro.Indexers)

	user := f.transform
	if ro.Transform != nil {
		user = ro.Transform
	}
	keep, err := projection.New(ro.KeepFields, req.id.Type)
	s.Refused = errors.Join(s.Refused, projection.Refusal(resource, err))
	s.Transform = listwatch.ChainTransforms(listwatch.ChainTransforms(user, keep.TransformFunc()), f.leanTransform)

	mode := f.listMode
	if ro.ListMode != ListModeAuto {
		mode = ro.ListMode
	}
	lw.Mode = listModes[mode]
	lw.PagedFallback = mode == ListModeAuto && (f.leanTransform != nil || keep != nil || req.id.Form == FormMetadata)
	if req.id.Form != FormMetadata {
		// A metadata informer would take the typed informer's metrics
		// identity when it came first; the typed one keeps it.
		s.Identifier = f.informerName.WithResource(resource)
	}

	followsMembership := false
	switch {
	case ro.ShardSelector != nil:
		s.Shard = shard.Static(ro.ShardSelector, false, 0) // nil for an empty one: unsharded
		s.ShardOption = fmt.Sprintf("WithResourceOptions(%v): ShardSelector %q", resource, ro.ShardSelector.String())
	case f.shard != nil && f.shard.AppliesTo(req.namespaced):
		s.Shard, s.ShardOption = f.shard, f.shardOption
		followsMembership = f.shard.Follows()
	}

	builtInTyped := req.id.Form == FormTyped && req.typed != nil && isBuiltIn(resource)
	lw.Protobuf = (f.protobuf || ro.Protobuf) && builtInTyped
	if builtInTyped && user == nil {
		// Only where the lean transform is the first to see an object:
		// a user's transform is given the object as decoded.
		lw.Strip, lw.Strip.Project = f.leanStrip, keep
	}

	if f.discovery != nil {
		lw.Discovery = f.discovery
	}
	s.MemoryPool, s.MemoryBudget = f.memoryPool, ro.MemoryBudget
	if b, ok := f.memoryBudgets[resource]; ok {
		s.MemoryBudget = b
	}
	s.Narrow = budget.Narrowing(req.namespaced, len(s.Namespaces) == 1 && s.Namespaces[0] == "", ro.LabelSelector != "" || ro.FieldSelector != "", keep != nil, req.id.Form == FormMetadata)
	s.Finish(followsMembership) // internal/informer/spec.go
	return s
}
