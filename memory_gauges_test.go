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
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	upstreamcorev1 "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/informertest"
)

// memoryProvider is memProvider with the bytes and over-budget gauges.
type memoryProvider struct{ *memProvider }

func (p memoryProvider) NewBytesMetric(id informers.MetricsID) informers.SettableGaugeMetric {
	return p.metric("bytes", id, "")
}

func (p memoryProvider) NewOverBudgetMetric(id informers.MetricsID) informers.SettableGaugeMetric {
	return p.metric("over_budget", id, "")
}

// has reports whether the provider holds a series of name for id.
func (p memoryProvider) has(name string, id informers.MetricsID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.values[p.metric(name, id, "").key]
	return ok
}

// tenantPods returns n Pods of namespace ns with a 1 KiB annotation each.
func tenantPods(ns string, n int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: ns,
			Annotations: map[string]string{"filler": strings.Repeat("x", 1024)}}})
	}
	return out
}

// gaugeFixture is a factory over namespaces a and b, its Pods informer
// reporting into a memoryProvider.
type gaugeFixture struct {
	t      *testing.T
	ctx    context.Context
	p      memoryProvider
	f      informers.Factory
	pods   cache.SharedIndexInformer
	id     informers.MetricsID
	status informers.InformerID
}

func newGaugeFixture(t *testing.T, name string, a, b int, opts ...informers.SharedInformerOption) *gaugeFixture {
	t.Helper()
	g, _ := newGaugeFactory(t, name, a, b, append(opts, informers.WithNamespaces("a", "b"))...)
	g.pods = g.f.Core().V1().Pods().Informer()
	g.f.Start(g.ctx.Done())
	return g
}

// newGaugeFactory returns a factory named name over fake Pods, a of
// namespace a and b of namespace b, reporting into a memoryProvider; the
// caller sets pods and starts it.
func newGaugeFactory(t *testing.T, name string, a, b int, opts ...informers.SharedInformerOption) (*gaugeFixture, *fake.Clientset) {
	t.Helper()
	p := memoryProvider{newMemProvider()}
	withProvider(t, p)
	client := fake.NewClientset()
	for _, pod := range append(tenantPods("a", a), tenantPods("b", b)...) {
		if err := client.Tracker().Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	in, err := cache.NewInformerName(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := informers.New(client, 0, append(opts, informers.WithInformerName(in))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(func() { cancel(); f.Shutdown() })
	resource := corev1.SchemeGroupVersion.WithResource("pods")
	return &gaugeFixture{t: t, ctx: ctx, p: p, f: f,
		id:     informers.MetricsID{Factory: name, Form: informers.FormTyped, Resource: resource},
		status: informers.InformerID{Form: informers.FormTyped, Resource: resource, Type: reflect.TypeFor[*corev1.Pod]()},
	}, client
}

// poll waits until cond holds, or fails naming what.
func (g *gaugeFixture) poll(what string, cond func() bool) {
	g.t.Helper()
	for !cond() {
		if g.ctx.Err() != nil {
			g.t.Fatalf("%s: objects %v, bytes %v, over_budget %v; cache %d; MemoryStatus %+v; Ready() %v", what,
				g.p.get("objects", g.id, ""), g.p.get("bytes", g.id, ""), g.p.get("over_budget", g.id, ""),
				len(g.pods.GetStore().ListKeys()), g.f.MemoryStatus()[g.status], g.f.Ready())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// matches reports whether the gauges say what the cache and MemoryStatus
// hold: objects in the cache, their estimate, and over budget or not.
func (g *gaugeFixture) matches(objects int, over bool) bool {
	st := g.f.MemoryStatus()[g.status]
	flag := 0.0
	if over {
		flag = 1
	}
	return len(g.pods.GetStore().ListKeys()) == objects && st.Objects == objects &&
		g.p.get("objects", g.id, "") == float64(objects) && g.p.get("bytes", g.id, "") == float64(st.Bytes) &&
		g.p.get("over_budget", g.id, "") == flag && (objects == 0 || st.Bytes > 0)
}

// TestGaugesFollowNarrowing: SetNamespaces empties a removed namespace's
// cache; the objects and bytes gauges drop its objects with it.
func TestGaugesFollowNarrowing(t *testing.T) {
	g := newGaugeFixture(t, "gauges-narrowing", 3, 5)
	g.poll("8 Pods synced", func() bool { return g.matches(8, false) })
	if err := g.f.SetNamespaces("a"); err != nil {
		t.Fatal(err)
	}
	if err := informertest.Settle(g.ctx, g.f); err != nil {
		t.Fatal(err)
	}
	g.poll("a's 3 Pods after narrowing", func() bool { return g.matches(3, false) })
}

// TestGaugesFollowABudgetStopAndNarrowing: an informer stopped over its
// budget reports 1 and no objects; narrowed to fit, it reports 0 and what
// it holds again.
func TestGaugesFollowABudgetStopAndNarrowing(t *testing.T) {
	g := newGaugeFixture(t, "gauges-budget", 3, 200, informers.WithMemoryBudget(64<<10))
	g.poll("the stop", func() bool { return errors.Is(g.f.Ready(), informers.ErrOverMemoryBudget) })
	g.poll("stopped: no objects, over budget", func() bool { return g.matches(0, true) })
	if err := g.f.SetNamespaces("a"); err != nil {
		t.Fatal(err)
	}
	g.poll("a's 3 Pods after narrowing", func() bool { return g.f.Ready() == nil && g.matches(3, false) })
}

// TestGaugesGoWithARemovedInformer: RemoveInformer drops the series of an
// informer stopped over its budget, the over-budget flag with them.
func TestGaugesGoWithARemovedInformer(t *testing.T) {
	g := newGaugeFixture(t, "gauges-removed", 3, 200, informers.WithMemoryBudget(64<<10))
	g.poll("stopped: no objects, over budget", func() bool { return g.matches(0, true) })
	if !g.f.RemoveInformer(g.id.Resource) {
		t.Fatal("RemoveInformer: false")
	}
	for _, name := range []string{"objects", "bytes", "over_budget"} {
		if g.p.has(name, g.id) {
			t.Errorf("%s series left after RemoveInformer: %v", name, g.p.get(name, g.id, ""))
		}
	}
}

// newFuncPods starts, in a factory over fake Pods of namespaces a (n of
// them) and b (3), the Pods informer of InformerFor's newFunc (client-go's
// own, whose list and watch the factory does not run), under a
// memoryProvider, and waits for its sync.
func newFuncPods(t *testing.T, name string, n int, opts ...informers.SharedInformerOption) (*gaugeFixture, *fake.Clientset) {
	t.Helper()
	g, client := newGaugeFactory(t, name, n, 3, opts...)
	g.pods = g.f.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return upstreamcorev1.NewPodInformer(c, "", resync, cache.Indexers{})
	})
	g.f.Start(g.ctx.Done())
	if !cache.WaitForCacheSync(g.ctx.Done(), g.pods.HasSynced) {
		t.Fatal("the newFunc Pods informer did not sync")
	}
	return g, client
}

// TestNewFuncInformerBytes: an informer built by InformerFor's newFunc has
// its objects estimated as they enter its cache, as the factory's own
// are: the bytes gauge reports them without MemoryStatus being asked
// first, and matches it.
func TestNewFuncInformerBytes(t *testing.T) {
	g, _ := newFuncPods(t, "newfunc-bytes", 20)
	g.poll("the bytes gauge of 23 Pods", func() bool {
		return g.p.get("objects", g.id, "") == 23 && g.p.get("bytes", g.id, "") > 23*1024
	})
	g.poll("gauges matching MemoryStatus", func() bool { return g.matches(23, false) })
}

// TestNewFuncInformerCountsInTheBudget: the estimate of an informer built
// by InformerFor's newFunc counts toward the factory's memory budget. The
// budget cannot stop it (its list and watch are its own), and Notices
// says so; an informer of the factory started after it, which the rest of
// the budget cannot hold, stops, naming what the others hold.
func TestNewFuncInformerCountsInTheBudget(t *testing.T) {
	g, client := newFuncPods(t, "newfunc-budget", 200, informers.WithMemoryBudget(128<<10))
	for i := range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: "a"}}
		if err := client.Tracker().Add(cm); err != nil {
			t.Fatal(err)
		}
	}
	configMaps := g.f.Core().V1().ConfigMaps().Informer()
	g.f.Start(g.ctx.Done())
	g.poll("the config maps to stop", func() bool { return errors.Is(g.f.Ready(), informers.ErrOverMemoryBudget) })
	ready := g.f.Ready().Error()
	for _, want := range []string{"configmaps (v1): stopped over its memory budget", "held by other informers"} {
		if !strings.Contains(ready, want) {
			t.Errorf("Ready() = %q, want it to say %q", ready, want)
		}
	}
	if strings.Contains(ready, "pods") {
		t.Errorf("Ready() = %q names the Pods, which keep serving", ready)
	}
	if n := len(g.pods.GetStore().ListKeys()); n != 203 || len(configMaps.GetStore().ListKeys()) != 0 {
		t.Errorf("%d Pods and %d config maps cached, want 203 and 0", n, len(configMaps.GetStore().ListKeys()))
	}
	if st := g.f.MemoryStatus()[g.status]; st.Budget != 128<<10 || st.Bytes <= 128<<10 || st.Stopped != nil {
		t.Errorf("MemoryStatus of the Pods = %+v, want budget 131072, more bytes than that, not stopped", st)
	}
	notices := strings.Join(g.f.Notices(), "\n")
	if !strings.Contains(notices, "pods (v1): built by InformerFor's newFunc") {
		t.Errorf("Notices() = %q, want it to say the Pods informer cannot be stopped by the budget", notices)
	}
}
