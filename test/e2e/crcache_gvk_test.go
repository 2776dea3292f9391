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

package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/crcache"
)

// TestCRCacheMetadataKindUnderTransforms: metadata-only ConfigMaps are of
// kind ConfigMap for the transform and in the informer's store, in
// controller-runtime's cache (DefaultTransform) and in crcache with the
// transform given as the factory option WithResourceOptions(...).Transform,
// where main's crcache cached PartialObjectMetadata.
func TestCRCacheMetadataKindUnderTransforms(t *testing.T) {
	c := setup(t)
	mkConfigMaps(t, c, c.ns, "cm", 2)
	configMaps := corev1.SchemeGroupVersion.WithResource("configmaps")
	want := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	for name, build := range map[string]func(transform toolscache.TransformFunc) (cache.Cache, error){
		"controller-runtime": func(transform toolscache.TransformFunc) (cache.Cache, error) {
			return cache.New(c.cfg, cache.Options{DefaultTransform: transform})
		},
		"crcache": func(transform toolscache.TransformFunc) (cache.Cache, error) {
			return crcache.NewCache(informers.WithResourceOptions(configMaps, informers.ResourceOptions{Transform: transform}))(
				rest.CopyConfig(c.cfg), cache.Options{})
		},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "crcache" {
				// controller-runtime's cache leaves a watch.Filter
				// goroutine of its metadata watch behind.
				checkLeaks(t)
			}
			var mu sync.Mutex
			var seen []schema.GroupVersionKind
			cc, err := build(func(obj any) (any, error) {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, obj.(runtime.Object).GetObjectKind().GroupVersionKind())
				return obj, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(c.ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = cc.Start(ctx) }()
			defer func() { cancel(); <-done }()
			obj := &metav1.PartialObjectMetadata{}
			obj.SetGroupVersionKind(want)
			sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
			defer scancel()
			inf, err := cc.GetInformer(sctx, obj)
			if err != nil {
				t.Fatalf("GetInformer: %v", err)
			}
			if !cc.WaitForCacheSync(sctx) {
				t.Fatal("not synced")
			}
			withStore, ok := inf.(interface{ GetStore() toolscache.Store })
			if !ok {
				t.Fatalf("the informer %T has no store", inf)
			}
			items := withStore.GetStore().List()
			if len(items) < 2 {
				t.Fatalf("%d objects cached, want 2", len(items))
			}
			for _, o := range items {
				if got := o.(runtime.Object).GetObjectKind().GroupVersionKind(); got != want {
					t.Errorf("cached: kind %v, want %v", got, want)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, got := range seen {
				if got != want {
					t.Errorf("the transform saw kind %v, want %v", got, want)
				}
			}
		})
	}
}
