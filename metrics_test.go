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

package informers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	upstreamcorev1 "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
)

// memProvider is a MetricsProvider that keeps every value in memory, by
// metric and label set. The Prometheus binding (the metrics module) has
// its own tests; this one checks what the factory reports.
type memProvider struct {
	mu     sync.Mutex
	values map[string]float64
}

func newMemProvider() *memProvider { return &memProvider{values: map[string]float64{}} }

type memMetric struct {
	p   *memProvider
	key string
}

func (m memMetric) add(d float64) {
	m.p.mu.Lock()
	m.p.values[m.key] += d
	m.p.mu.Unlock()
}
func (m memMetric) Inc() { m.add(1) }
func (m memMetric) Dec() { m.add(-1) }
func (m memMetric) Set(v float64) {
	m.p.mu.Lock()
	m.p.values[m.key] = v
	m.p.mu.Unlock()
}
func (m memMetric) Observe(float64) { m.add(1) } // counts observations

func (p *memProvider) metric(name string, id informers.MetricsID, extra string) memMetric {
	return memMetric{p, fmt.Sprintf("%s %s %s/%s/%s %s %s", name, id.Factory, id.Resource.Group, id.Resource.Version, id.Resource.Resource, id.Form, extra)}
}

func (p *memProvider) get(name string, id informers.MetricsID, extra string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.values[p.metric(name, id, extra).key]
}

func (p *memProvider) NewObjectsMetric(id informers.MetricsID) informers.GaugeMetric {
	return p.metric("objects", id, "")
}
func (p *memProvider) NewSyncedMetric(id informers.MetricsID) informers.SettableGaugeMetric {
	return p.metric("synced", id, "")
}
func (p *memProvider) NewSyncDurationMetric(id informers.MetricsID) informers.SettableGaugeMetric {
	return p.metric("sync_duration", id, "")
}
func (p *memProvider) NewEventsMetric(id informers.MetricsID, t string) informers.CounterMetric {
	return p.metric("events", id, t)
}
func (p *memProvider) NewListsMetric(id informers.MetricsID, r string) informers.CounterMetric {
	return p.metric("lists", id, r)
}
func (p *memProvider) NewWatchesMetric(id informers.MetricsID, r string) informers.CounterMetric {
	return p.metric("watches", id, r)
}
func (p *memProvider) NewHandlerLagMetric(id informers.MetricsID) informers.HistogramMetric {
	return p.metric("lag", id, "")
}
func (p *memProvider) DeleteInformerMetrics(id informers.MetricsID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.values {
		if len(k) > 0 && containsID(k, id) {
			delete(p.values, k)
		}
	}
}
func (p *memProvider) NewShardOwnedMetric(f string) informers.SettableGaugeMetric {
	return memMetric{p, "owned " + f}
}
func (p *memProvider) NewShardMembersMetric(f string) informers.SettableGaugeMetric {
	return memMetric{p, "members " + f}
}
func (p *memProvider) NewShardHandoversMetric(f string) informers.CounterMetric {
	return memMetric{p, "handovers " + f}
}
func (p *memProvider) NewShardHandoverDurationMetric(f string) informers.HistogramMetric {
	return memMetric{p, "handover " + f}
}
func (p *memProvider) DeleteShardMetrics(f string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range []string{"owned ", "members ", "handovers ", "handover "} {
		delete(p.values, n+f)
	}
}

func containsID(key string, id informers.MetricsID) bool {
	want := fmt.Sprintf(" %s %s/%s/%s %s ", id.Factory, id.Resource.Group, id.Resource.Version, id.Resource.Resource, id.Form)
	name, rest, ok := strings.Cut(key, " ")
	return ok && name != "" && strings.HasPrefix(" "+rest, want)
}

func (p *memProvider) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.values)
}

// withProvider installs p for the test.
func withProvider(t testing.TB, p informers.MetricsProvider) {
	informers.SetMetricsProvider(p)
	t.Cleanup(func() { informers.SetMetricsProvider(nil) })
}

// startedWithMetrics returns a factory whose pods informer runs under a
// metrics provider, and stops it at the end of the test.
func startedWithMetrics(t testing.TB, client kubernetes.Interface) informers.SharedInformerFactory {
	t.Helper()
	informers.SetMetricsProvider(newMemProvider())
	defer informers.SetMetricsProvider(nil)
	f := informers.NewSharedInformerFactory(client, 0)
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	return f
}

// TestHotPathAllocatesNothingWithMetrics: with metrics on, the accessor
// chain still allocates nothing.
func TestHotPathAllocatesNothingWithMetrics(t *testing.T) {
	factory := startedWithMetrics(t, fake.NewClientset())
	for name, f := range map[string]func(){
		"Informer": func() { sink = factory.Core().V1().Pods().Informer() },
		"Lister":   func() { sink = factory.Core().V1().Pods().Lister() },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("with metrics on, factory.Core().V1().Pods().%s() allocates %v times per call", name, n)
		}
	}
}

// TestMetricsInformerFor: an informer built by InformerFor's newFunc for a
// type the module does not know reports under its Go type, without the
// list/watch counters (its ListWatch is its own); a removed handler's lag is
// no longer measured; a factory shut down leaves no series.
func TestMetricsInformerFor(t *testing.T) {
	p := newMemProvider()
	withProvider(t, p)
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p"}})
	f := informers.NewSharedInformerFactory(client, 0).(informers.Factory)
	own := f.InformerFor(&ownType{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return upstreamcorev1.NewPodInformer(c, "", resync, cache.Indexers{})
	})
	pods := f.Core().V1().Pods().Informer()
	reg, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pods.RemoveEventHandler(reg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := f.WaitForCacheSyncWithContext(wctx).Err; err != nil {
		t.Fatal(err)
	}
	_ = own
	ownID := informers.MetricsID{Factory: "", Form: informers.FormTyped}
	podsID := informers.MetricsID{Form: informers.FormTyped}
	podsID.Resource.Version, podsID.Resource.Resource = "v1", "pods"
	ownID.Resource.Resource = "*informers_test.ownType"
	// The default name is process-unique; find it from the pods series.
	p.mu.Lock()
	for k := range p.values {
		var metric, factory string
		if _, err := fmt.Sscan(k, &metric, &factory); err == nil && metric == "synced" {
			podsID.Factory, ownID.Factory = factory, factory
		}
	}
	p.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	// Synced is set by the informer's own goroutine once it has synced,
	// a moment after WaitForCacheSync may return.
	for p.get("objects", ownID, "") != 1 || p.get("objects", podsID, "") != 1 || p.get("synced", ownID, "") != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("objects: own %v, pods %v, want 1 and 1", p.get("objects", ownID, ""), p.get("objects", podsID, ""))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := p.get("synced", ownID, ""); got != 1 {
		t.Errorf("synced of the InformerFor informer = %v, want 1", got)
	}
	if got := p.get("lists", ownID, "success"); got != 0 {
		t.Errorf("lists of the InformerFor informer = %v, want 0 (not counted)", got)
	}
	if got := p.get("lists", podsID, "success"); got != 1 {
		t.Errorf("lists of pods = %v, want 1", got)
	}
	if got := p.get("lag", podsID, ""); got != 0 {
		t.Errorf("lag observations of a removed handler = %v, want 0", got)
	}
	cancel()
	f.Shutdown()
	if n := p.size(); n != 0 {
		t.Errorf("%d values left after Shutdown: %v", n, p.values)
	}
}

type ownType struct{ corev1.Pod }

// TestMetricsHandlers: every way of adding a handler is measured, once per
// event and handler (two handlers: two observations per event), a resync
// is neither an event nor a lag; an informer refused by a bad option
// reports synced 0; one stopped before it synced reports no sync duration.
func TestMetricsHandlers(t *testing.T) {
	p := newMemProvider()
	withProvider(t, p)
	client := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p1"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p2"}})
	name, err := cache.NewInformerName("handlers")
	if err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, time.Second, informers.WithInformerName(name),
		informers.WithResourceOptions(corev1.SchemeGroupVersion.WithResource("configmaps"), informers.ResourceOptions{LabelSelector: "=bad="}))
	pods := f.Core().V1().Pods().Informer()
	var mu sync.Mutex
	calls := map[string]int{}
	count := func(h string) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { mu.Lock(); calls[h]++; mu.Unlock() },
			UpdateFunc: func(any, any) { mu.Lock(); calls[h+" update"]++; mu.Unlock() },
		}
	}
	if _, err := pods.AddEventHandlerWithResyncPeriod(count("resync"), 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.AddEventHandlerWithOptions(count("options"), cache.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Core().V1().ConfigMaps().Informer() // refused: the selector is invalid
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	podsID := informers.MetricsID{Factory: "handlers", Form: informers.FormTyped}
	podsID.Resource.Version, podsID.Resource.Resource = "v1", "pods"
	cmID := podsID
	cmID.Resource.Resource = "configmaps"
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		done := calls["resync"] == 2 && calls["options"] == 2 && calls["resync update"] >= 2
		mu.Unlock()
		if done && p.get("lag", podsID, "") == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls %v, lag observations %v; want 2 adds per handler, resyncs, 4 observations", calls, p.get("lag", podsID, ""))
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A handler added after the sync gets the cache replayed as adds:
	// no event arrived for them, so no lag.
	late := make(chan struct{}, 2)
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { late <- struct{}{} }}); err != nil {
		t.Fatal(err)
	}
	<-late
	<-late
	if got := p.get("events", podsID, "update"); got != 0 {
		t.Errorf("update events = %v, want 0: resyncs (every second here) are not changes", got)
	}
	if got := p.get("lag", podsID, ""); got != 4 {
		t.Errorf("lag observations = %v after resyncs, want 4", got)
	}
	p.mu.Lock()
	_, present := p.values[p.metric("synced", cmID, "").key]
	p.mu.Unlock()
	if !present || p.get("synced", cmID, "") != 0 {
		t.Errorf("the refused informer's synced = %v (present %v), want 0", p.get("synced", cmID, ""), present)
	}
	cancel()
	f.Shutdown()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err == nil {
		t.Error("AddEventHandler on a stopped informer succeeded")
	}

	// Stopped before it synced: the list never answers.
	blocked := fake.NewClientset()
	release, listing := make(chan struct{}), make(chan struct{})
	var once sync.Once
	blocked.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		once.Do(func() { close(listing) })
		<-release
		return true, nil, errors.New("released")
	})
	g := informers.NewSharedInformerFactory(blocked, 0)
	g.Core().V1().Pods().Informer()
	gctx, gcancel := context.WithCancel(context.Background())
	g.Start(gctx.Done())
	<-listing // stopped while its list waits
	gcancel()
	close(release)
	g.Shutdown()
}

// TestBudgetStopEmptiesTheObjectsGauge: a memory budget's stop empties the
// cache past its handlers, and the objects gauge, which counts what the
// handlers see, drops those objects too: 0 while stopped, and after a
// larger budget brings them back, the objects the cache holds, not those
// counted before the stop on top of them.
func TestBudgetStopEmptiesTheObjectsGauge(t *testing.T) {
	p := newMemProvider()
	withProvider(t, p)
	pod := func(i int) runtime.Object {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "ns",
			Annotations: map[string]string{"filler": strings.Repeat("x", 1024)}}}
	}
	client := fake.NewClientset(pod(0), pod(1), pod(2))
	name, err := cache.NewInformerName("budget-gauge-test")
	if err != nil {
		t.Fatal(err)
	}
	f, err := informers.New(client, 0, informers.WithMemoryBudget(64<<10), informers.WithInformerName(name))
	if err != nil {
		t.Fatal(err)
	}
	pods := f.Core().V1().Pods().Informer()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer f.Shutdown()
	defer cancel()
	f.Start(ctx.Done())
	id := informers.MetricsID{Factory: "budget-gauge-test", Form: informers.FormTyped, Resource: corev1.SchemeGroupVersion.WithResource("pods")}
	objects := func() float64 { return p.get("objects", id, "") }
	poll := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("%s: objects gauge %v, cache %d, Ready() %v", what, objects(), len(pods.GetStore().ListKeys()), f.Ready())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	poll("3 Pods synced", func() bool { return pods.HasSynced() && objects() == 3 })

	// Growth past the budget, by watch events, stops the informer.
	for i := 3; i < 200; i++ {
		if _, err := client.CoreV1().Pods("ns").Create(ctx, pod(i).(*corev1.Pod), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	poll("the stop", func() bool { return errors.Is(f.Ready(), informers.ErrOverMemoryBudget) })
	poll("the objects gauge at 0 once the cache is released", func() bool {
		return len(pods.GetStore().ListKeys()) == 0 && objects() == 0
	})

	if err := f.SetMemoryBudget(64 << 20); err != nil {
		t.Fatal(err)
	}
	poll("all 200 Pods back", func() bool {
		return f.Ready() == nil && len(pods.GetStore().ListKeys()) == 200 && objects() >= 200
	})
	time.Sleep(50 * time.Millisecond) // no count after the 200th
	if got := objects(); got != 200 {
		t.Fatalf("objects gauge %v with 200 Pods in the cache", got)
	}
}
