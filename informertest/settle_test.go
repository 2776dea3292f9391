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

package informertest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	fakemetadata "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/dynamicinformer"
	gadgetsv1 "github.com/kubeinformers/informers/examples/crd/apis/gadgets/v1"
	gadgetfake "github.com/kubeinformers/informers/examples/crd/client/clientset/versioned/fake"
	"github.com/kubeinformers/informers/examples/crd/client/informers/externalversions"
	"github.com/kubeinformers/informers/informertest"
	"github.com/kubeinformers/informers/metadatainformer"
)

// slow counts events and takes a few milliseconds over each, as a
// controller's handler that does some work.
type slow struct {
	adds, updates, deletes atomic.Int64
}

func (h *slow) work() { time.Sleep(2 * time.Millisecond) } // the handler's own work, not a wait

func (h *slow) OnAdd(any, bool) {
	h.work()
	h.adds.Add(1)
}

func (h *slow) OnUpdate(any, any) {
	h.work()
	h.updates.Add(1)
}

func (h *slow) OnDelete(any) {
	h.work()
	h.deletes.Add(1)
}

func (h *slow) check(t *testing.T, step string, adds, updates, deletes int64) {
	t.Helper()
	if a, u, d := h.adds.Load(), h.updates.Load(), h.deletes.Load(); a != adds || u != updates || d != deletes {
		t.Fatalf("after %s: %d adds, %d updates, %d deletes; want %d, %d, %d", step, a, u, d, adds, updates, deletes)
	}
}

// writer is one form of client: how a test creates, updates and deletes
// object i.
type writer struct {
	create, update, remove func(ctx context.Context, i int) error
}

// streams runs test once with the informers listing, as over client-go's
// fakes, and once with them streaming (informertest.ServeWatchList), as
// over a server; then it checks that the informers of resource streamed.
func streams(t *testing.T, resource schema.GroupVersionResource, test func(t *testing.T, serve func(informertest.FakeClient))) {
	t.Run("list", func(t *testing.T) { test(t, func(informertest.FakeClient) {}) })
	t.Run("watch-list stream", func(t *testing.T) {
		var wl *informertest.WatchList
		test(t, func(c informertest.FakeClient) {
			var err error
			if wl, err = informertest.ServeWatchList(c); err != nil {
				t.Fatal(err)
			}
		})
		// Settle has returned, so every stream sent its start: no wait.
		done, cancel := context.WithCancel(context.Background())
		cancel()
		if err := wl.WaitStreams(done, resource, 1); err != nil {
			t.Errorf("the informer did not stream: %v", err)
		}
	})
}

// run is the test of the issue: 50 creates, 10 updates, 5 deletes, each
// batch followed by Settle and an exact count.
func run(t *testing.T, factory informertest.Factory, informer cache.SharedIndexInformer, w writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := &slow{}
	if _, err := informer.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	defer factory.Shutdown()
	defer close(stop)

	if err := informertest.Settle(ctx, factory); err != nil {
		t.Fatal(err)
	}
	h.check(t, "the start", 0, 0, 0)
	for i := range 50 {
		if err := w.create(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := informertest.Settle(ctx, factory); err != nil {
		t.Fatal(err)
	}
	h.check(t, "50 creates", 50, 0, 0)
	if n := len(informer.GetStore().List()); n != 50 {
		t.Fatalf("the cache has %d objects, want 50", n)
	}
	for i := range 10 {
		if err := w.update(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := informertest.Settle(ctx, factory); err != nil {
		t.Fatal(err)
	}
	h.check(t, "10 updates", 50, 10, 0)
	for i := range 5 {
		if err := w.remove(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := informertest.Settle(ctx, factory); err != nil {
		t.Fatal(err)
	}
	h.check(t, "5 deletes", 50, 10, 5)
	if n := len(informer.GetStore().List()); n != 45 {
		t.Fatalf("the cache has %d objects, want 45", n)
	}
}

func name(i int) string { return fmt.Sprintf("obj-%02d", i) }

func TestSettleTyped(t *testing.T) {
	for _, c := range []struct {
		name    string
		factory func(*fake.Clientset) (informertest.Factory, cache.SharedIndexInformer)
	}{
		{"NewSharedInformerFactory", func(c *fake.Clientset) (informertest.Factory, cache.SharedIndexInformer) {
			f := informers.NewSharedInformerFactory(c, 0)
			return f, f.Core().V1().Pods().Informer()
		}},
		{"New", func(c *fake.Clientset) (informertest.Factory, cache.SharedIndexInformer) {
			f, err := informers.New(c, 0)
			if err != nil {
				t.Fatal(err)
			}
			return f, f.Core().V1().Pods().Informer()
		}},
		{"two namespaces", func(c *fake.Clientset) (informertest.Factory, cache.SharedIndexInformer) {
			f, err := informers.New(c, 0, informers.WithNamespaces("a", "b"))
			if err != nil {
				t.Fatal(err)
			}
			return f, f.Core().V1().Pods().Informer()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			streams(t, pods, func(t *testing.T, serve func(informertest.FakeClient)) {
				client := fake.NewClientset()
				informertest.StampResourceVersions(client)
				serve(client)
				f, informer := c.factory(client)
				ns := func(i int) string {
					if i%2 == 0 {
						return "a"
					}
					return "b"
				}
				pods := func(i int) podClient { return client.CoreV1().Pods(ns(i)) }
				run(t, f, informer, writer{
					create: func(ctx context.Context, i int) error {
						_, err := pods(i).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name(i), Namespace: ns(i)}}, metav1.CreateOptions{})
						return err
					},
					update: func(ctx context.Context, i int) error {
						p, err := pods(i).Get(ctx, name(i), metav1.GetOptions{})
						if err != nil {
							return err
						}
						p.Labels = map[string]string{"updated": "yes"}
						_, err = pods(i).Update(ctx, p, metav1.UpdateOptions{})
						return err
					},
					remove: func(ctx context.Context, i int) error {
						return pods(i).Delete(ctx, name(i), metav1.DeleteOptions{})
					},
				})
			})
		})
	}
}

type podClient interface {
	Create(context.Context, *corev1.Pod, metav1.CreateOptions) (*corev1.Pod, error)
	Get(context.Context, string, metav1.GetOptions) (*corev1.Pod, error)
	Update(context.Context, *corev1.Pod, metav1.UpdateOptions) (*corev1.Pod, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func TestSettleDynamic(t *testing.T) { streams(t, widgets, testSettleDynamic) }

func testSettleDynamic(t *testing.T, serve func(informertest.FakeClient)) {
	client := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"})
	informertest.StampResourceVersions(client)
	serve(client)
	f := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	informer := f.ForResource(widgets).Informer()
	res := client.Resource(widgets).Namespace("a")
	run(t, f, informer, writer{
		create: func(ctx context.Context, i int) error {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("example.com/v1")
			u.SetKind("Widget")
			u.SetName(name(i))
			u.SetNamespace("a")
			_, err := res.Create(ctx, u, metav1.CreateOptions{})
			return err
		},
		update: func(ctx context.Context, i int) error {
			u, err := res.Get(ctx, name(i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			u.SetLabels(map[string]string{"updated": "yes"})
			_, err = res.Update(ctx, u, metav1.UpdateOptions{})
			return err
		},
		remove: func(ctx context.Context, i int) error {
			return res.Delete(ctx, name(i), metav1.DeleteOptions{})
		},
	})
}

func TestSettleMetadata(t *testing.T) { streams(t, widgets, testSettleMetadata) }

func testSettleMetadata(t *testing.T, serve func(informertest.FakeClient)) {
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	client := fakemetadata.NewSimpleMetadataClient(scheme)
	informertest.StampResourceVersions(client)
	serve(client)
	f := metadatainformer.NewSharedInformerFactory(client, 0)
	informer := f.ForResource(widgets).Informer()
	res := client.Resource(widgets).Namespace("a").(fakemetadata.MetadataClient)
	object := func(i int) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"},
			ObjectMeta: metav1.ObjectMeta{Name: name(i), Namespace: "a"},
		}
	}
	run(t, f, informer, writer{
		create: func(_ context.Context, i int) error {
			_, err := res.CreateFake(object(i), metav1.CreateOptions{})
			return err
		},
		update: func(_ context.Context, i int) error {
			o := object(i)
			o.Labels = map[string]string{"updated": "yes"}
			_, err := res.UpdateFake(o, metav1.UpdateOptions{})
			return err
		},
		remove: func(ctx context.Context, i int) error {
			return res.Delete(ctx, name(i), metav1.DeleteOptions{})
		},
	})
}

// TestSettleGenerated runs on the fake clientset client-gen generated for
// examples/crd's Gadget, unmodified, and the informers kubeinformers-gen
// generated for it.
func TestSettleGenerated(t *testing.T) { streams(t, gadgetsV1, testSettleGenerated) }

func testSettleGenerated(t *testing.T, serve func(informertest.FakeClient)) {
	client := gadgetfake.NewSimpleClientset()
	informertest.StampResourceVersions(client)
	serve(client)
	f := externalversions.NewSharedInformerFactory(client, 0)
	informer := f.Gadgets().V1().Gadgets().Informer()
	gadgets := client.GadgetsV1().Gadgets("a")
	run(t, f, informer, writer{
		create: func(ctx context.Context, i int) error {
			_, err := gadgets.Create(ctx, &gadgetsv1.Gadget{ObjectMeta: metav1.ObjectMeta{Name: name(i), Namespace: "a"}}, metav1.CreateOptions{})
			return err
		},
		update: func(ctx context.Context, i int) error {
			g, err := gadgets.Get(ctx, name(i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			g.Labels = map[string]string{"updated": "yes"}
			_, err = gadgets.Update(ctx, g, metav1.UpdateOptions{})
			return err
		},
		remove: func(ctx context.Context, i int) error {
			return gadgets.Delete(ctx, name(i), metav1.DeleteOptions{})
		},
	})
}

var gadgetsV1 = gadgetsv1.SchemeGroupVersion.WithResource("gadgets")
