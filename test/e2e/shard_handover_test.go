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
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

// The handover tests run with the lease of issue 17's goals: 3 s, renewed
// every second.
const (
	handoverLease = 3 * time.Second
	handoverRenew = time.Second
)

// handoverReplica is a replica of a sharded controller: a membership and a
// factory following it, whose handlers record when each object version
// arrived.
type handoverReplica struct {
	id      string
	m       *sharding.Membership
	f       informers.Factory
	inf     cache.SharedIndexInformer
	cancelM context.CancelFunc // the membership's context
	cancelF context.CancelFunc // the factory's
	rec     *recorder          // the factory's requests
	counted int                // requests already counted (measureHandover)

	mu   sync.Mutex
	seen map[string]time.Time // name@rv -> when the handlers got it
}

func startHandoverReplica(t *testing.T, c *tcx, id string) *handoverReplica {
	t.Helper()
	m, err := sharding.NewMembership(sharding.MembershipConfig{
		Client: c.client, Namespace: c.ns, Controller: "e2e-handover", Identity: id,
		LeaseDuration: handoverLease, RenewInterval: handoverRenew,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{label: id}
	client := kubernetes.NewForConfigOrDie(rec.wrap(rest.CopyConfig(c.cfg)))
	f, err := informers.New(client, 0, informers.WithNamespace(c.ns), informers.WithShardMembership(m, sharding.FieldUID))
	if err != nil {
		t.Fatal(err)
	}
	r := &handoverReplica{id: id, m: m, f: f, rec: rec, seen: map[string]time.Time{}}
	r.inf = f.Core().V1().ConfigMaps().Informer()
	record := func(obj any) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			now := time.Now()
			r.mu.Lock()
			if _, dup := r.seen[cm.Name+"@"+cm.ResourceVersion]; !dup {
				r.seen[cm.Name+"@"+cm.ResourceVersion] = now
			}
			r.mu.Unlock()
		}
	}
	if _, err := r.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, o any) { record(o) }}); err != nil {
		t.Fatal(err)
	}
	mctx, cancelM := context.WithCancel(c.ctx)
	fctx, cancelF := context.WithCancel(c.ctx)
	r.cancelM, r.cancelF = cancelM, cancelF
	if err := m.Start(mctx); err != nil {
		cancelM()
		cancelF()
		t.Fatalf("start membership %s: %v", id, err)
	}
	f.Start(fctx.Done())
	t.Cleanup(r.crash)
	t.Cleanup(func() { _ = m.Stop(context.Background()) })
	return r
}

// leave is a graceful stop in the documented order: the membership first
// (its Lease is deleted and the factory owns nothing at once), then the
// factory.
func (r *handoverReplica) leave(t *testing.T) {
	t.Helper()
	if err := r.m.Stop(context.Background()); err != nil {
		t.Fatalf("%s: stop membership: %v", r.id, err)
	}
	r.cancelF()
	r.f.Shutdown()
}

// crash ends the process without a word: the factory and its cache are
// gone, and the Lease stays until it expires.
func (r *handoverReplica) crash() {
	r.cancelF()
	r.f.Shutdown()
	r.cancelM()
}

func (r *handoverReplica) seenAt(name, rv string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.seen[name+"@"+rv]
	return at, ok
}

// handoverWrite is one write of the writer: the version it made and when
// the request was sent.
type handoverWrite struct {
	name, rv string
	uid      types.UID
	at       time.Time
}

// handoverWriter creates, updates and deletes configmaps until stopped,
// recording every version it makes.
type handoverWriter struct {
	mu     sync.Mutex
	writes []handoverWrite
	last   map[string]time.Time // key -> time of the last write
	errs   atomic.Int64
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

func startHandoverWriter(c *tcx, base int) *handoverWriter {
	ctx, cancel := context.WithCancel(c.ctx)
	w := &handoverWriter{last: map[string]time.Time{}, stop: cancel}
	cms := c.client.CoreV1().ConfigMaps(c.ns)
	w.wg.Go(func() {
		rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
		for seq := 0; ctx.Err() == nil; seq++ {
			at := time.Now()
			var cm *corev1.ConfigMap
			var err error
			var name string
			switch r := rng.Float64(); {
			case r < 0.2:
				name = fmt.Sprintf("new-%05d", seq)
				w.touch(c.ns+"/"+name, at)
				cm, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			case r < 0.9:
				name = fmt.Sprintf("base-%05d", rng.IntN(base))
				w.touch(c.ns+"/"+name, at)
				cm, err = cms.Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"data":{"seq":"%d"}}`, seq), metav1.PatchOptions{})
			default:
				name = fmt.Sprintf("new-%05d", rng.IntN(seq+1))
				w.touch(c.ns+"/"+name, at)
				err = cms.Delete(ctx, name, metav1.DeleteOptions{})
			}
			switch {
			case err == nil && cm != nil:
				w.mu.Lock()
				w.writes = append(w.writes, handoverWrite{name: cm.Name, rv: cm.ResourceVersion, uid: cm.UID, at: at})
				w.mu.Unlock()
			case err == nil, apierrors.IsNotFound(err), ctx.Err() != nil:
			default:
				w.errs.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	return w
}

func (w *handoverWriter) touch(key string, at time.Time) {
	w.mu.Lock()
	w.last[key] = at
	w.mu.Unlock()
}

// recent reports whether key was written in the last second: no watch may
// have delivered it yet, so coverage does not count it.
func (w *handoverWriter) recent(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.last[key]
	return ok && time.Since(at) < time.Second
}

func (w *handoverWriter) between(from, to time.Time) []handoverWrite {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []handoverWrite
	for _, wr := range w.writes {
		if !wr.at.Before(from) && wr.at.Before(to) {
			out = append(out, wr)
		}
	}
	return out
}

func (w *handoverWriter) halt() {
	w.stop()
	w.wg.Wait()
}

func inRanges(h uint64, rs []sharding.Range) bool {
	return slices.ContainsFunc(rs, func(r sharding.Range) bool { return r.Contains(h) })
}

// handoverFigures are one change's measurements.
type handoverFigures struct {
	change      string
	coverage    time.Duration // until the new assignment is served exactly
	doubleOwned time.Duration // total time some object was in two caches
	nobody      time.Duration // the longest any object was in no cache
	keptDelay   time.Duration // the longest event delay in a range kept
	keptEvents  int
	lists       int // configmap requests of every replica during the change
	watches     int
}

func (f handoverFigures) String() string {
	return fmt.Sprintf("%-16s coverage %6v  double-owned %6v  owned by nobody (longest) %6v  kept-range delay %6v (%d events)  requests: %d lists, %d watches",
		f.change, f.coverage.Round(time.Millisecond), f.doubleOwned.Round(time.Millisecond), f.nobody.Round(time.Millisecond), f.keptDelay.Round(time.Millisecond), f.keptEvents, f.lists, f.watches)
}

// measureHandover samples the live replicas every 100 ms against the
// reference cache from start until the new assignment has been served
// exactly for a second, then computes the change's figures. before holds
// each surviving replica's ranges before the change.
func measureHandover(t *testing.T, change string, start time.Time, ref cache.Store, live, all []*handoverReplica, before map[string][]sharding.Range, w *handoverWriter) handoverFigures {
	t.Helper()
	fig := handoverFigures{change: change}
	ids := make([]string, 0, len(live))
	for _, r := range live {
		ids = append(ids, r.id)
	}
	sort.Strings(ids)
	uncoveredSince := map[string]time.Time{}
	var exactSince, last time.Time
	for {
		now := time.Now()
		if now.Sub(start) > 60*time.Second {
			t.Fatalf("%s: the new assignment was not served exactly within 60s", change)
		}
		converged := true
		var all []sharding.Range
		for _, r := range live {
			converged = converged && slices.Equal(r.m.Members(), ids)
			all = append(all, r.m.Ranges()...)
		}
		converged = converged && tiles(all)
		un, dbl := 0, 0
		for _, k := range ref.ListKeys() {
			if w.recent(k) {
				delete(uncoveredSince, k)
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
				un++
				if _, ok := uncoveredSince[k]; !ok {
					uncoveredSince[k] = now
				}
				fig.nobody = max(fig.nobody, now.Sub(uncoveredSince[k]))
			case owners > 1:
				dbl++
				delete(uncoveredSince, k)
			default:
				delete(uncoveredSince, k)
			}
		}
		if dbl > 0 && !last.IsZero() {
			fig.doubleOwned += now.Sub(last)
		}
		last = now
		if converged && un == 0 && dbl == 0 {
			if exactSince.IsZero() {
				exactSince = now
			}
			if now.Sub(exactSince) >= time.Second {
				break
			}
		} else {
			exactSince = time.Time{}
		}
		time.Sleep(100 * time.Millisecond)
	}
	fig.coverage = exactSince.Sub(start)
	// Kept-range delay: every version written from the change until the
	// end of the measurement, of an object in a range a surviving replica
	// owned before and after it, as that replica's handlers got it.
	end := time.Now().Add(-200 * time.Millisecond)
	for _, r := range all {
		r.rec.mu.Lock()
		for _, q := range r.rec.reqs[r.counted:] {
			if strings.HasSuffix(q.Path, "/configmaps") {
				if q.isWatch() {
					fig.watches++
				} else {
					fig.lists++
				}
			}
		}
		r.counted = len(r.rec.reqs)
		r.rec.mu.Unlock()
	}
	for _, r := range live {
		prev, ok := before[r.id]
		if !ok {
			continue // joined with this change: it keeps nothing
		}
		now := r.m.Ranges()
		for _, wr := range w.between(start, end) {
			h := sharding.Hash(string(wr.uid))
			if !inRanges(h, prev) || !inRanges(h, now) {
				continue
			}
			fig.keptEvents++
			at, ok := r.seenAt(wr.name, wr.rv)
			if !ok {
				at = time.Now() // never delivered: as late as it gets
			}
			fig.keptDelay = max(fig.keptDelay, at.Sub(wr.at))
		}
	}
	return fig
}

// TestShardHandover: three replicas over 1,500 configmaps and a writer go
// through six membership changes within two minutes (leave, join, crash,
// join, leave, join). Each change is handed over inside the informers'
// watches, so the sixth takes as long as the first. Per change it prints
// the time until the new assignment is served exactly, how long objects
// were double-owned, the longest any object was owned by nobody, and the
// longest event delay in a range a replica kept; it asserts issue 17's
// bounds, then 0 lost, 0 stale and 0 double-owned at the end.
func TestShardHandover(t *testing.T) {
	c := setup(t)
	const base = 1500
	createShardConfigMaps(t, c.ctx, c.client, c.ns, "base", base, 8)

	ref, err := informers.New(c.client, 0, informers.WithNamespace(c.ns))
	if err != nil {
		t.Fatal(err)
	}
	refInf := ref.Core().V1().ConfigMaps().Informer()
	refCtx, refCancel := context.WithCancel(c.ctx)
	ref.Start(refCtx.Done())
	t.Cleanup(func() { refCancel(); ref.Shutdown() })
	ref.WaitForCacheSync(refCtx.Done())

	live := []*handoverReplica{
		startHandoverReplica(t, c, "r0"),
		startHandoverReplica(t, c, "r1"),
		startHandoverReplica(t, c, "r2"),
	}
	all := slices.Clone(live)
	w := startHandoverWriter(c, base)
	t.Cleanup(w.halt)
	t.Log(measureHandover(t, "0: 3 start", time.Now(), refInf.GetStore(), live, all, nil, w))

	joined := 3
	without := func(id string) []*handoverReplica {
		return slices.DeleteFunc(slices.Clone(live), func(r *handoverReplica) bool { return r.id == id })
	}
	changes := []struct {
		kind   string
		target string // the replica that leaves or crashes
	}{
		{"leave", "r2"}, {"join", ""}, {"crash", "r1"}, {"join", ""}, {"leave", "r3"}, {"join", ""},
	}
	var figures []handoverFigures
	first := time.Now()
	for i, ch := range changes {
		before := map[string][]sharding.Range{}
		for _, r := range live {
			before[r.id] = r.m.Ranges()
		}
		start := time.Now()
		var name string
		switch ch.kind {
		case "leave":
			for _, r := range live {
				if r.id == ch.target {
					r.leave(t)
				}
			}
			live, name = without(ch.target), ch.target+" leaves"
		case "crash":
			for _, r := range live {
				if r.id == ch.target {
					r.crash()
				}
			}
			live, name = without(ch.target), ch.target+" crashes"
		case "join":
			id := fmt.Sprintf("r%d", joined)
			joined++
			r := startHandoverReplica(t, c, id)
			live, all, name = append(live, r), append(all, r), id+" joins"
		}
		fig := measureHandover(t, fmt.Sprintf("%d: %s", i+1, name), start, refInf.GetStore(), live, all, before, w)
		figures = append(figures, fig)
		t.Log(fig)
	}
	total := time.Since(first)
	w.halt()

	// The final state against the server.
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
	var writes int
	w.mu.Lock()
	writes = len(w.writes)
	w.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "6 changes in %v (lease %v, renew %v), %d base objects, writer: %d writes, %d errors\n", total.Round(time.Millisecond), handoverLease, handoverRenew, base, writes, w.errs.Load())
	for _, f := range figures {
		fmt.Fprintln(&b, f)
	}
	fmt.Fprintf(&b, "final: lost %d, stale %d, double-owned %d", lost, stale, double)
	t.Log("\n" + b.String())
	if !ok {
		t.Fatalf("not converged: lost %d, stale %d, double-owned %d; e.g. %s", lost, stale, double, detail)
	}
	if total > 2*time.Minute {
		t.Errorf("the 6 changes took %v, more than the 2 minutes the scenario asks for", total)
	}
	for i, f := range figures {
		bound := 2 * time.Second
		if changes[i].kind == "crash" {
			bound = handoverLease + 2*time.Second
		}
		if f.coverage > bound {
			t.Errorf("%s: coverage after %v, want at most %v", f.change, f.coverage, bound)
		}
		if f.doubleOwned > 2*time.Second {
			t.Errorf("%s: double-owned for %v, want at most 2s", f.change, f.doubleOwned)
		}
		if f.keptDelay > time.Second {
			t.Errorf("%s: an event in a kept range took %v, want at most 1s", f.change, f.keptDelay)
		}
	}
}

// TestShardMembershipEnds: when the membership a factory follows stops,
// whatever the order or the cause, the factory owns nothing within one
// renew interval, makes no further request, and no object is ever in two
// caches; the other replica ends up owning everything.
func TestShardMembershipEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(r *handoverReplica) error
	}{
		{"Stop before Shutdown", func(r *handoverReplica) error { return r.m.Stop(context.Background()) }},
		{"context canceled", func(r *handoverReplica) error { r.cancelM(); return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := setup(t)
			createShardConfigMaps(t, c.ctx, c.client, c.ns, "cm", 300, 6)
			a, b := startHandoverReplica(t, c, "a"), startHandoverReplica(t, c, "b")
			both := []*handoverReplica{a, b}
			waitFor(t, "both replicas to serve their halves", 30*time.Second, func() bool {
				un, dbl := ownedBy(c, both)
				return un == 0 && dbl == 0 && len(a.inf.GetStore().ListKeys()) > 0 && len(b.inf.GetStore().ListKeys()) > 0
			})
			held := len(a.inf.GetStore().ListKeys())
			ended := time.Now()
			if err := tc.end(a); err != nil {
				t.Fatal(err)
			}
			emptied := waitFor(t, "a to own nothing", 10*time.Second, func() bool { return len(a.inf.GetStore().ListKeys()) == 0 })
			requests := len(a.rec.filter(func(q request) bool { return strings.HasSuffix(q.Path, "/configmaps") }))
			// b takes a's half over: at once after Stop, at the Lease's
			// expiry after a cancellation. No object is in two caches
			// meanwhile.
			maxDouble := 0
			waitFor(t, "b to own everything", 30*time.Second, func() bool {
				un, dbl := ownedBy(c, both)
				maxDouble = max(maxDouble, dbl)
				return un == 0
			})
			covered := time.Since(ended)
			for i := range 20 {
				if _, err := c.client.CoreV1().ConfigMaps(c.ns).Create(c.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("after-%02d", i)}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, "b to cache the new objects", 10*time.Second, func() bool { un, _ := ownedBy(c, both); return un == 0 })
			later := len(a.rec.filter(func(q request) bool { return strings.HasSuffix(q.Path, "/configmaps") }))
			t.Logf("%s: a held %d objects and owned nothing %v after; b owned everything %v after; at most %d double-owned; a's configmap requests after: %d",
				tc.name, held, emptied.Round(time.Millisecond), covered.Round(time.Millisecond), maxDouble, later-requests)
			if emptied > handoverRenew {
				t.Errorf("a owned something for %v after its membership ended, want at most one renew interval (%v)", emptied, handoverRenew)
			}
			if maxDouble != 0 {
				t.Errorf("%d objects were in both caches after a's membership ended", maxDouble)
			}
			if later != requests {
				t.Errorf("a made %d configmap requests after owning nothing, want none", later-requests)
			}
			// The documented order after the wrong one: the factory's
			// Shutdown still works.
			a.cancelF()
			a.f.Shutdown()
		})
	}
}

// ownedBy counts the server's configmaps in no replica's cache and in more
// than one.
func ownedBy(c *tcx, rs []*handoverReplica) (uncovered, double int) {
	list, err := c.client.CoreV1().ConfigMaps(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		return -1, -1
	}
	for _, cm := range list.Items {
		n := 0
		for _, r := range rs {
			if _, ok, _ := r.inf.GetStore().GetByKey(cm.Namespace + "/" + cm.Name); ok {
				n++
			}
		}
		switch {
		case n == 0:
			uncovered++
		case n > 1:
			double++
		}
	}
	return uncovered, double
}
