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

package conformance

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
)

// syncedRuns is how often each form repeats "mutate right after sync".
// Before "synced" waited for the first watch, the dynamic and metadata
// fakes lost the event in 8 and 15 of 100 runs.
const syncedRuns = 1000

// TestNoEventLostAfterSync: with the typed, dynamic and metadata fakes,
// an object deleted right after WaitForCacheSync returns reaches the
// handler as a delete, every time. The dynamic and metadata fakes answer a
// LIST and then a WATCH, and cannot replay what happened in between; the
// factory's "synced" includes the first watch, so nothing falls between.
func TestNoEventLostAfterSync(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 runs per form")
	}
	podsGVR := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	forms := []struct {
		name string
		// start builds a factory over one object, returns its informer
		// and a function that deletes the object through the fake.
		start func(t *testing.T) (informers.Factory, cache.SharedIndexInformer, func(context.Context) error)
	}{
		{"typed", func(t *testing.T) (informers.Factory, cache.SharedIndexInformer, func(context.Context) error) {
			client := fake.NewClientset(pod("a", "p1"))
			f, err := informers.New(client, 0)
			if err != nil {
				t.Fatal(err)
			}
			return f, f.Core().V1().Pods().Informer(), func(ctx context.Context) error {
				return client.CoreV1().Pods("a").Delete(ctx, "p1", metav1.DeleteOptions{})
			}
		}},
		{"dynamic", func(t *testing.T) (informers.Factory, cache.SharedIndexInformer, func(context.Context) error) {
			dyn := newDynamic(widget("a", "w1", "Widget"))
			f, err := informers.New(fake.NewClientset(), 0, informers.WithDynamicClient(dyn))
			if err != nil {
				t.Fatal(err)
			}
			gi, err := f.ForResource(widgetsGVR)
			if err != nil {
				t.Fatal(err)
			}
			return f, gi.Informer(), func(ctx context.Context) error {
				return dyn.Resource(widgetsGVR).Namespace("a").Delete(ctx, "w1", metav1.DeleteOptions{})
			}
		}},
		{"metadata", func(t *testing.T) (informers.Factory, cache.SharedIndexInformer, func(context.Context) error) {
			meta := newMetadata(podMeta("a", "p1"))
			f, err := informers.New(fake.NewClientset(), 0, informers.WithMetadataClient(meta))
			if err != nil {
				t.Fatal(err)
			}
			gi, err := f.ForMetadata(podsGVR)
			if err != nil {
				t.Fatal(err)
			}
			return f, gi.Informer(), func(ctx context.Context) error {
				return meta.Resource(podsGVR).Namespace("a").Delete(ctx, "p1", metav1.DeleteOptions{})
			}
		}},
	}
	for _, form := range forms {
		t.Run(form.name, func(t *testing.T) {
			t.Parallel()
			lost := 0
			for range syncedRuns {
				ctx, cancel := context.WithCancel(context.Background())
				f, inf, del := form.start(t)
				deleted := make(chan struct{}, 1)
				if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(any) { deleted <- struct{}{} }}); err != nil {
					t.Fatal(err)
				}
				f.Start(ctx.Done())
				sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
				if err := f.WaitForCacheSyncWithContext(sctx).AsError(); err != nil {
					t.Fatalf("sync: %v", err)
				}
				scancel()
				if err := del(ctx); err != nil {
					t.Fatalf("delete: %v", err)
				}
				// Only a lost event waits this long; no timing is measured.
				select {
				case <-deleted:
				case <-time.After(5 * time.Second):
					lost++
				}
				cancel()
				f.Shutdown()
			}
			t.Logf("%s: %d runs, %d deletes lost", form.name, syncedRuns, lost)
			if lost != 0 {
				t.Errorf("%s: %d of %d deletes made right after sync were lost", form.name, lost, syncedRuns)
			}
		})
	}
}
