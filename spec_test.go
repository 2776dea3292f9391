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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/informer"
	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/shard"
	"github.com/kubeinformers/informers/sharding"
)

// settableInformer is an informer built by InformerFor's newFunc that
// takes a shard selector and may refuse what the factory gives it.
type settableInformer struct {
	cache.SharedIndexInformer
	selectorErr, transformErr, handlerErr error
	selector                              apisharding.Selector
}

func (s *settableInformer) SetShardSelector(sel apisharding.Selector) error {
	s.selector = sel
	return s.selectorErr
}

func (s *settableInformer) SetTransform(cache.TransformFunc) error { return s.transformErr }

func (s *settableInformer) SetWatchErrorHandlerWithContext(cache.WatchErrorHandlerWithContext) error {
	return s.handlerErr
}

// TestNewFuncShard: an informer built by InformerFor's newFunc gets a
// static shard through its own SetShardSelector; if it refuses it, the
// informer is refused (fail closed), naming the error. A transform or an
// error handler it refuses is logged, not fatal.
func TestNewFuncShard(t *testing.T) {
	for _, tc := range []struct {
		name    string
		inf     *settableInformer
		refused string
	}{
		{"takes it", &settableInformer{}, ""},
		{"refuses it", &settableInformer{selectorErr: errors.New("no shards here")}, "not started: no shards here"},
		{"refuses transform and handler", &settableInformer{transformErr: errors.New("running"), handlerErr: errors.New("running")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := New(fake.NewClientset(), 0, WithShard(sharding.FieldUID, 0, 2), WithTransform(TransformStripManagedFields()))
			if err != nil {
				t.Fatal(err)
			}
			f.InformerFor(&corev1.Secret{}, func(_ kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
				tc.inf.SharedIndexInformer = cache.NewSharedIndexInformer(nil, &corev1.Secret{}, resync, cache.Indexers{})
				return tc.inf
			})
			if tc.inf.selector == nil || !strings.Contains(tc.inf.selector.String(), "object.metadata.uid") {
				t.Errorf("SetShardSelector got %v, want the factory's uid shard", tc.inf.selector)
			}
			e := f.(*sharedInformerFactory).byType[typeOfSecret]
			switch {
			case tc.refused == "" && e.refused != nil:
				t.Errorf("refused: %v", e.refused)
			case tc.refused != "" && (e.refused == nil || !strings.Contains(e.refused.Error(), tc.refused)):
				t.Errorf("refused: %v, want %q", e.refused, tc.refused)
			}
		})
	}
}

var typeOfSecret = reflect.TypeFor[*corev1.Secret]()

// TestNewFuncMembership: an informer built by InformerFor's newFunc cannot
// follow a membership, whose ranges a fixed selector cannot track: its
// spec is refused before anything is built.
func TestNewFuncMembership(t *testing.T) {
	f := newFactory(fake.NewClientset(), 0, nil, false)
	f.settings.Shard, f.settings.ShardOption = shard.Membership(sharding.FieldUID), "WithShardMembership"
	s := f.resolveSpec(recipe{id: InformerID{Form: FormTyped, Type: typeOfSecret}, Request: informer.Request{
		Namespaced:  true,
		NewInformer: func(time.Duration) cache.SharedIndexInformer { return nil },
	}})
	if s.Refused == nil || !strings.Contains(s.Refused.Error(), "cannot follow a shard membership") {
		t.Errorf("refused: %v, want the membership named", s.Refused)
	}
	if s.ListWatch.Departures != nil || s.ListWatch.Pretransform != nil {
		t.Error("a newFunc informer got the factory's list/watch transforms")
	}
}

// TestSpecStrip: a built-in typed informer of a lean factory decodes
// protobuf without what the lean transform drops, unless a transform of
// the user's sees the object first; what it leaves out follows the lean
// options; dynamic and metadata informers, and custom types, decode in
// full.
func TestSpecStrip(t *testing.T) {
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	typed := func(i cache.SharedIndexInformer) cache.SharedIndexInformer { return i }
	podRecipe := recipe{id: InformerID{Form: FormTyped, Resource: pods, Type: reflect.TypeFor[*corev1.Pod]()}, Request: informer.Request{Namespaced: true, Typed: typed}}
	identity := func(o any) (any, error) { return o, nil }
	custom := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	for _, tc := range []struct {
		name    string
		options []SharedInformerOption
		req     recipe
		want    listwatch.Strip
	}{
		{"not lean", nil, podRecipe, listwatch.Strip{}},
		{"lean", []SharedInformerOption{WithLeanMemory()}, podRecipe, listwatch.Strip{ManagedFields: true}},
		{"lean, last-applied too", []SharedInformerOption{WithLeanMemory(LeanDropLastApplied())}, podRecipe, listwatch.Strip{ManagedFields: true, LastApplied: true}},
		{"lean, managedFields kept", []SharedInformerOption{WithLeanMemory(LeanKeepManagedFields())}, podRecipe, listwatch.Strip{}},
		{"lean after a user transform", []SharedInformerOption{WithTransform(identity), WithLeanMemory()}, podRecipe, listwatch.Strip{}},
		{"lean after a resource's transform", []SharedInformerOption{WithLeanMemory(), WithResourceOptions(pods, ResourceOptions{Transform: identity})}, podRecipe, listwatch.Strip{}},
		{"lean, dynamic", []SharedInformerOption{WithLeanMemory()}, recipe{id: InformerID{Form: FormDynamic, Resource: pods}, Request: informer.Request{Namespaced: true}}, listwatch.Strip{}},
		{"lean, metadata", []SharedInformerOption{WithLeanMemory()}, recipe{id: InformerID{Form: FormMetadata, Resource: pods}, Request: informer.Request{Namespaced: true}}, listwatch.Strip{}},
		{"lean, custom type", []SharedInformerOption{WithLeanMemory()}, recipe{id: InformerID{Form: FormTyped, Resource: custom, Type: reflect.TypeFor[*corev1.Pod]()}, Request: informer.Request{Typed: typed}}, listwatch.Strip{}},
	} {
		f := newFactory(fake.NewClientset(), 0, tc.options, false)
		if got := f.resolveSpec(tc.req).ListWatch.Strip; got != tc.want {
			t.Errorf("%s: strip %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
