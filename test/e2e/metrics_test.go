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
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/metrics"
	"github.com/kubeinformers/informers/sharding"
)

// The Prometheus binding is process-wide: registered once, served by one
// endpoint that every metrics test scrapes over HTTP.
var (
	scrapeOnce sync.Once
	scrapeURL  string
	scrapeErr  error
)

func metricsEndpoint(t *testing.T) string {
	t.Helper()
	scrapeOnce.Do(func() {
		reg := prometheus.NewRegistry()
		if scrapeErr = metrics.Register(reg); scrapeErr != nil {
			return
		}
		// Never closed: it serves the whole run, like a controller's.
		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		scrapeURL = srv.URL + "/metrics"
	})
	if scrapeErr != nil {
		t.Fatal(scrapeErr)
	}
	return scrapeURL
}

// scrape is one GET of /metrics: each sample line by its series text, such
// as `kubeinformers_informer_objects{factory="x",...}`.
type scrape map[string]float64

func scrapeNow(t *testing.T, url string) scrape {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s %v", url, resp.Status, err)
	}
	out := scrape{}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "kubeinformers_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape: bad line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// get sums the samples of name whose labels include every one of labels
// (`k="v"` strings), and reports whether there was one.
func (s scrape) get(name string, labels ...string) (float64, bool) {
	var sum float64
	found := false
	for series, v := range s {
		if !strings.HasPrefix(series, name+"{") && series != name {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(series, l)
		}
		if match {
			sum += v
			found = true
		}
	}
	return sum, found
}

func (s scrape) value(name string, labels ...string) float64 {
	v, _ := s.get(name, labels...)
	return v
}

// TestMetricsOverHTTP scrapes /metrics over HTTP while a factory syncs
// against kube-apiserver: the objects gauge equals the server's count, the
// event counters say exactly what was done, a restart of kube-apiserver
// shows as failed requests and then recovery, and RemoveInformer removes
// the series. It prints each value it saw.
func TestMetricsOverHTTP(t *testing.T) {
	c := setup(t)
	url := metricsEndpoint(t)
	const initial = 40
	for i := range initial {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%02d", i)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
		}
		if _, err := c.client.CoreV1().Pods(c.ns).Create(c.ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	name := "e2e-metrics-" + randSuffix()
	n, err := cache.NewInformerName(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := informers.NewForConfig(env.AdminConfig(), 0, informers.WithNamespace(c.ns), informers.WithInformerName(n))
	if err != nil {
		t.Fatal(err)
	}
	pods := f.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {}, DeleteFunc: func(any) {}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ForMetadata(schema.GroupVersionResource{Version: "v1", Resource: "pods"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer func() { cancel(); f.Shutdown() }()
	fl := `factory="` + name + `"`
	typed := []string{fl, `resource="pods"`, `form="typed"`}
	f.Start(ctx.Done())

	// Scrape while it syncs, until synced reads 1.
	scrapes, sawUnsynced := 0, false
	var s scrape
	if !eventually(60*time.Second, 5*time.Millisecond, func() bool {
		s = scrapeNow(t, url)
		scrapes++
		if v, ok := s.get("kubeinformers_informer_synced", typed...); ok && v == 0 {
			sawUnsynced = true
		}
		return s.value("kubeinformers_informer_synced", typed...) == 1
	}) {
		t.Fatalf("synced never read 1 over %d scrapes: %v", scrapes, f.Ready())
	}
	t.Logf("scraped /metrics %d times while syncing (synced=0 seen: %v); synced=1, sync_duration_seconds=%.3f",
		scrapes, sawUnsynced, s.value("kubeinformers_informer_sync_duration_seconds", typed...))

	serverCount := func() int {
		l, err := c.client.CoreV1().Pods(c.ns).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	// The counting handler may lag the sync by a moment.
	waitFor := func(what string, cond func(scrape) bool) scrape {
		t.Helper()
		var s scrape
		if !eventually(30*time.Second, 20*time.Millisecond, func() bool { s = scrapeNow(t, url); return cond(s) }) {
			t.Fatalf("%s: last scrape %v", what, filter(s, fl))
		}
		return s
	}
	s = waitFor("objects = server count", func(s scrape) bool {
		return s.value("kubeinformers_informer_objects", typed...) == float64(serverCount())
	})
	t.Logf("objects gauge %v = server's count %d (metadata form: %v)", s.value("kubeinformers_informer_objects", typed...), serverCount(),
		s.value("kubeinformers_informer_objects", fl, `resource="pods"`, `form="metadata"`))

	// Two created, one deleted: exact counters.
	for _, p := range []string{"extra-1", "extra-2"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if _, err := c.client.CoreV1().Pods(c.ns).Create(c.ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.client.CoreV1().Pods(c.ns).Delete(c.ctx, "p-00", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The counters, the objects gauge and the handler's lag are updated at
	// different moments of one event's delivery: wait for a scrape that
	// has all of them, so that the checks below compare one state.
	s = waitFor("42 adds, 1 delete, the objects gauge and the handler's lag after them", func(s scrape) bool {
		var applied float64
		for _, typ := range []string{"add", "update", "delete"} {
			applied += s.value("kubeinformers_informer_events_total", append(typed, `type="`+typ+`"`)...)
		}
		return s.value("kubeinformers_informer_events_total", append(typed, `type="add"`)...) == initial+2 &&
			s.value("kubeinformers_informer_events_total", append(typed, `type="delete"`)...) == 1 &&
			s.value("kubeinformers_informer_objects", typed...) == float64(serverCount()) &&
			s.value("kubeinformers_informer_handler_lag_seconds_count", typed...) == applied
	})
	if got, want := s.value("kubeinformers_informer_objects", typed...), float64(serverCount()); got != want {
		t.Errorf("objects = %v, server has %v", got, want)
	}
	// The server may also update a Pod it deletes (its deletion
	// timestamp): the one handler's lag is observed once per event,
	// whatever the type.
	var applied float64
	for _, typ := range []string{"add", "update", "delete"} {
		applied += s.value("kubeinformers_informer_events_total", append(typed, `type="`+typ+`"`)...)
	}
	lagCount := s.value("kubeinformers_informer_handler_lag_seconds_count", typed...)
	if lagCount != applied {
		t.Errorf("handler lag observations = %v, want %v (one per event applied, one handler)", lagCount, applied)
	}
	t.Logf("events add=%v update=%v delete=%v; objects=%v; handler lag count=%v sum=%.6fs; list success=%v watch success=%v",
		s.value("kubeinformers_informer_events_total", append(typed, `type="add"`)...),
		s.value("kubeinformers_informer_events_total", append(typed, `type="update"`)...),
		s.value("kubeinformers_informer_events_total", append(typed, `type="delete"`)...),
		s.value("kubeinformers_informer_objects", typed...), lagCount,
		s.value("kubeinformers_informer_handler_lag_seconds_sum", typed...),
		s.value("kubeinformers_informer_list_total", append(typed, `result="success"`)...),
		s.value("kubeinformers_informer_watch_total", append(typed, `result="success"`)...))

	// A restart of kube-apiserver: failed requests, then recovery.
	before := s
	errs := func(s scrape, verb string) float64 {
		return s.value("kubeinformers_informer_"+verb+"_total", append(typed, `result="error"`)...)
	}
	ok := func(s scrape, verb string) float64 {
		return s.value("kubeinformers_informer_"+verb+"_total", append(typed, `result="success"`)...)
	}
	if err := env.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	down := waitFor("watch errors while kube-apiserver is down", func(s scrape) bool {
		return errs(s, "watch") > errs(before, "watch")
	})
	t.Logf("kube-apiserver down: watch errors %v -> %v, list errors %v -> %v",
		errs(before, "watch"), errs(down, "watch"), errs(before, "list"), errs(down, "list"))
	if err := env.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitReady(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	up := waitFor("a watch succeeding again and Ready", func(s scrape) bool {
		return ok(s, "watch") > ok(down, "watch") && f.Ready() == nil
	})
	if got, want := up.value("kubeinformers_informer_objects", typed...), float64(serverCount()); got != want {
		t.Errorf("after the restart objects = %v, server has %v", got, want)
	}
	t.Logf("kube-apiserver back: watch success %v -> %v, list success %v -> %v, watch errors %v, list errors %v, objects %v = server's %d, synced %v",
		ok(down, "watch"), ok(up, "watch"), ok(down, "list"), ok(up, "list"), errs(up, "watch"), errs(up, "list"),
		up.value("kubeinformers_informer_objects", typed...), serverCount(), up.value("kubeinformers_informer_synced", typed...))

	// A 403 is counted as an error: the limited user may not read secrets.
	// Its stream is refused (a watch), then the LIST it falls back to.
	fname := "e2e-metrics-forbidden-" + randSuffix()
	fn, err := cache.NewInformerName(fname)
	if err != nil {
		t.Fatal(err)
	}
	forbidden, err := informers.NewForConfig(env.LimitedConfig(), 0, informers.WithNamespace(c.ns), informers.WithInformerName(fn))
	if err != nil {
		t.Fatal(err)
	}
	forbidden.Core().V1().Secrets().Informer()
	fctx, fcancel := context.WithCancel(c.ctx)
	forbidden.Start(fctx.Done())
	ffl := []string{`factory="` + fname + `"`, `resource="secrets"`, `result="error"`}
	fs := waitFor("the 403s counted", func(s scrape) bool {
		return s.value("kubeinformers_informer_list_total", ffl...) >= 1
	})
	if err := forbidden.Ready(); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("Ready() of the forbidden factory = %v, want the 403", err)
	}
	t.Logf("403 on secrets: list errors %v, watch errors %v, synced %v; Ready: %v",
		fs.value("kubeinformers_informer_list_total", ffl...), fs.value("kubeinformers_informer_watch_total", ffl...),
		fs.value("kubeinformers_informer_synced", `factory="`+fname+`"`), forbidden.Ready())
	fcancel()
	forbidden.Shutdown()

	// RemoveInformer removes the series of both forms.
	if !f.RemoveInformer(schema.GroupVersionResource{Version: "v1", Resource: "pods"}) {
		t.Fatal("RemoveInformer(pods) = false")
	}
	after := scrapeNow(t, url)
	if left := filter(after, fl); len(left) != 0 {
		t.Errorf("series left after RemoveInformer: %v", left)
	}
	t.Logf("RemoveInformer: %d series of the factory before, %d after", len(filter(up, fl)), len(filter(after, fl)))
}

func filter(s scrape, substr string) []string {
	var out []string
	for k, v := range s {
		if strings.Contains(k, substr) {
			out = append(out, fmt.Sprintf("%s %v", k, v))
		}
	}
	slices.Sort(out)
	return out
}

// TestMetricsShardOwnership: two factories under one Lease membership,
// scraped over HTTP: their owned fractions sum to 1 alone, across a member
// joining and across it leaving, and the handovers are counted and timed.
func TestMetricsShardOwnership(t *testing.T) {
	c := setup(t)
	url := metricsEndpoint(t)
	for i := range 30 {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%02d", i)}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if _, err := c.client.CoreV1().Pods(c.ns).Create(c.ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	suffix := randSuffix()
	type replica struct {
		name string
		m    *sharding.Membership
		f    informers.Factory
		stop func()
	}
	start := func(id string) *replica {
		m, err := sharding.NewMembership(sharding.MembershipConfig{
			Client: c.client, Namespace: c.ns, Controller: "e2e-metrics", Identity: id,
			LeaseDuration: shardLeaseDuration, RenewInterval: shardRenewInterval,
		})
		if err != nil {
			t.Fatal(err)
		}
		name := "e2e-shard-" + id + "-" + suffix
		n, err := cache.NewInformerName(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := informers.NewForConfig(env.AdminConfig(), 0, informers.WithNamespace(c.ns),
			informers.WithInformerName(n), informers.WithShardMembership(m, sharding.FieldUID))
		if err != nil {
			t.Fatal(err)
		}
		f.Core().V1().Pods().Informer()
		ctx, cancel := context.WithCancel(c.ctx)
		if err := m.Start(ctx); err != nil {
			t.Fatal(err)
		}
		f.Start(ctx.Done())
		r := &replica{name: name, m: m, f: f}
		r.stop = sync.OnceFunc(func() { _ = m.Stop(context.Background()); cancel(); f.Shutdown() })
		t.Cleanup(r.stop)
		return r
	}
	owned := func(s scrape, r *replica) (float64, bool) {
		return s.get("kubeinformers_shard_owned_ratio", `factory="`+r.name+`"`)
	}
	waitSum := func(what string, rs []*replica, each []float64) scrape {
		t.Helper()
		var s scrape
		if !eventually(60*time.Second, 50*time.Millisecond, func() bool {
			s = scrapeNow(t, url)
			for i, r := range rs {
				if v, ok := owned(s, r); !ok || v != each[i] {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("%s: owned fractions never became %v: %v", what, each, filter(s, "kubeinformers_shard_"))
		}
		sum := 0.0
		var parts []string
		for _, r := range rs {
			v, _ := owned(s, r)
			sum += v
			parts = append(parts, fmt.Sprintf("%s owns %v (members %v, handovers %v)", r.name, v,
				s.value("kubeinformers_shard_members", `factory="`+r.name+`"`), s.value("kubeinformers_shard_handovers_total", `factory="`+r.name+`"`)))
		}
		if sum != 1 {
			t.Errorf("%s: owned fractions sum to %v, want 1", what, sum)
		}
		t.Logf("%s: %s; sum %v", what, strings.Join(parts, ", "), sum)
		return s
	}
	a := start("a")
	waitSum("one member", []*replica{a}, []float64{1})
	b := start("b")
	s := waitSum("two members", []*replica{a, b}, []float64{0.5, 0.5})
	if m := s.value("kubeinformers_shard_members", `factory="`+a.name+`"`); m != 2 {
		t.Errorf("members seen by a = %v, want 2", m)
	}
	b.stop()
	s = waitSum("b left", []*replica{a}, []float64{1})
	if _, ok := owned(s, b); ok {
		t.Errorf("b's shard series outlived its Shutdown")
	}
	// The informer hands over in its watch goroutine, after the
	// assignment: wait for the second.
	var hc, hs float64
	if !eventually(30*time.Second, 50*time.Millisecond, func() bool {
		s = scrapeNow(t, url)
		hc = s.value("kubeinformers_shard_handover_duration_seconds_count", `factory="`+a.name+`"`)
		hs = s.value("kubeinformers_shard_handover_duration_seconds_sum", `factory="`+a.name+`"`)
		return hc >= 2
	}) {
		t.Errorf("a's handovers timed = %v, want at least 2 (to half the space, back to the whole)", hc)
	}
	t.Logf("a: handovers_total %v, handover duration count %v sum %.3fs", s.value("kubeinformers_shard_handovers_total", `factory="`+a.name+`"`), hc, hs)
}

// TestMetricsStaticShardOwnership: the two replicas of a fixed shard
// (WithShard) against the real server, scraped over HTTP: each reports half
// the hash space and two members, their shares sum to 1, their caches are
// disjoint and together hold every Pod, and Shutdown drops their series.
func TestMetricsStaticShardOwnership(t *testing.T) {
	c := setup(t)
	url := metricsEndpoint(t)
	const pods = 20
	for i := range pods {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("f-%02d", i)}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if _, err := c.client.CoreV1().Pods(c.ns).Create(c.ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	suffix := randSuffix()
	var names []string
	var stops []func()
	held := 0
	for i := range 2 {
		name := fmt.Sprintf("e2e-fixed-%d-%s", i, suffix)
		n, err := cache.NewInformerName(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := informers.NewForConfig(env.AdminConfig(), 0, informers.WithNamespace(c.ns),
			informers.WithInformerName(n), informers.WithShard(sharding.FieldUID, i, 2))
		if err != nil {
			t.Fatal(err)
		}
		inf := f.Core().V1().Pods().Informer()
		ctx, cancel := context.WithCancel(c.ctx)
		f.Start(ctx.Done())
		// Shutdown waits for the informers, which stop with ctx.
		stop := sync.OnceFunc(func() { cancel(); f.Shutdown() })
		t.Cleanup(stop)
		if err := f.WaitForCacheSyncWithContext(c.ctx).AsError(); err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		held += len(inf.GetStore().List())
		names, stops = append(names, name), append(stops, stop)
	}
	if held != pods {
		t.Errorf("the two replicas hold %d Pods together, want %d", held, pods)
	}
	s := scrapeNow(t, url)
	sum := 0.0
	for _, name := range names {
		owned, ok := s.get("kubeinformers_shard_owned_ratio", `factory="`+name+`"`)
		members := s.value("kubeinformers_shard_members", `factory="`+name+`"`)
		if !ok || owned != 0.5 || members != 2 {
			t.Errorf("%s: owned %v (reported %v), members %v; want 0.5 and 2", name, owned, ok, members)
		}
		sum += owned
		t.Logf("%s owns %v of the hash space, members %v", name, owned, members)
	}
	if sum != 1 {
		t.Errorf("the fixed replicas' shares sum to %v, want 1", sum)
	}
	stops[0]()
	if _, ok := scrapeNow(t, url).get("kubeinformers_shard_owned_ratio", `factory="`+names[0]+`"`); ok {
		t.Errorf("%s: its shard series outlived Shutdown", names[0])
	}
}
