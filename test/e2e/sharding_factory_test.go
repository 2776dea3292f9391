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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
	"github.com/kubeinformers/informers/test/e2e/testenv"
)

// itemCounter counts, per resource (the last path segment of the
// collection), the objects the server sent: the items of LIST responses and
// the ADDED/MODIFIED/DELETED events of WATCH streams, read off the wire
// before any client-side filter. It needs JSON responses.
type itemCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *itemCounter) add(resource string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[resource] += n
}

func (c *itemCounter) get(resource string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[resource]
}

func (c *itemCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err != nil || resp.StatusCode != http.StatusOK || req.Method != http.MethodGet {
				return resp, err
			}
			resource := req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]
			q := req.URL.Query()
			if q.Get("watch") == "true" || q.Get("watch") == "1" {
				resp.Body = &eventCounter{ReadCloser: resp.Body, count: func(n int) { c.add(resource, n) }}
				return resp, nil
			}
			body, rerr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
			if rerr != nil {
				return resp, nil
			}
			var list struct {
				Kind  string            `json:"kind"`
				Items []json.RawMessage `json:"items"`
			}
			if json.Unmarshal(body, &list) == nil && strings.HasSuffix(list.Kind, "List") {
				c.add(resource, len(list.Items))
			}
			return resp, nil
		})
	})
	return cfg
}

// eventCounter counts the object events of a JSON watch stream, whose
// frames start with {"type":"ADDED" and so on.
type eventCounter struct {
	io.ReadCloser
	count func(int)
	tail  []byte
}

var eventPrefixes = [][]byte{[]byte(`{"type":"ADDED"`), []byte(`{"type":"MODIFIED"`), []byte(`{"type":"DELETED"`)}

func (e *eventCounter) Read(p []byte) (int, error) {
	n, err := e.ReadCloser.Read(p)
	if n > 0 {
		buf := append([]byte(nil), e.tail...)
		buf = append(buf, p[:n]...)
		for _, pre := range eventPrefixes {
			e.count(bytes.Count(buf, pre))
		}
		// Keep a tail shorter than the shortest prefix, so that a frame
		// split between two reads is counted once.
		keep := min(len(buf), len(eventPrefixes[0])-1)
		e.tail = append([]byte(nil), buf[len(buf)-keep:]...)
	}
	return n, err
}

// createConfigMaps creates n configmaps named prefix-i with a few workers.
func createShardConfigMaps(t *testing.T, ctx context.Context, client kubernetes.Interface, ns, prefix string, n, workers int) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", prefix, i)}, Data: map[string]string{"i": fmt.Sprint(i)}}
				if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- fmt.Errorf("create configmap %s: %w", cm.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// storeUIDs returns key -> UID of an informer's cache.
func storeUIDs(inf cache.SharedIndexInformer) map[string]string {
	out := map[string]string{}
	for _, obj := range inf.GetStore().List() {
		m, err := meta.Accessor(obj)
		if err != nil {
			continue
		}
		out[m.GetNamespace()+"/"+m.GetName()] = string(m.GetUID())
	}
	return out
}

// checkPartition verifies that the shards are pairwise disjoint, that
// their union is the server's objects, and that each holds only objects of
// its own range; it returns the shard sizes.
func checkPartition(t *testing.T, what string, server map[string]string, shards []map[string]string, sels []sharding.Selector) []int {
	t.Helper()
	owner := map[string]int{}
	sizes := make([]int, len(shards))
	for i, s := range shards {
		sizes[i] = len(s)
		for k, uid := range s {
			if j, dup := owner[k]; dup {
				t.Errorf("%s: %s is in shards %d and %d", what, k, j, i)
			}
			owner[k] = i
			if server[k] != uid {
				t.Errorf("%s: shard %d holds %s (uid %s), the server has uid %q", what, i, k, uid, server[k])
			}
			if !sels[i].Matches(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}) {
				t.Errorf("%s: shard %d holds %s, outside its range %s", what, i, k, sels[i])
			}
		}
	}
	for k := range server {
		if _, ok := owner[k]; !ok {
			t.Errorf("%s: %s is in no shard", what, k)
		}
	}
	return sizes
}

func serverUIDs(t *testing.T, ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string) map[string]string {
	t.Helper()
	list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list %s: %v", gvr, err)
	}
	out := map[string]string{}
	for _, u := range list.Items {
		out[u.GetNamespace()+"/"+u.GetName()] = string(u.GetUID())
	}
	return out
}

// shardReplica is one replica of a statically sharded controller.
type shardReplica struct {
	factory informers.Factory
	rec     *recorder
	items   *itemCounter
	sel     sharding.Selector
	infs    map[string]cache.SharedIndexInformer // by resource
}

func startShardReplicas(t *testing.T, ctx context.Context, base *rest.Config, ns string, count int, gvrs ...schema.GroupVersionResource) []*shardReplica {
	t.Helper()
	var out []*shardReplica
	for i := range count {
		r := &shardReplica{rec: &recorder{label: fmt.Sprintf("replica-%d", i)}, items: &itemCounter{}, infs: map[string]cache.SharedIndexInformer{}}
		sel, err := sharding.ForShard(sharding.FieldUID, i, count)
		if err != nil {
			t.Fatal(err)
		}
		r.sel = sel
		cfg := r.items.wrap(r.rec.wrap(rest.CopyConfig(base)))
		f, err := informers.NewForConfig(cfg, 0, informers.WithNamespace(ns), informers.WithShard(sharding.FieldUID, i, count))
		if err != nil {
			t.Fatal(err)
		}
		r.factory = f
		for _, gvr := range gvrs {
			gi, err := f.ForResource(gvr)
			if err != nil {
				t.Fatalf("ForResource(%s): %v", gvr, err)
			}
			r.infs[gvr.Resource] = gi.Informer()
		}
		fctx, cancel := context.WithCancel(ctx)
		f.Start(fctx.Done())
		// Shutdown waits for the informers, which stop with fctx.
		t.Cleanup(func() { cancel(); f.Shutdown() })
		out = append(out, r)
	}
	for i, r := range out {
		for res, synced := range r.factory.WaitForCacheSync(ctx.Done()) {
			if !synced {
				t.Fatalf("replica %d: %v did not sync; Ready: %v", i, res, r.factory.Ready())
			}
		}
	}
	return out
}

// TestShardedFactorySteadyState: three replicas, each a factory with
// WithShard(field, i, 3), over 3,000 configmaps and 300 custom resources. The
// shards partition the server's objects exactly, each replica receives
// about a third of them on the wire (the server filters), and every LIST
// and WATCH carries the canonical shardSelector.
func TestShardedFactorySteadyState(t *testing.T) {
	c := setup(t)
	const nCM, nCR, replicas = 3000, 300, 3
	gvr := installCRD(t, c, "sharding.e2e.kubeinformers.io", "shardwidgets", "ShardWidget")
	t.Cleanup(func() { deleteCRD(t, c, gvr) })
	start := time.Now()
	createShardConfigMaps(t, c.ctx, c.client, c.ns, "cm", nCM, 6)
	dyn := dynamic.NewForConfigOrDie(c.cfg)
	for i := range nCR {
		if _, err := dyn.Resource(gvr).Namespace(c.ns).Create(c.ctx, customObject(gvr, "ShardWidget", c.ns, fmt.Sprintf("w-%04d", i), int64(i)), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create custom object: %v", err)
		}
	}
	t.Logf("created %d configmaps and %d %s in %v", nCM, nCR, gvr.Resource, time.Since(start).Round(time.Millisecond))

	cmGVR := corev1.SchemeGroupVersion.WithResource("configmaps")
	start = time.Now()
	reps := startShardReplicas(t, c.ctx, c.cfg, c.ns, replicas, cmGVR, gvr)
	t.Logf("%d replicas synced in %v", replicas, time.Since(start).Round(time.Millisecond))

	sels := make([]sharding.Selector, replicas)
	for i, r := range reps {
		sels[i] = r.sel
	}
	for _, res := range []schema.GroupVersionResource{cmGVR, gvr} {
		server := serverUIDs(t, c.ctx, dyn, res, c.ns)
		var shards []map[string]string
		for _, r := range reps {
			shards = append(shards, storeUIDs(r.infs[res.Resource]))
		}
		sizes := checkPartition(t, res.Resource, server, shards, sels)
		received := 0
		for i, r := range reps {
			got := r.items.get(res.Resource)
			received += got
			frac := float64(got) / float64(len(server))
			t.Logf("%s: replica %d %s caches %d, received %d of %d objects on the wire (%.3f)", res.Resource, i, r.sel, sizes[i], got, len(server), frac)
			if frac < 0.2 || frac > 0.5 {
				t.Errorf("%s: replica %d received %d of %d objects (%.3f), want 0.2..0.5: the server did not filter", res.Resource, i, got, len(server), frac)
			}
		}
		if received < len(server) {
			t.Errorf("%s: the replicas received %d objects in all, fewer than the %d on the server", res.Resource, received, len(server))
		}
	}

	// Every LIST and WATCH of both resources carried the replica's selector.
	for i, r := range reps {
		lists, watches := 0, 0
		for _, q := range r.rec.snapshot() {
			if !strings.HasSuffix(q.Path, "/configmaps") && !strings.HasSuffix(q.Path, "/"+gvr.Resource) {
				continue
			}
			if got := q.Query.Get("shardSelector"); got != r.sel.String() {
				t.Errorf("replica %d: %s %s?%s: shardSelector %q, want %q", i, q.Method, q.Path, q.Query.Encode(), got, r.sel.String())
			}
			if q.isWatch() {
				watches++
			} else {
				lists++
			}
		}
		if lists+watches < 2 || watches == 0 {
			t.Errorf("replica %d: %d lists and %d watches recorded, want a watch per resource", i, lists, watches)
		}
		t.Logf("replica %d: %d LIST and %d WATCH requests, all with shardSelector=%s", i, lists, watches, r.sel)
		if n := r.factory.Notices(); len(n) != 0 {
			t.Errorf("replica %d: notices with the gate on: %v", i, n)
		}
	}
}

// TestShardedFactoryGateOff: a second API server without the
// ShardedListAndWatch gate ignores the selector; static shards are still
// exact through the client-side filter, and each replica reports the
// ignored selector once.
func TestShardedFactoryGateOff(t *testing.T) {
	_ = setup(t) // fail like every test when the main environment is down
	start := time.Now()
	env2, err := testenv.Start(testenv.Options{FeatureGates: "AllAlpha=true,AllBeta=true,ShardedListAndWatch=false"})
	if err != nil {
		t.Fatalf("start a second environment with ShardedListAndWatch=false: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gate-off environment logs:\n%s", env2.LogTails(40))
		}
		_ = env2.Stop()
	})
	t.Logf("gate-off kube-apiserver ready in %v", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := env2.AdminConfig()
	client := kubernetes.NewForConfigOrDie(cfg)
	ns := "e2e-shard-gate-off"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const n, replicas = 600, 3
	createShardConfigMaps(t, ctx, client, ns, "cm", n, 6)

	// The server really ignores the field: a raw LIST with a selector
	// returns every object.
	sel0, _ := sharding.ForShard(sharding.FieldUID, 0, replicas)
	raw, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ShardSelector: sel0.String()})
	if err != nil {
		t.Fatal(err)
	}
	if len(raw.Items) != n {
		t.Fatalf("gate off: a LIST with %s returned %d of %d objects, want all", sel0, len(raw.Items), n)
	}

	cmGVR := corev1.SchemeGroupVersion.WithResource("configmaps")
	reps := startShardReplicas(t, ctx, cfg, ns, replicas, cmGVR)
	server := serverUIDs(t, ctx, dynamic.NewForConfigOrDie(cfg), cmGVR, ns)
	var shards []map[string]string
	sels := make([]sharding.Selector, replicas)
	for i, r := range reps {
		shards = append(shards, storeUIDs(r.infs["configmaps"]))
		sels[i] = r.sel
	}
	sizes := checkPartition(t, "configmaps (gate off)", server, shards, sels)
	for i, r := range reps {
		notices := r.factory.Notices()
		t.Logf("gate off: replica %d caches %d of %d, received %d on the wire; notices: %q", i, sizes[i], len(server), r.items.get("configmaps"), notices)
		if got := r.items.get("configmaps"); got < len(server) {
			t.Errorf("gate off: replica %d received %d objects, want all %d (the server should ignore the selector)", i, got, len(server))
		}
		if len(notices) != 1 || !strings.Contains(notices[0], "ignored the shard selector") || !strings.Contains(notices[0], r.sel.String()) {
			t.Errorf("gate off: replica %d notices %q, want one naming the ignored selector %s", i, notices, r.sel)
		}
	}
}

// membershipReplica is one replica following a Lease-based membership.
type membershipReplica struct {
	id      string
	m       *sharding.Membership
	cancel  context.CancelFunc // of the membership's Start: a crash
	factory informers.Factory
	inf     cache.SharedIndexInformer
	view    *handlerView
}

func startMembershipReplica(t *testing.T, c *tcx, id string) *membershipReplica {
	t.Helper()
	m, err := sharding.NewMembership(sharding.MembershipConfig{
		Client: c.client, Namespace: c.ns, Controller: "e2e-sharded-factory", Identity: id,
		LeaseDuration: 3 * time.Second, RenewInterval: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := informers.New(c.client, 0, informers.WithNamespace(c.ns), informers.WithShardMembership(m, sharding.FieldUID))
	if err != nil {
		t.Fatal(err)
	}
	r := &membershipReplica{id: id, m: m, factory: f, view: newHandlerView()}
	r.inf = f.Core().V1().ConfigMaps().Informer()
	if _, err := r.inf.AddEventHandler(r.view.handler()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	r.cancel = cancel
	if err := m.Start(ctx); err != nil {
		cancel()
		t.Fatalf("start membership %s: %v", id, err)
	}
	f.Start(ctx.Done())
	t.Cleanup(func() {
		_ = m.Stop(context.Background())
		cancel()
		f.Shutdown()
	})
	return r
}

// coverage samples, against a reference view of the server, how many
// objects no live replica holds and how many two or more hold. Objects
// written in the last second are skipped: a watch has not delivered
// them yet.
func coverage(ref cache.Store, live []*membershipReplica, recent func(string) bool) (uncovered, double int) {
	for _, k := range ref.ListKeys() {
		if recent(k) {
			continue
		}
		owners := 0
		for _, r := range live {
			if _, ok, _ := r.inf.GetStore().GetByKey(k); ok {
				owners++
			}
		}
		switch {
		case owners == 0:
			uncovered++
		case owners > 1:
			double++
		}
	}
	return uncovered, double
}

// TestShardedFactoryMembershipChurn: three replicas follow Lease-based
// memberships while a writer creates, updates and deletes configmaps. One
// replica stops renewing (a crash); then a fourth joins. The test measures
// how long objects are owned by nobody and by two replicas, and checks that
// at the end every server object is in exactly one live replica's cache
// with the server's resourceVersion, and that each replica's handlers saw
// exactly its cache.
func TestShardedFactoryMembershipChurn(t *testing.T) {
	c := setup(t)
	createShardConfigMaps(t, c.ctx, c.client, c.ns, "base", 600, 6)

	// Reference: an unsharded informer, the server's view for sampling.
	ref, err := informers.New(c.client, 0, informers.WithNamespace(c.ns))
	if err != nil {
		t.Fatal(err)
	}
	refInf := ref.Core().V1().ConfigMaps().Informer()
	refCtx, refCancel := context.WithCancel(c.ctx)
	ref.Start(refCtx.Done())
	t.Cleanup(func() { refCancel(); ref.Shutdown() })
	ref.WaitForCacheSync(refCtx.Done())

	reps := []*membershipReplica{
		startMembershipReplica(t, c, "replica-a"),
		startMembershipReplica(t, c, "replica-b"),
		startMembershipReplica(t, c, "replica-c"),
	}

	// The writer.
	var written sync.Map // key -> time of the last write
	recent := func(k string) bool {
		v, ok := written.Load(k)
		return ok && time.Since(v.(time.Time)) < time.Second
	}
	wctx, stopWriter := context.WithCancel(c.ctx)
	var writes, writeErrs atomic.Int64
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			cms := c.client.CoreV1().ConfigMaps(c.ns)
			for seq := 0; wctx.Err() == nil; seq++ {
				var err error
				r := rng.Float64()
				var name string
				switch {
				case r < 0.4:
					name = fmt.Sprintf("w%d-%05d", w, seq)
					written.Store(c.ns+"/"+name, time.Now())
					_, err = cms.Create(wctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
				case r < 0.85:
					name = fmt.Sprintf("base-%05d", rng.IntN(600))
					written.Store(c.ns+"/"+name, time.Now())
					_, err = cms.Patch(wctx, name, "application/merge-patch+json", []byte(fmt.Sprintf(`{"data":{"seq":"%d"}}`, seq)), metav1.PatchOptions{})
				default:
					name = fmt.Sprintf("w%d-%05d", w, rng.IntN(seq+1))
					written.Store(c.ns+"/"+name, time.Now())
					err = cms.Delete(wctx, name, metav1.DeleteOptions{})
				}
				switch {
				case err == nil:
					writes.Add(1)
				case apierrors.IsNotFound(err) || wctx.Err() != nil:
				default:
					writeErrs.Add(1)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	t.Cleanup(func() { stopWriter(); wg.Wait() })

	// measure waits until no object is uncovered for a second and returns
	// the time until coverage was reached and the total time any sample
	// saw a double-owned object.
	measure := func(phase string, live []*membershipReplica, start time.Time) (covered, doubled time.Duration) {
		t.Helper()
		var last time.Time
		var firstCovered time.Time
		maxUncovered := 0
		for time.Since(start) < 60*time.Second {
			now := time.Now()
			un, dbl := coverage(refInf.GetStore(), live, recent)
			maxUncovered = max(maxUncovered, un)
			if !last.IsZero() && dbl > 0 {
				doubled += now.Sub(last)
			}
			last = now
			if un == 0 {
				if firstCovered.IsZero() {
					firstCovered = now
				}
				if now.Sub(firstCovered) > time.Second {
					t.Logf("%s: full coverage after %v (at most %d objects uncovered in a sample); double-owned for %v", phase, firstCovered.Sub(start).Round(time.Millisecond), maxUncovered, doubled.Round(time.Millisecond))
					return firstCovered.Sub(start), doubled
				}
			} else {
				firstCovered = time.Time{}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%s: no full coverage within 60s", phase)
		return 0, 0
	}
	measure("3 replicas start", reps, time.Now())

	// Replica c stops renewing: its process is gone, so is its cache.
	crash := time.Now()
	reps[2].cancel()
	reps[2].factory.Shutdown()
	live := reps[:2]
	crashCovered, crashDouble := measure("replica-c stops renewing", live, crash)

	// A fourth replica joins.
	join := time.Now()
	d := startMembershipReplica(t, c, "replica-d")
	live = append(live, d)
	joinCovered, joinDouble := measure("replica-d joins", live, join)

	time.Sleep(time.Second) // churn under the final assignment
	stopWriter()
	wg.Wait()
	t.Logf("writer: %d writes, %d errors", writes.Load(), writeErrs.Load())

	// Final check against the server.
	var lost, stale, double int
	var detail string
	ok := eventually(30*time.Second, 200*time.Millisecond, func() bool {
		ids, stores := make([]string, len(live)), make([]cache.Store, len(live))
		for i, r := range live {
			ids[i], stores[i] = r.id, r.inf.GetStore()
		}
		var err error
		if lost, stale, double, detail, err = checkAgainstServer(c, ids, stores); err != nil {
			return false
		}
		return lost == 0 && stale == 0 && double == 0
	})
	var sizes []string
	for _, r := range live {
		adds, updates, deletes, unknown := r.view.counts()
		sizes = append(sizes, fmt.Sprintf("%s=%d (ranges %v; handlers: %d adds, %d updates, %d deletes of which %d DeletedFinalStateUnknown)", r.id, len(r.inf.GetStore().ListKeys()), r.m.Ranges(), adds, updates, deletes, unknown))
	}
	t.Logf("final: objects %d, lost %d, stale %d, double-owned %d; %s", len(refInf.GetStore().ListKeys()), lost, stale, double, strings.Join(sizes, "; "))
	t.Logf("figures: crash→coverage %v (lease 3s), double-owned %v; join→coverage %v, double-owned %v",
		crashCovered.Round(time.Millisecond), crashDouble.Round(time.Millisecond), joinCovered.Round(time.Millisecond), joinDouble.Round(time.Millisecond))
	if !ok {
		t.Fatalf("not converged: lost %d, stale %d, double-owned %d; e.g. %s", lost, stale, double, detail)
	}

	// Each live replica's handlers reconstructed exactly its cache, and
	// the ranges moved: replica a gave up part of its range to d, which
	// it saw as DeletedFinalStateUnknown deletes.
	for _, r := range live {
		got := r.view.snapshot()
		for _, obj := range r.inf.GetStore().List() {
			cm := obj.(*corev1.ConfigMap)
			if got[cm.Name] != cm.ResourceVersion {
				t.Errorf("%s: handlers have %s at rv %q, the cache %s", r.id, cm.Name, got[cm.Name], cm.ResourceVersion)
			}
			delete(got, cm.Name)
		}
		for n := range got {
			t.Errorf("%s: handlers still hold %s, which is not in its cache", r.id, n)
		}
	}
	if _, _, _, unknown := reps[0].view.counts(); unknown == 0 {
		t.Errorf("replica-a saw no DeletedFinalStateUnknown although its range shrank when replica-d joined")
	}
}

// TestShardedFactoryMembershipConcurrentStart: three replicas whose
// memberships and factories start at once, as examples/sharded does, so the
// assignment changes while the first lists and watches are under way. The
// caches still converge to an exact partition, and no replica reports an
// ignored selector: the server has the gate.
func TestShardedFactoryMembershipConcurrentStart(t *testing.T) {
	c := setup(t)
	createShardConfigMaps(t, c.ctx, c.client, c.ns, "cm", 300, 4)
	var mu sync.Mutex
	var reps []*membershipReplica
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			r := startMembershipReplica(t, c, fmt.Sprintf("replica-%d", i))
			mu.Lock()
			reps = append(reps, r)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(reps) != 3 {
		t.FailNow()
	}
	var lost, double int
	ok := eventually(20*time.Second, 100*time.Millisecond, func() bool {
		list, err := c.client.CoreV1().ConfigMaps(c.ns).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		lost, double = 0, 0
		for _, cm := range list.Items {
			owners := 0
			for _, r := range reps {
				if _, ok, _ := r.inf.GetStore().GetByKey(cm.Namespace + "/" + cm.Name); ok {
					owners++
				}
			}
			switch {
			case owners == 0:
				lost++
			case owners > 1:
				double++
			}
		}
		return lost == 0 && double == 0
	})
	for _, r := range reps {
		t.Logf("%s: ranges %v, caches %d, notices %q", r.id, r.m.Ranges(), len(r.inf.GetStore().ListKeys()), r.factory.Notices())
		if n := r.factory.Notices(); len(n) != 0 {
			t.Errorf("%s: notices with the gate on: %q", r.id, n)
		}
	}
	if !ok {
		t.Fatalf("no exact partition after 20s: %d objects in no replica, %d in several", lost, double)
	}
}

// checkAgainstServer compares the configmaps in the replicas' caches (ids[i]
// names stores[i]) with the server's: objects in no cache (lost), in a cache
// at another resource version or deleted on the server (stale), and in
// several caches (double); detail describes one of them.
func checkAgainstServer(c *tcx, ids []string, stores []cache.Store) (lost, stale, double int, detail string, err error) {
	list, err := c.client.CoreV1().ConfigMaps(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, 0, "", err
	}
	seen := map[string]bool{}
	for _, cm := range list.Items {
		k := cm.Namespace + "/" + cm.Name
		seen[k] = true
		owners := 0
		for i, store := range stores {
			obj, ok, _ := store.GetByKey(k)
			if !ok {
				continue
			}
			owners++
			if rv := obj.(*corev1.ConfigMap).ResourceVersion; rv != cm.ResourceVersion {
				stale++
				detail = fmt.Sprintf("%s: %s has rv %s, the server %s", ids[i], k, rv, cm.ResourceVersion)
			}
		}
		switch {
		case owners == 0:
			lost++
			detail = k + " is in no live replica"
		case owners > 1:
			double++
			detail = fmt.Sprintf("%s is in %d replicas", k, owners)
		}
	}
	for i, store := range stores {
		for _, k := range store.ListKeys() {
			if !seen[k] {
				stale++
				detail = fmt.Sprintf("%s still holds %s, deleted on the server", ids[i], k)
			}
		}
	}
	return lost, stale, double, detail, nil
}
