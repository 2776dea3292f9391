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

// Package clientgo_test runs clientgo.Adapt the way a library that takes
// client-go's factory type uses it, against a fake clientset.
package clientgo_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/clientgo"
)

// consumer stands for a library such as k8s.io/cloud-provider, whose
// SetInformers takes client-go's factory type.
type consumer struct {
	pods, nodes cache.SharedIndexInformer
	events      chan string
}

func (c *consumer) SetInformers(f clientgoinformers.SharedInformerFactory) {
	c.pods = f.Core().V1().Pods().Informer()
	c.nodes = f.Core().V1().Nodes().Informer()
	for kind, inf := range map[string]cache.SharedIndexInformer{"pod": c.pods, "node": c.nodes} {
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { c.events <- "add " + kind + " " + obj.(metav1.Object).GetName() },
			UpdateFunc: func(_, obj any) {
				c.events <- "update " + kind + " " + obj.(metav1.Object).GetName()
			},
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				c.events <- "delete " + kind + " " + obj.(metav1.Object).GetName()
			},
		})
		if err != nil {
			panic(err)
		}
	}
}

// requests counts the fake clientset's requests by verb and resource.
func requests(client *fake.Clientset, verb, resource string) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func TestConsumerSharesTheFactory(t *testing.T) {
	for _, order := range []string{"factory first", "consumer first"} {
		t.Run(order, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			client := fake.NewClientset(
				&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1"}},
				&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
			)
			f := informers.NewSharedInformerFactory(client, 0)
			view := clientgo.Adapt(f)
			c := &consumer{events: make(chan string, 100)}

			var ourPods, ourNodes cache.SharedIndexInformer
			if order == "factory first" {
				ourPods, ourNodes = f.Core().V1().Pods().Informer(), f.Core().V1().Nodes().Informer()
				c.SetInformers(view)
			} else {
				c.SetInformers(view)
				ourPods, ourNodes = f.Core().V1().Pods().Informer(), f.Core().V1().Nodes().Informer()
			}
			if c.pods.GetIndexer() != ourPods.GetIndexer() || c.nodes.GetIndexer() != ourNodes.GetIndexer() {
				t.Fatal("the consumer got informers with another cache than the factory's")
			}

			// The view's lifecycle methods drive the factory.
			view.StartWithContext(ctx)
			res := view.WaitForCacheSyncWithContext(ctx)
			if err := res.AsError(); err != nil {
				t.Fatal(err)
			}
			want := map[reflect.Type]bool{reflect.TypeOf(&corev1.Pod{}): true, reflect.TypeOf(&corev1.Node{}): true}
			if !reflect.DeepEqual(res.Synced, want) {
				t.Errorf("WaitForCacheSyncWithContext through the view = %v, want %v", res.Synced, want)
			}
			if !ourPods.HasSynced() || !ourNodes.HasSynced() {
				t.Error("Start through the view did not run the factory's informers")
			}
			if got := view.WaitForCacheSync(ctx.Done()); !reflect.DeepEqual(got, want) {
				t.Errorf("WaitForCacheSync through the view = %v, want %v", got, want)
			}

			// Events reach the consumer's handlers.
			if _, err := client.CoreV1().Pods("ns").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p2"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := client.CoreV1().Nodes().Update(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"}}}, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := client.CoreV1().Pods("ns").Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			wantEvents := map[string]bool{"add pod p1": true, "add node n1": true, "add pod p2": true, "update node n1": true, "delete pod p1": true}
			got := map[string]bool{}
			for len(got) < len(wantEvents) {
				select {
				case e := <-c.events:
					if !wantEvents[e] {
						t.Errorf("unexpected event %q", e)
					}
					got[e] = true
				case <-ctx.Done():
					t.Fatalf("events so far %v, want %v", got, wantEvents)
				}
			}
			if _, ok, _ := ourPods.GetIndexer().GetByKey("ns/p2"); !ok {
				t.Error("the factory's pods cache lacks the pod the consumer was told about")
			}
			// The events came through watches, so both are established by now.
			for _, r := range []string{"pods", "nodes"} {
				if n := requests(client, "list", r); n != 1 {
					t.Errorf("%d LIST requests for %s, want 1: the view and the factory share one informer", n, r)
				}
				if n := requests(client, "watch", r); n != 1 {
					t.Errorf("%d WATCH requests for %s, want 1", n, r)
				}
			}

			// Shutdown through the view shuts the factory down.
			cancel()
			view.Shutdown()
			cms := f.Core().V1().ConfigMaps().Informer()
			f.StartWithContext(context.Background())
			if got := f.WaitForCacheSync(make(chan struct{})); got[reflect.TypeOf(&corev1.ConfigMap{})] || cms.HasSynced() {
				t.Errorf("the factory started configmaps after Shutdown through the view: %v", got)
			}
		})
	}
}

// TestConcurrentViews races views of one factory against the factory
// itself; every caller must end up with the one informer per type.
func TestConcurrentViews(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	got := make([]cache.SharedIndexInformer, 16)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			if i%2 == 0 {
				got[i] = clientgo.Adapt(f).Apps().V1().Deployments().Informer()
			} else {
				got[i] = f.Apps().V1().Deployments().Informer()
			}
		})
	}
	wg.Wait()
	for i, inf := range got {
		if inf != got[0] {
			t.Fatalf("caller %d got another deployments informer", i)
		}
	}
	f.Shutdown()
}
