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

package metrics

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

// registry is what every test reads: the binding is process-wide, so it is
// registered once, and each test's factories have names of their own.
var registry = prometheus.NewRegistry()

func TestMain(m *testing.M) {
	if err := Register(registry); err != nil {
		panic(err)
	}
	goleak.VerifyTestMain(m)
}

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
}

func pods(n int) []runtime.Object {
	out := make([]runtime.Object, n)
	for i := range out {
		out[i] = pod("a", fmt.Sprintf("p%d", i))
	}
	return out
}

// series is one gathered sample: its family, labels and value (a
// histogram's sample count).
type series struct {
	name   string
	labels map[string]string
	value  float64
}

// gather returns the samples of factory, or of every factory for "".
func gather(t *testing.T, factory string) []series {
	t.Helper()
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []series
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			s := series{name: mf.GetName(), labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			if factory != "" && s.labels["factory"] != factory {
				continue
			}
			switch mf.GetType() {
			case dto.MetricType_GAUGE:
				s.value = m.GetGauge().GetValue()
			case dto.MetricType_COUNTER:
				s.value = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				s.value = float64(m.GetHistogram().GetSampleCount())
			}
			out = append(out, s)
		}
	}
	return out
}

// value returns the one sample of name whose labels include want, and
// whether there is one.
func value(t *testing.T, factory, name string, want map[string]string) (float64, bool) {
	t.Helper()
	var found []series
	for _, s := range gather(t, factory) {
		if s.name != name {
			continue
		}
		match := true
		for k, v := range want {
			match = match && s.labels[k] == v
		}
		if match {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 0:
		return 0, false
	case 1:
		return found[0].value, true
	}
	t.Fatalf("%d series of %s match %v: %v", len(found), name, want, found)
	return 0, false
}

// eventually polls cond until it holds or 10 s have passed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func named(t *testing.T, name string) informers.SharedInformerOption {
	t.Helper()
	n, err := cache.NewInformerName(name)
	if err != nil {
		t.Fatal(err)
	}
	return informers.WithInformerName(n)
}

var podLabels = map[string]string{"group": "", "version": "v1", "resource": "pods", "form": "typed"}

func with(base map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for bk, bv := range base {
		out[bk] = bv
	}
	return out
}

// TestEventsExact: 7 initial Pods and 2 created are 9 adds, an update is
// 1, a delete is 1; the gauges and the request counters say exactly what
// happened, and a handler's lag is observed once per event.
func TestEventsExact(t *testing.T) {
	const name = "events-exact"
	client := fake.NewClientset(pods(7)...)
	f, err := informers.New(client, 0, named(t, name))
	if err != nil {
		t.Fatal(err)
	}
	inf := f.Core().V1().Pods().Informer()
	var calls atomic.Int64
	count := func() { calls.Add(1) }
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { count() },
		UpdateFunc: func(any, any) { count() },
		DeleteFunc: func(any) { count() },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); f.Shutdown() }()
	f.Start(ctx.Done())
	if err := f.WaitForCacheSyncWithContext(ctx).Err; err != nil {
		t.Fatal(err)
	}
	// Synced is set by the informer's own goroutine once it has synced,
	// a moment after WaitForCacheSync may return.
	eventually(t, "synced = 1", func() bool {
		v, _ := value(t, name, "kubeinformers_informer_synced", podLabels)
		return v == 1
	})
	if v, ok := value(t, name, "kubeinformers_informer_sync_duration_seconds", podLabels); !ok || v <= 0 {
		t.Errorf("sync duration = %v (present %v), want > 0", v, ok)
	}
	pc := client.CoreV1().Pods("a")
	for _, n := range []string{"new1", "new2"} {
		if _, err := pc.Create(ctx, pod("a", n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	changed := pod("a", "p0")
	changed.Labels = map[string]string{"x": "y"}
	if _, err := pc.Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "11 handler calls", func() bool { return calls.Load() == 11 })
	events := func(typ string) float64 {
		v, _ := value(t, name, "kubeinformers_informer_events_total", with(podLabels, "type", typ))
		return v
	}
	eventually(t, "the counters", func() bool {
		return events("add") == 9 && events("update") == 1 && events("delete") == 1
	})
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"kubeinformers_informer_events_total", with(podLabels, "type", "add"), 9},
		{"kubeinformers_informer_events_total", with(podLabels, "type", "update"), 1},
		{"kubeinformers_informer_events_total", with(podLabels, "type", "delete"), 1},
		{"kubeinformers_informer_objects", podLabels, 8},
		{"kubeinformers_informer_list_total", with(podLabels, "result", "success"), 1},
		{"kubeinformers_informer_list_total", with(podLabels, "result", "error"), 0},
		{"kubeinformers_informer_watch_total", with(podLabels, "result", "success"), 1},
		{"kubeinformers_informer_watch_total", with(podLabels, "result", "error"), 0},
		{"kubeinformers_informer_handler_lag_seconds", podLabels, 11},
	}
	for _, c := range checks {
		if v, ok := value(t, name, c.name, c.labels); !ok || v != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, v, ok, c.want)
		}
	}
	for _, s := range gather(t, name) {
		for k := range s.labels {
			if !slices.Contains([]string{"factory", "group", "version", "resource", "form", "type", "result"}, k) {
				t.Errorf("%s has label %q", s.name, k)
			}
		}
	}
}

// TestForbiddenCounted: a 403 on list, and one on watch, are each counted
// once as an error.
func TestForbiddenCounted(t *testing.T) {
	for _, verb := range []string{"list", "watch"} {
		t.Run(verb, func(t *testing.T) {
			name := "forbidden-" + verb
			client := fake.NewClientset(pods(2)...)
			var refused atomic.Int64
			client.PrependReactor(verb, "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				refused.Add(1)
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("RBAC says no"))
			})
			client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
				if verb != "watch" {
					return false, nil, nil
				}
				refused.Add(1)
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("RBAC says no"))
			})
			f, err := informers.New(client, 0, named(t, name))
			if err != nil {
				t.Fatal(err)
			}
			f.Core().V1().Pods().Informer()
			ctx, cancel := context.WithCancel(context.Background())
			defer func() { cancel(); f.Shutdown() }()
			f.Start(ctx.Done())
			eventually(t, "the 403s counted", func() bool {
				v, _ := value(t, name, "kubeinformers_informer_"+verb+"_total", with(podLabels, "result", "error"))
				return v >= 1 && v == float64(refused.Load())
			})
			if v, _ := value(t, name, "kubeinformers_informer_synced", podLabels); v != 0 {
				t.Errorf("synced = %v, want 0", v)
			}
			if err := f.Ready(); err == nil || !strings.Contains(err.Error(), "forbidden") {
				t.Errorf("Ready() = %v, want the 403", err)
			}
		})
	}
}

// TestFactoriesApart: two factories with default names, and one factory
// holding pods typed and metadata-only, write distinct series; RemoveInformer
// and Shutdown remove theirs.
func TestFactoriesApart(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	meta := func(n int) []runtime.Object {
		var out []runtime.Object
		for i := range n {
			out = append(out, &metav1.PartialObjectMetadata{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: fmt.Sprintf("p%d", i)},
			})
		}
		return out
	}
	before := map[string]bool{}
	for _, s := range gather(t, "") {
		before[s.labels["factory"]] = true
	}
	var factories []informers.Factory
	for _, n := range []int{7, 3} {
		f, err := informers.New(fake.NewClientset(pods(n)...), 0,
			informers.WithMetadataClient(metadatafake.NewSimpleMetadataClient(scheme, meta(n)...)))
		if err != nil {
			t.Fatal(err)
		}
		f.Core().V1().Pods().Informer()
		f.Core().V1().ConfigMaps().Informer()
		if _, err := f.ForMetadata(podsGVR); err != nil {
			t.Fatal(err)
		}
		factories = append(factories, f)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, f := range factories {
		f.Start(ctx.Done())
		if err := f.WaitForCacheSyncWithContext(ctx).Err; err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, s := range gather(t, "") {
		if n := s.labels["factory"]; !before[n] && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	if len(names) != 2 || names[0] == names[1] {
		t.Fatalf("factories reported as %q, want two distinct names", names)
	}
	metaLabels := with(podLabels, "form", "metadata")
	for _, name := range names {
		eventually(t, "the objects gauges of "+name, func() bool {
			typed, _ := value(t, name, "kubeinformers_informer_objects", podLabels)
			metaOnly, _ := value(t, name, "kubeinformers_informer_objects", metaLabels)
			return typed == metaOnly && (typed == 7 || typed == 3)
		})
	}
	// Every series is written once (Gather fails on duplicates) and the
	// two factories' sets do not meet.
	seen := map[string]bool{}
	for _, s := range gather(t, "") {
		key := s.name + fmt.Sprint(s.labels)
		if seen[key] {
			t.Errorf("duplicate series %s", key)
		}
		seen[key] = true
	}

	// RemoveInformer drops the pods series of both forms, and only those.
	f := factories[0]
	name := ""
	for _, n := range names {
		if v, _ := value(t, n, "kubeinformers_informer_objects", podLabels); v == 7 {
			name = n
		}
	}
	if !f.RemoveInformer(podsGVR) {
		t.Fatal("RemoveInformer(pods) = false")
	}
	for _, s := range gather(t, name) {
		if s.labels["resource"] == "pods" {
			t.Errorf("series of a removed informer: %s %v", s.name, s.labels)
		}
	}
	if _, ok := value(t, name, "kubeinformers_informer_objects", map[string]string{"resource": "configmaps"}); !ok {
		t.Error("the configmaps series went with the pods")
	}
	cancel()
	for _, f := range factories {
		f.Shutdown()
	}
	for _, n := range names {
		if got := gather(t, n); len(got) != 0 {
			t.Errorf("factory %s shut down but has %d series, such as %v", n, len(got), got[0])
		}
	}
}

// TestShardMetrics: a factory under a membership of two reports half the
// hash space, two members, and one handover.
func TestShardMetrics(t *testing.T) {
	const name = "sharded"
	client := fake.NewClientset(pods(20)...)
	member := func(id string) *sharding.Membership {
		m, err := sharding.NewMembership(sharding.MembershipConfig{
			Client: client, Namespace: "leases", Controller: "ctl", Identity: id,
			LeaseDuration: time.Hour, RenewInterval: 20 * time.Minute,
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := member("a"), member("b")
	f, err := informers.New(client, 0, named(t, name), informers.WithShardMembership(a, sharding.FieldUID))
	if err != nil {
		t.Fatal(err)
	}
	f.Core().V1().Pods().Informer()
	ctx, cancel := context.WithCancel(context.Background())
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	defer func() { cancel(); f.Shutdown(); _ = a.Stop(context.Background()); _ = b.Stop(context.Background()) }()
	eventually(t, "the whole space", func() bool {
		v, _ := value(t, name, "kubeinformers_shard_owned_ratio", nil)
		return v == 1
	})
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "half the space, two members", func() bool {
		owned, _ := value(t, name, "kubeinformers_shard_owned_ratio", nil)
		members, _ := value(t, name, "kubeinformers_shard_members", nil)
		return owned == 0.5 && members == 2
	})
	eventually(t, "a handover observed", func() bool {
		d, _ := value(t, name, "kubeinformers_shard_handover_duration_seconds", nil)
		return d >= 1
	})
	if v, _ := value(t, name, "kubeinformers_shard_handovers_total", nil); v != 2 {
		t.Errorf("handovers = %v, want 2 (nothing to the whole space, then to half)", v)
	}
}

// TestStaticShardMetrics: each replica of a fixed shard reports its share
// of the hash space and the replica count, and the shares of all replicas
// sum to 1; WithShardSelector reports its selector's share and no members.
func TestStaticShardMetrics(t *testing.T) {
	client := fake.NewClientset(pods(20)...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := func(name string, opt informers.SharedInformerOption) {
		f, err := informers.New(client, 0, named(t, name), opt)
		if err != nil {
			t.Fatal(err)
		}
		f.Core().V1().Pods().Informer()
		f.Start(ctx.Done())
		f.Start(ctx.Done()) // a second Start reports nothing twice
		t.Cleanup(f.Shutdown)
	}
	var sum float64
	for i := range 3 {
		name := fmt.Sprintf("replica-%d", i)
		start(name, informers.WithShard(sharding.FieldUID, i, 3))
		owned, ok := value(t, name, "kubeinformers_shard_owned_ratio", nil)
		if !ok || owned < 0.33 || owned > 0.34 {
			t.Errorf("replica %d of 3 owns %v (reported %v), want about 1/3", i, owned, ok)
		}
		if members, _ := value(t, name, "kubeinformers_shard_members", nil); members != 3 {
			t.Errorf("replica %d of 3 reports %v members, want 3", i, members)
		}
		sum += owned
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("the replicas' shares sum to %v, want 1", sum)
	}
	sel, err := sharding.NewSelector(sharding.FieldUID, sharding.Range{Start: 0, End: 1 << 62})
	if err != nil {
		t.Fatal(err)
	}
	start("selector", informers.WithShardSelector(sel.APISelector()))
	if owned, _ := value(t, "selector", "kubeinformers_shard_owned_ratio", nil); owned != 0.25 {
		t.Errorf("a selector of a quarter of the space owns %v, want 0.25", owned)
	}
	if members, _ := value(t, "selector", "kubeinformers_shard_members", nil); members != 0 {
		t.Errorf("a selector reports %v members, want 0 (not known)", members)
	}
}
