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

package informer

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/budget"
	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/projection"
	"github.com/kubeinformers/informers/internal/served"
	"github.com/kubeinformers/informers/internal/shard"
)

// This file resolves everything that decides one informer into its Spec,
// before anything is built: the precedence of a resource's own options
// over the factory's, the transform chain, the shard, and which informers
// an invalid option refuses (fail closed). The root hands it the
// factory's option values (Settings, resolved once), the resource's
// (Resource) and what the creation path asks for (Request); Build then
// reads only the Spec.

// Settings are the factory's option values that decide its informers: the
// root's factoryOptions, resolved once when the factory is built.
type Settings struct {
	// Namespace is WithNamespace's ("" for all namespaces), Namespaces
	// WithNamespaces'; Changeable says SetNamespaces may change them.
	Namespace  string
	Namespaces []string
	Changeable bool
	Tweak      func(*metav1.ListOptions)
	// Resync is the factory's default resync period, CustomResync
	// WithCustomResyncConfig's per Go type (typed informers only).
	Resync       time.Duration
	CustomResync map[reflect.Type]time.Duration
	// Transform is WithTransform's; Lean, WithLeanMemory's, runs after
	// it, and LeanStrip is what Lean drops, which a built-in typed
	// informer's protobuf decoding then leaves out.
	Transform, Lean cache.TransformFunc
	LeanStrip       listwatch.Strip
	Mode            listwatch.Mode
	InformerName    *cache.InformerName
	// Shard is the factory-wide shard (nil: none), set by ShardOption.
	Shard       *shard.Source
	ShardOption string
	Protobuf    bool
	Discovery   *served.Checker
	MemoryPool  *budget.Pool
	// Refusal is why an invalid narrowing option refuses the informers of
	// a resource, or nil (internal/optcheck).
	Refusal func(resource schema.GroupVersionResource, namespaced bool) error
}

// Resource are one resource's own options: the root's ResourceOptions,
// checked, with the list mode mapped (ModeAuto: the factory's).
type Resource struct {
	Namespaces                   []string
	LabelSelector, FieldSelector string
	Tweak                        func(*metav1.ListOptions)
	Resync                       time.Duration
	Indexers                     cache.Indexers
	Transform                    cache.TransformFunc
	KeepFields                   []string
	Mode                         listwatch.Mode
	ShardSelector                apisharding.Selector
	Protobuf                     bool
	MemoryBudget                 int64
}

// Request is what a creation path asks for: which informer, and where its
// objects come from.
type Request struct {
	// Name, Resource and Type identify the informer (the root's
	// InformerID); TypedForm and Metadata say its form (else dynamic), and
	// BuiltIn whether the resource has a generated typed informer.
	Name                string
	Resource            schema.GroupVersionResource
	Type                reflect.Type
	TypedForm, Metadata bool
	BuiltIn             bool
	// Namespaced is whether the resource lives in namespaces (true when
	// not known, as for a custom resource).
	Namespaced bool
	// Group, when set, makes Namespace and Tweak the base of the
	// informer's namespaces and requests: those a typed accessor's group
	// was built with. Otherwise the factory's apply.
	Group     bool
	Namespace string
	Tweak     func(*metav1.ListOptions)
	// Current is the set the factory's SetNamespaces last gave, nil until
	// then.
	Current []string
	// Requests returns the list and watch calls of a namespace; nil when
	// there is no client, which Missing then names.
	Requests func(namespace string) listwatch.Requests
	Missing  string
	// Client is what the requests go through: a fake client makes the
	// informer list and watch rather than stream, as client-go's do.
	Client  any
	Example runtime.Object
	// Typed wraps the built informer in its type-safe form, which the
	// factory then shares; nil for the dynamic and metadata forms.
	Typed func(cache.SharedIndexInformer) cache.SharedIndexInformer
	// NewInformer, if set, builds the informer instead of the factory's
	// list and watch: InformerFor's newFunc.
	NewInformer func(resync time.Duration) cache.SharedIndexInformer
	// Refused is a reason not to run that the creation path found (Bind).
	Refused error
}

// Resolve applies the options to a request, in this order: identity and
// source, refusal, namespaces and requests, resync and indexers, the
// user's and the lean transform, list mode and metrics identity; then the
// shard; then what follows from them (Spec.Finish: the shard's selector
// or refusal, the per-page pretransform, the departures wrapper, the
// stream semantics).
func Resolve(req *Request, f *Settings, ro *Resource) *Spec {
	resource := req.Resource
	s := &Spec{
		Name: req.Name, Resource: resource, Typed: req.Typed, NewInformer: req.NewInformer,
		ListWatch: listwatch.Options{
			Resource: resource, Requests: req.Requests, Missing: req.Missing, Client: req.Client, Example: req.Example,
		},
	}
	lw := &s.ListWatch
	s.Refused = f.Refusal(resource, req.Namespaced)
	if req.Refused != nil {
		s.Refused = errors.Join(req.Refused, s.Refused)
	}

	namespace, tweak := f.Namespace, f.Tweak
	if req.Group {
		namespace, tweak = req.Namespace, req.Tweak
	}
	switch {
	case !req.Namespaced:
		s.Namespaces = []string{metav1.NamespaceAll}
	case len(ro.Namespaces) > 0:
		s.Namespaces = slices.Clone(ro.Namespaces)
	case len(f.Namespaces) > 0 && namespace == metav1.NamespaceAll:
		s.Namespaces = slices.Clone(f.Namespaces)
		s.FollowsSet = f.Changeable
	default:
		s.Namespaces = []string{namespace}
		// A group the factory made has the factory's namespace; one a
		// user made with another keeps it.
		s.FollowsSet = namespace != metav1.NamespaceAll && namespace == f.Namespace && f.Changeable
	}
	if s.FollowsSet && req.Current != nil {
		s.Namespaces = slices.Clone(req.Current)
	}
	lw.Tweak = listwatch.JoinTweaks(tweak, ro.LabelSelector, ro.FieldSelector, ro.Tweak)

	s.Resync = f.Resync
	if period, ok := f.CustomResync[req.Type]; ok && req.TypedForm {
		s.Resync = period
	}
	if ro.Resync > 0 {
		s.Resync = ro.Resync
	}
	s.Indexers = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	maps.Copy(s.Indexers, ro.Indexers)

	user := f.Transform
	if ro.Transform != nil {
		user = ro.Transform
	}
	keep, err := projection.New(ro.KeepFields, req.Type)
	s.Refused = errors.Join(s.Refused, projection.Refusal(resource, err))
	s.Transform = listwatch.ChainTransforms(listwatch.ChainTransforms(user, keep.TransformFunc()), f.Lean)

	lw.Mode = f.Mode
	if ro.Mode != listwatch.ModeAuto {
		lw.Mode = ro.Mode
	}
	lw.PagedFallback = lw.Mode == listwatch.ModeAuto && (f.Lean != nil || keep != nil || req.Metadata)
	if !req.Metadata {
		// A metadata informer would take the typed informer's metrics
		// identity when it came first; the typed one keeps it.
		s.Identifier = f.InformerName.WithResource(resource)
	}

	followsMembership := false
	switch {
	case ro.ShardSelector != nil:
		s.Shard = shard.Static(ro.ShardSelector, false, 0) // nil for an empty one: unsharded
		s.ShardOption = fmt.Sprintf("WithResourceOptions(%v): ShardSelector %q", resource, ro.ShardSelector.String())
	case f.Shard != nil && f.Shard.AppliesTo(req.Namespaced):
		s.Shard, s.ShardOption = f.Shard, f.ShardOption
		followsMembership = f.Shard.Follows()
	}

	builtInTyped := req.TypedForm && req.Typed != nil && req.BuiltIn
	lw.Protobuf = (f.Protobuf || ro.Protobuf) && builtInTyped
	if builtInTyped && user == nil {
		// Only where the lean transform is the first to see an object:
		// a user's transform is given the object as decoded.
		lw.Strip, lw.Strip.Project = f.LeanStrip, keep
	}

	if f.Discovery != nil {
		lw.Discovery = f.Discovery
	}
	s.MemoryPool, s.MemoryBudget = f.MemoryPool, ro.MemoryBudget
	s.Narrow = budget.Narrowing(req.Namespaced, len(s.Namespaces) == 1 && s.Namespaces[0] == "", ro.LabelSelector != "" || ro.FieldSelector != "", keep != nil, req.Metadata)
	s.Finish(followsMembership)
	return s
}
