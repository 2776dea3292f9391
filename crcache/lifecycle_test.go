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
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	informers "github.com/kubeinformers/informers"
)

// unreachable is a server that refuses every connection at once: the
// informers of a started cache fail their lists and retry, and stop with
// their context.
var unreachable = &rest.Config{Host: "https://127.0.0.1:1"}

// factoryRecorder is a factory option that records a weak pointer to
// every factory it is given, so that a test can tell whether the cache
// still holds one.
type factoryRecorder struct {
	mu        sync.Mutex
	factories []weak.Pointer[byte]
}

func (r *factoryRecorder) option() informers.SharedInformerOption {
	var opt informers.SharedInformerOption
	typ := reflect.TypeOf(opt)
	reflect.ValueOf(&opt).Elem().Set(reflect.MakeFunc(typ, func(args []reflect.Value) []reflect.Value {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.factories = append(r.factories, weak.Make((*byte)(args[0].UnsafePointer())))
		return []reflect.Value{reflect.Zero(typ.Out(0))} // nil: the same factory
	}))
	return opt
}

// live collects garbage and returns how many recorded factories are still
// reachable, of how many.
func (r *factoryRecorder) live() (int, int) {
	runtime.GC()
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, p := range r.factories {
		if p.Value() != nil {
			n++
		}
	}
	return n, len(r.factories)
}

// noneLive waits up to 10 s until no recorded factory is reachable.
func (r *factoryRecorder) noneLive() (int, int) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, of := r.live()
		if n == 0 || time.Now().After(deadline) {
			return n, of
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startForTest runs c, and returns its context and a func that stops it
// and fails the test unless Start returns nil within 30 s; the test's end
// stops it too.
func startForTest(t *testing.T, c cache.Cache) (context.Context, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Start: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("Start did not return 30 s after its context ended")
			}
		})
	}
	t.Cleanup(stop)
	<-c.(*Cache).startWait // running: what is built from now on starts at once
	return ctx, stop
}

// TestRemoveInformerDropsItsFactory: once RemoveInformer returns, the
// cache holds nothing of the informer it removed, while the cache runs:
// its factory is collectable (controller-runtime keeps nothing of it
// either).
func TestRemoveInformerDropsItsFactory(t *testing.T) {
	var rec factoryRecorder
	c, err := NewCache(rec.option())(unreachable, cache.Options{Mapper: mapper(), Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, _ := startForTest(t, c)
	for range 3 { // removed and built again, as an operator may
		if _, err := c.GetInformer(ctx, &corev1.Pod{}, cache.BlockUntilSynced(false)); err != nil {
			t.Fatal(err)
		}
		if err := c.RemoveInformer(ctx, &corev1.Pod{}); err != nil {
			t.Fatal(err)
		}
	}
	if n, of := rec.noneLive(); n != 0 {
		t.Errorf("%d of the %d factories built (the options' probe and one per GetInformer) are still held 10 s after RemoveInformer, while the cache runs", n, of)
	}
}

// TestFailedBuildLeavesNothing: an informer whose second namespace slot
// cannot be built (an invalid namespace name) is an error naming it, and
// the factory of its first slot is not kept: no entry, no factory.
func TestFailedBuildLeavesNothing(t *testing.T) {
	var rec factoryRecorder
	own := cache.Config{LabelSelector: labels.SelectorFromSet(labels.Set{"app": "x"})}
	c, err := NewCache(rec.option())(unreachable, cache.Options{
		Mapper:            mapper(),
		Scheme:            scheme.Scheme,
		DefaultNamespaces: map[string]cache.Config{"a": own, "z_bad": own},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, _ := startForTest(t, c)
	_, err = c.GetInformer(ctx, &corev1.Pod{}, cache.BlockUntilSynced(false))
	if err == nil || !strings.Contains(err.Error(), "z_bad") {
		t.Fatalf("GetInformer = %v, want an error naming the namespace z_bad", err)
	}
	crc := c.(*Cache)
	crc.mu.RLock()
	entries := len(crc.entries)
	crc.mu.RUnlock()
	if entries != 0 {
		t.Errorf("the cache holds %d entries after the failed build, want 0", entries)
	}
	if n, of := rec.noneLive(); n != 0 {
		t.Errorf("%d of the %d factories built are still held after the failed build", n, of)
	}
}

// TestByObjectOfKindNotServedYet: a ByObject entry of a kind no resource
// serves is controller-runtime's error from New, but not under
// WithAPIDiscovery: the cache is made, and the entry's settings apply
// once the mapper knows the kind. A cluster-scoped kind with namespaces
// in its entry is then controller-runtime's error for it.
func TestByObjectOfKindNotServedYet(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	gadget := func() client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u
	}
	selector := labels.SelectorFromSet(labels.Set{"app": "x"})
	for _, scope := range []meta.RESTScope{meta.RESTScopeNamespace, meta.RESTScopeRoot} {
		t.Run(string(scope.Name()), func(t *testing.T) {
			m := mapper().(*meta.DefaultRESTMapper)
			byObject := cache.ByObject{Label: selector}
			if scope == meta.RESTScopeRoot {
				byObject.Namespaces = map[string]cache.Config{"a": {}}
			}
			opts := cache.Options{Mapper: m, Scheme: scheme.Scheme, ByObject: map[client.Object]cache.ByObject{gadget(): byObject}}
			if _, err := New(unreachable, opts); err == nil || !strings.Contains(err.Error(), "failed to determine if") {
				t.Errorf("New without WithAPIDiscovery = %v, want controller-runtime's error", err)
			}
			c, err := NewCache(informers.WithAPIDiscovery())(unreachable, opts)
			if err != nil {
				t.Fatalf("NewCache(WithAPIDiscovery()) with a ByObject kind not served: %v", err)
			}
			m.Add(gvk, scope) // the CRD is installed
			_, err = c.GetInformer(context.Background(), gadget(), cache.BlockUntilSynced(false))
			if scope == meta.RESTScopeRoot {
				if err == nil || !strings.Contains(err.Error(), "is not namespaced, but its ByObject.Namespaces setting is not nil") {
					t.Errorf("GetInformer of a cluster-scoped kind with ByObject.Namespaces = %v, want controller-runtime's error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			crc := c.(*Cache)
			crc.mu.RLock()
			defer crc.mu.RUnlock()
			e := crc.entries[entryKey{form: formUnstructured, gvk: gvk}]
			if e == nil || len(e.slots) != 1 || e.slots[0].config.label == nil || e.slots[0].config.label.String() != "app=x" {
				t.Errorf("the informer of the kind once served: %+v, want one slot with the ByObject label app=x", e)
			}
		})
	}
}

// TestInformerNameStaysTheCaches: the informer name given to NewCache
// with WithInformerName stays reserved (NewCache's check of the options
// does not release it), the cache's informers register their resources
// under it for client-go's metrics, and the cache releases it when it
// stops, as a factory's Shutdown does.
func TestInformerNameStaysTheCaches(t *testing.T) {
	name, err := toolscache.NewInformerName("crcache-unit-" + t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer name.Release()
	c, err := NewCache(informers.WithInformerName(name))(unreachable, cache.Options{Mapper: mapper(), Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := toolscache.NewInformerName(name.Name()); err == nil {
		again.Release()
		t.Fatalf("the name %q was released by NewCache", name.Name())
	}
	ctx, stop := startForTest(t, c)
	for _, obj := range []client.Object{&corev1.Pod{}, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}} {
		if _, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
			t.Fatal(err)
		}
	}
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	if name.WithResource(pods).Reserved() {
		t.Errorf("pods is not registered under %q: the cache's informers report no client-go metrics", name.Name())
	}
	if !name.WithResource(corev1.SchemeGroupVersion.WithResource("nodes")).Reserved() {
		t.Errorf("the name %q no longer registers resources: it was released", name.Name())
	}
	stop()
	again, err := toolscache.NewInformerName(name.Name())
	if err != nil {
		t.Fatalf("the name is still reserved after the cache stopped: %v", err)
	}
	again.Release()
}

// labelRecorder is an informers.MetricsProvider that records the factory
// label of each informer's metrics, by resource.
type labelRecorder struct {
	mu     sync.Mutex
	labels map[string][]string
	// events are "new" and "delete" for each informer's series, in order,
	// by factory label and resource.
	events map[string][]string
}

type noMetric struct{}

func (noMetric) Inc()            {}
func (noMetric) Dec()            {}
func (noMetric) Set(float64)     {}
func (noMetric) Observe(float64) {}

func (r *labelRecorder) NewObjectsMetric(id informers.MetricsID) informers.GaugeMetric {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.labels[id.Resource.Resource] = append(r.labels[id.Resource.Resource], id.Factory)
	r.events[id.Factory+" "+id.Resource.Resource] = append(r.events[id.Factory+" "+id.Resource.Resource], "new")
	return noMetric{}
}
func (*labelRecorder) NewSyncedMetric(informers.MetricsID) informers.SettableGaugeMetric {
	return noMetric{}
}
func (*labelRecorder) NewSyncDurationMetric(informers.MetricsID) informers.SettableGaugeMetric {
	return noMetric{}
}
func (*labelRecorder) NewEventsMetric(informers.MetricsID, string) informers.CounterMetric {
	return noMetric{}
}
func (*labelRecorder) NewListsMetric(informers.MetricsID, string) informers.CounterMetric {
	return noMetric{}
}
func (*labelRecorder) NewWatchesMetric(informers.MetricsID, string) informers.CounterMetric {
	return noMetric{}
}
func (*labelRecorder) NewHandlerLagMetric(informers.MetricsID) informers.HistogramMetric {
	return noMetric{}
}
func (r *labelRecorder) DeleteInformerMetrics(id informers.MetricsID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events[id.Factory+" "+id.Resource.Resource] = append(r.events[id.Factory+" "+id.Resource.Resource], "delete")
}
func (*labelRecorder) NewShardOwnedMetric(string) informers.SettableGaugeMetric {
	return noMetric{}
}
func (*labelRecorder) NewShardMembersMetric(string) informers.SettableGaugeMetric {
	return noMetric{}
}
func (*labelRecorder) NewShardHandoversMetric(string) informers.CounterMetric { return noMetric{} }
func (*labelRecorder) NewShardHandoverDurationMetric(string) informers.HistogramMetric {
	return noMetric{}
}
func (*labelRecorder) DeleteShardMetrics(string) {}

// TestMetricsLabelStable: the factory label of an informer's metrics is
// the same whatever order the informers are built in, as on every
// restart of the same operator: the cache's name, the form and the kind.
func TestMetricsLabelStable(t *testing.T) {
	rec := &labelRecorder{labels: map[string][]string{}, events: map[string][]string{}}
	informers.SetMetricsProvider(rec)
	defer informers.SetMetricsProvider(nil)
	for _, order := range [][]client.Object{{&corev1.Pod{}, &corev1.Node{}}, {&corev1.Node{}, &corev1.Pod{}}} {
		c, err := New(unreachable, cache.Options{Mapper: mapper(), Scheme: scheme.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := startForTest(t, c)
		for _, obj := range order {
			if _, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false)); err != nil {
				t.Fatal(err)
			}
		}
		stop()
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for resource, want := range map[string]string{"pods": "crcache/structured/Pod.v1", "nodes": "crcache/structured/Node.v1"} {
		got := rec.labels[resource]
		if len(got) != 2 || got[0] != want || got[1] != want {
			t.Errorf("factory labels of %s over two runs building the informers in another order: %q, want %q twice", resource, got, want)
		}
	}
}

// TestRebuiltInformerKeepsItsMetrics: an informer removed and built again
// reports under the same factory label; the removed one's series are
// deleted before the new one's start, never after, so that the new
// informer's series stay.
func TestRebuiltInformerKeepsItsMetrics(t *testing.T) {
	rec := &labelRecorder{labels: map[string][]string{}, events: map[string][]string{}}
	informers.SetMetricsProvider(rec)
	defer informers.SetMetricsProvider(nil)
	c, err := New(unreachable, cache.Options{Mapper: mapper(), Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, _ := startForTest(t, c)
	for range 3 {
		if _, err := c.GetInformer(ctx, &corev1.Pod{}, cache.BlockUntilSynced(false)); err != nil {
			t.Fatal(err)
		}
		if err := c.RemoveInformer(ctx, &corev1.Pod{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.GetInformer(ctx, &corev1.Pod{}, cache.BlockUntilSynced(false)); err != nil {
		t.Fatal(err)
	}
	const key = "crcache/structured/Pod.v1 pods"
	events := func() []string {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return slices.Clone(rec.events[key])
	}
	// Informers removed before they started never start; the others'
	// series are deleted before the next one's are made.
	alternating := func(got []string) bool {
		for i, ev := range got {
			if ev != [...]string{"new", "delete"}[i%2] {
				return false
			}
		}
		return len(got) >= 3 && got[len(got)-1] == "new"
	}
	deadline := time.Now().Add(10 * time.Second)
	for !alternating(events()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // a late delete would come now
	if got := events(); !alternating(got) {
		t.Errorf("the series of %q: %q, want new and delete alternating, ending with new (the running informer's)", key, got)
	}
}
