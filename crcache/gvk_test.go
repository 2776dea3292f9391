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

package crcache

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	informers "github.com/kubeinformers/informers"
)

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// kinds records the kinds a transform is given.
type kinds struct {
	mu   sync.Mutex
	seen []schema.GroupVersionKind
}

func (k *kinds) transform(obj any) (any, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seen = append(k.seen, obj.(runtime.Object).GetObjectKind().GroupVersionKind())
	return obj, nil
}

func (k *kinds) get() []schema.GroupVersionKind {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]schema.GroupVersionKind(nil), k.seen...)
}

// serverPartial is a Pod's metadata as the API server sends it: of kind
// PartialObjectMetadata.
func serverPartial(name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "1", Labels: map[string]string{"team": "a"}},
	}
}

func unstructuredPod(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(podGVK)
	u.SetName(name)
	u.SetNamespace("default")
	return u
}

// startWithFakes builds a cache over fake dynamic and metadata clients that
// serve Pods, one in the list and one by a watch event once synced (add),
// and starts it.
func startWithFakes(t *testing.T, opts cache.Options, options ...informers.SharedInformerOption) (c *Cache, add func()) {
	t.Helper()
	if opts.Mapper == nil {
		opts.Mapper = mapper()
	}
	c, err := newCache(&rest.Config{Host: "https://example.invalid"}, opts, options)
	if err != nil {
		t.Fatalf("newCache: %v", err)
	}
	meta := metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	events := watch.NewFakeWithChanSize(1, false)
	meta.PrependReactor("list", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &metav1.List{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []runtime.RawExtension{{Object: serverPartial("a")}}}, nil
	})
	meta.PrependWatchReactor("pods", func(clienttesting.Action) (bool, watch.Interface, error) {
		return true, events, nil
	})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{podsGVR: "PodList"}, unstructuredPod("a"))
	c.metadata, c.dynamic = meta, dyn

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	return c, func() {
		events.Add(serverPartial("b"))
		if _, err := dyn.Resource(podsGVR).Namespace("default").Create(context.Background(), unstructuredPod("b"), metav1.CreateOptions{}); err != nil {
			t.Errorf("create: %v", err)
		}
	}
}

// TestTransformsSeeTheKind: a metadata-only or unstructured Pod is of kind
// Pod for every transform that applies (ByObject, DefaultTransform, the
// factory's WithTransform, WithResourceOptions' Transform) and in the
// informer's store, from the list and from a watch event, as in
// controller-runtime, which sets the kind in its list and watch.
func TestTransformsSeeTheKind(t *testing.T) {
	sources := []struct {
		name  string
		apply func(k *kinds) (cache.Options, []informers.SharedInformerOption)
	}{{
		name: "ByObject",
		apply: func(k *kinds) (cache.Options, []informers.SharedInformerOption) {
			return cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: k.transform}}}, nil
		},
	}, {
		name: "DefaultTransform",
		apply: func(k *kinds) (cache.Options, []informers.SharedInformerOption) {
			return cache.Options{DefaultTransform: k.transform}, nil
		},
	}, {
		name: "WithTransform",
		apply: func(k *kinds) (cache.Options, []informers.SharedInformerOption) {
			return cache.Options{}, []informers.SharedInformerOption{informers.WithTransform(k.transform)}
		},
	}, {
		name: "WithResourceOptions",
		apply: func(k *kinds) (cache.Options, []informers.SharedInformerOption) {
			return cache.Options{}, []informers.SharedInformerOption{informers.WithResourceOptions(podsGVR, informers.ResourceOptions{Transform: k.transform})}
		},
	}}
	forms := []struct {
		name string
		obj  func() client.Object
	}{{
		name: "metadata",
		obj: func() client.Object {
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(podGVK)
			return m
		},
	}, {
		name: "unstructured",
		obj:  func() client.Object { return unstructuredPod("") },
	}}
	for _, source := range sources {
		for _, form := range forms {
			t.Run(source.name+"/"+form.name, func(t *testing.T) {
				k := &kinds{}
				opts, options := source.apply(k)
				c, add := startWithFakes(t, opts, options...)
				ctx, cancel := context.WithTimeout(context.Background(), wait.ForeverTestTimeout)
				defer cancel()
				inf, err := c.GetInformer(ctx, form.obj())
				if err != nil {
					t.Fatalf("GetInformer: %v", err)
				}
				add()
				store := inf.(toolscache.SharedIndexInformer).GetStore()
				for len(store.List()) < 2 {
					if ctx.Err() != nil {
						t.Fatalf("the watch event never arrived: %d objects", len(store.List()))
					}
					time.Sleep(10 * time.Millisecond)
				}
				for _, obj := range store.List() {
					if got := obj.(runtime.Object).GetObjectKind().GroupVersionKind(); got != podGVK {
						t.Errorf("cached %s: kind %v, want %v", obj.(client.Object).GetName(), got, podGVK)
					}
				}
				seen := k.get()
				if len(seen) < 2 {
					t.Fatalf("the transform saw %d objects, want 2", len(seen))
				}
				for _, gvk := range seen {
					if gvk != podGVK {
						t.Errorf("the transform saw kind %v, want %v", gvk, podGVK)
					}
				}
			})
		}
	}
}
