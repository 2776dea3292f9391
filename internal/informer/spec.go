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
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/budget"
	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/shard"
)

// Spec is everything that decides how one informer is built, resolved once
// from the factory's options by the root's resolveSpec. Build reads
// nothing else.
type Spec struct {
	// Name names the informer in logs and errors (the root's InformerID);
	// Resource is what it lists and watches.
	Name     string
	Resource schema.GroupVersionResource
	// Typed wraps the built informer in its type-safe form, which the
	// factory then shares; nil for the dynamic and metadata forms.
	Typed func(cache.SharedIndexInformer) cache.SharedIndexInformer
	// NewInformer, if set, builds the informer instead of the factory's
	// list and watch: InformerFor's newFunc.
	NewInformer func(resync time.Duration) cache.SharedIndexInformer

	// Namespaces holds one "" for all namespaces (or a cluster-scoped
	// resource), several for a composite informer.
	Namespaces []string
	// FollowsSet says that Namespaces is the factory's set, which the
	// factory's SetNamespaces changes: the informer is then a composite
	// (internal/multinamespace) even of one namespace, and Built.Namespaces
	// changes it.
	FollowsSet bool
	Resync     time.Duration
	Indexers   cache.Indexers
	// Identifier is the informer's metrics identity (WithInformerName).
	Identifier cache.InformerNameAndResource

	// ListWatch is what every namespace's list and watch calls are made
	// of: one value, handed to internal/listwatch as it is.
	ListWatch listwatch.Options
	// Semantics is what the reflector learns from the ListerWatcher about
	// the watch-list stream (listwatch.Semantics).
	Semantics any

	// Transform is the user's transform, then the lean one: what an
	// informer of NewInformer is given. InformerTransform is what the
	// factory's own informers are given: ListWatch.Pretransform's, wrapped
	// by ListWatch.Departures under a membership.
	Transform         cache.TransformFunc
	InformerTransform cache.TransformFunc

	// Shard is the shard it starts with (nil: not sharded), Selector a
	// fixed shard's selector, and ShardOption the option that set it, for
	// errors.
	Shard       *shard.Source
	Selector    apisharding.Selector
	ShardOption string

	// Refused, if set, is why the informer must not run.
	Refused error

	// MemoryPool is the factory's memory budget (nil: none), MemoryBudget
	// the resource's own (0: none), and Narrow says what would narrow the
	// informer when it passes one (internal/budget).
	MemoryPool   *budget.Pool
	MemoryBudget int64
	Narrow       string
}

// Name is how an informer's name in logs and errors (Spec.Name, the
// root's InformerID.String) names its resource: "pods (v1)",
// "widgets.example.com/v1", or for an informer InformerFor built for a
// type this module does not know, its Go type.
func Name(resource schema.GroupVersionResource, typ reflect.Type) string {
	switch r := resource; {
	case r.Resource == "" && typ != nil:
		return typ.String()
	case r.Group == "":
		return fmt.Sprintf("%s (%s)", r.Resource, r.Version)
	default:
		return fmt.Sprintf("%s.%s/%s", r.Resource, r.Group, r.Version)
	}
}

// Finish sets what follows from a resolved spec: a fixed shard's
// selector, or the refusal of an informer of NewInformer whose shard
// follows a membership; and, for an informer the factory's own list and
// watch serve, what the list/watch layer makes of the spec: the per-page
// pretransform, the departures wrapper of an informer that follows a
// shard membership, and the stream semantics.
func (s *Spec) Finish(followsMembership bool) {
	switch {
	case s.Shard == nil:
	case !followsMembership:
		s.Selector = s.Shard.Selector()
	case s.NewInformer != nil && s.Refused == nil:
		// A fixed selector cannot follow a membership: fail closed.
		s.Refused = fmt.Errorf("not started: %s: an informer built by InformerFor's newFunc cannot follow a shard membership; use the generated accessors or ForResource", s.ShardOption)
	}
	lw := &s.ListWatch
	if s.NewInformer != nil {
		return
	}
	// The factory's own list and watch transform each page of a LIST
	// as it arrives (internal/listwatch), so the informer is given
	// the pretransform's Transform.
	if s.Transform != nil {
		lw.Pretransform = listwatch.NewPretransform(s.Transform)
		s.InformerTransform = lw.Pretransform.Transform
	}
	if followsMembership {
		lw.Departures = &listwatch.Departures{}
		s.InformerTransform = lw.Departures.Transform(s.InformerTransform)
	}
	s.Semantics = listwatch.Semantics(lw.Client, lw.Mode)
}
