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
	"encoding/base64"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/listwatch"
)

// handlerView is the state an event handler reconstructs from notifications.
type handlerView struct {
	mu             sync.Mutex
	present        map[string]string // name -> rv
	everSeen       map[string]bool
	adds, updates  int
	deletes        int
	unknownDeletes int
}

func newHandlerView() *handlerView {
	return &handlerView{present: map[string]string{}, everSeen: map[string]bool{}}
}

func (h *handlerView) handler() cache.ResourceEventHandler {
	name := func(obj any) (string, string) {
		k, rv := key(obj)
		if i := strings.LastIndex(k, "/"); i >= 0 {
			k = k[i+1:]
		}
		return k, rv
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			n, rv := name(obj)
			h.mu.Lock()
			h.present[n], h.everSeen[n] = rv, true
			h.adds++
			h.mu.Unlock()
		},
		UpdateFunc: func(_, obj any) {
			n, rv := name(obj)
			h.mu.Lock()
			h.present[n] = rv
			h.updates++
			h.mu.Unlock()
		},
		DeleteFunc: func(obj any) {
			n, _ := name(obj)
			_, unknown := obj.(cache.DeletedFinalStateUnknown)
			h.mu.Lock()
			delete(h.present, n)
			h.deletes++
			if unknown {
				h.unknownDeletes++
			}
			h.mu.Unlock()
		},
	}
}

func (h *handlerView) snapshot() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.present)
}

func (h *handlerView) counts() (adds, updates, deletes, unknown int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.adds, h.updates, h.deletes, h.unknownDeletes
}

// relKind is one resource kind under churn.
type relKind struct {
	name   string
	path   string // collection path, for counting relists
	create func(ctx context.Context, c kubernetes.Interface, ns, n string) error
	patch  func(ctx context.Context, c kubernetes.Interface, ns, n string, i int) error
	delete func(ctx context.Context, c kubernetes.Interface, ns, n string) error
	server func(ctx context.Context, c kubernetes.Interface, ns string) (map[string]string, error)
	cached func() map[string]string
	view   *handlerView

	mu      sync.Mutex
	deleted map[string]bool // names the writers deleted (confirmed by the server)
}

// churn is a set of writer goroutines mutating objects until stopped.
type churn struct {
	gate      sync.RWMutex // writers hold R per op; Lock pauses them
	stop      atomic.Bool
	mutations atomic.Int64
	failures  atomic.Int64
	notFound  atomic.Int64
	lastErr   atomic.Pointer[string]
	wg        sync.WaitGroup
}

func (ch *churn) run(ctx context.Context, client kubernetes.Interface, ns string, kinds []*relKind, workers int) {
	for w := 0; w < workers; w++ {
		ch.wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			alive := make([][]string, len(kinds))
			seq := 0
			for !ch.stop.Load() && ctx.Err() == nil {
				ch.gate.RLock()
				ki := rng.IntN(len(kinds))
				k := kinds[ki]
				octx, cancel := context.WithTimeout(ctx, 5*time.Second)
				var err error
				r := rng.Float64()
				switch {
				case len(alive[ki]) < 20 || r < 0.4:
					seq++
					n := fmt.Sprintf("w%d-%06d", w, seq)
					err = k.create(octx, client, ns, n)
					if err == nil || apierrors.IsAlreadyExists(err) || !apierrors.IsBadRequest(err) {
						alive[ki] = append(alive[ki], n) // possibly created even on error
					}
				case r < 0.7:
					n := alive[ki][rng.IntN(len(alive[ki]))]
					err = k.patch(octx, client, ns, n, seq)
					if apierrors.IsNotFound(err) {
						alive[ki] = slices.DeleteFunc(alive[ki], func(x string) bool { return x == n })
					}
				default:
					i := rng.IntN(len(alive[ki]))
					n := alive[ki][i]
					err = k.delete(octx, client, ns, n)
					if err == nil || apierrors.IsNotFound(err) {
						alive[ki] = slices.DeleteFunc(alive[ki], func(x string) bool { return x == n })
					}
					if err == nil {
						k.mu.Lock()
						k.deleted[n] = true
						k.mu.Unlock()
					}
				}
				cancel()
				ch.gate.RUnlock()
				switch {
				case apierrors.IsNotFound(err):
					// The object was never created (its create failed during an
					// outage) or is already gone: writer bookkeeping, not a failure.
					ch.notFound.Add(1)
				case err != nil:
					ch.failures.Add(1)
					msg := fmt.Sprintf("%s: %v", k.name, err)
					ch.lastErr.Store(&msg)
					time.Sleep(50 * time.Millisecond) // don't spin while the server is down
				default:
					ch.mutations.Add(1)
					time.Sleep(2 * time.Millisecond) // pace the writers
				}
			}
		})
	}
}

func relKinds(f informers.SharedInformerFactory, ns string) []*relKind {
	cms := f.Core().V1().ConfigMaps().Lister().ConfigMaps(ns)
	secs := f.Core().V1().Secrets().Lister().Secrets(ns)
	return []*relKind{
		configMapKind("configmaps (etcd watch)", ns, cms),
		{
			name: "secrets (watch cache)",
			path: "/api/v1/namespaces/" + ns + "/secrets",
			create: func(ctx context.Context, c kubernetes.Interface, ns, n string) error {
				_, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: n}, StringData: map[string]string{"i": "0"}}, metav1.CreateOptions{})
				return err
			},
			patch: func(ctx context.Context, c kubernetes.Interface, ns, n string, i int) error {
				v := base64.StdEncoding.EncodeToString(fmt.Append(nil, i))
				_, err := c.CoreV1().Secrets(ns).Patch(ctx, n, types.MergePatchType, fmt.Appendf(nil, `{"data":{"i":%q}}`, v), metav1.PatchOptions{})
				return err
			},
			delete: func(ctx context.Context, c kubernetes.Interface, ns, n string) error {
				return c.CoreV1().Secrets(ns).Delete(ctx, n, metav1.DeleteOptions{})
			},
			server: func(ctx context.Context, c kubernetes.Interface, ns string) (map[string]string, error) {
				l, err := c.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return nil, err
				}
				out := make(map[string]string, len(l.Items))
				for _, o := range l.Items {
					out[o.Name] = o.ResourceVersion
				}
				return out, nil
			},
			cached: func() map[string]string {
				l, _ := secs.List(labels.Everything())
				out := make(map[string]string, len(l))
				for _, o := range l {
					out[o.Name] = o.ResourceVersion
				}
				return out
			},
			view:    newHandlerView(),
			deleted: map[string]bool{},
		},
	}
}

// faultRow aggregates the results of one kind of fault.
type faultRow struct {
	fault        string
	count        int
	mutations    int64
	failedWrites int64
	relists      int
	cmRelists    int // relists of the configmap informer (watch served by etcd)
	unknownDels  int
	lost, stale  int
	worst        time.Duration
}

// divergence compares cache and handler view of k against the server.
func divergence(ctx context.Context, c kubernetes.Interface, ns string, k *relKind) (lost, stale int, detail string, err error) {
	server, err := k.server(ctx, c, ns)
	if err != nil {
		return 0, 0, "", err
	}
	missing, extra, wrongRV := diffState(k.cached(), server)
	stale = len(missing) + len(extra) + len(wrongRV)
	view := k.view.snapshot()
	var lostNames []string
	for n := range view {
		if _, ok := server[n]; !ok {
			lostNames = append(lostNames, n) // deleted on the server, handler never told
		}
	}
	k.mu.Lock()
	for n := range k.deleted {
		if _, ok := view[n]; ok && !slices.Contains(lostNames, n) {
			lostNames = append(lostNames, n)
		}
	}
	k.mu.Unlock()
	vmissing, _, vwrong := diffState(view, server)
	slices.Sort(lostNames)
	lost = len(lostNames)
	if stale+lost+len(vmissing)+len(vwrong) > 0 {
		detail = fmt.Sprintf("%s: lister missing %v extra %v stale %v; handler lost deletes %v, missing %v, stale %v",
			k.name, head(missing, 3), head(extra, 3), head(wrongRV, 3), head(lostNames, 3), head(vmissing, 3), head(vwrong, 3))
		stale += len(vmissing) + len(vwrong)
	}
	return lost, stale, detail, nil
}

// TestReliabilityFaults keeps writers busy while restarting kube-apiserver,
// compacting etcd and stopping etcd, and checks after each fault that every
// informer cache and handler view converges to the server state exactly.
func TestReliabilityFaults(t *testing.T) {
	c := setup(t)
	// Generous: after repeated faults the reflector's backoff (800ms doubling to
	// 30s, jittered up to 2x, reset after 2 quiet minutes) dominates recovery.
	const convergeTimeout = 120 * time.Second

	cc := &connCounter{}
	rec := &recorder{label: "admin"}
	icfg := rec.wrap(cc.install(env.AdminConfig()))
	f := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(icfg), 0, informers.WithNamespace(c.ns))
	defer f.Shutdown()
	kinds := relKinds(f, c.ns)
	// A second factory watches configmaps of two other namespaces through
	// one several-namespace informer (WithNamespaces): writers churn one
	// of them, the other holds a few objects that must stay put.
	nsMulti, nsStatic := c.newNamespace("rel-multi"), c.newNamespace("rel-static")
	for i := range 5 {
		mkCM(t, c, nsStatic, fmt.Sprintf("static-%d", i), nil)
	}
	fm, err := informers.New(kubernetes.NewForConfigOrDie(icfg), 0, informers.WithNamespaces(nsMulti, nsStatic))
	if err != nil {
		t.Fatal(err)
	}
	defer fm.Shutdown()
	multi := multiNamespaceKind(fm, nsMulti)
	kinds = append(kinds, multi)
	multiInf := fm.Core().V1().ConfigMaps().Informer()
	if _, err := multiInf.AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool { k, _ := key(obj); return strings.HasPrefix(k, nsMulti+"/") },
		Handler:    multi.view.handler(),
	}); err != nil {
		t.Fatal(err)
	}
	// A third, lean factory watches configmaps of its own namespace: its
	// typed informer decodes protobuf without managedFields
	// (internal/listwatch/pbdecode.go), so that path meets every fault too.
	nsLean := c.newNamespace("rel-lean")
	fl, err := informers.New(kubernetes.NewForConfigOrDie(icfg), 0, informers.WithNamespace(nsLean), informers.WithLeanMemory())
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Shutdown()
	lean := configMapKind("configmaps (lean: stripped protobuf)", nsLean, fl.Core().V1().ConfigMaps().Lister().ConfigMaps(nsLean))
	kinds = append(kinds, lean)
	if _, err := fl.Core().V1().ConfigMaps().Informer().AddEventHandler(lean.view.handler()); err != nil {
		t.Fatal(err)
	}
	strippedBefore := listwatch.StrippedObjects()
	cmInf, secInf := f.Core().V1().ConfigMaps().Informer(), f.Core().V1().Secrets().Informer()
	if _, err := cmInf.AddEventHandler(kinds[0].view.handler()); err != nil {
		t.Fatal(err)
	}
	if _, err := secInf.AddEventHandler(kinds[1].view.handler()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	syncFactory(t, ctx, f)
	syncFactory(t, ctx, fm)
	syncFactory(t, ctx, fl)

	// Writers use their own client (own connections), not the informers'.
	wclient := kubernetes.NewForConfigOrDie(env.AdminConfig())
	ch := &churn{}
	ch.run(ctx, wclient, c.ns, kinds, 4)
	defer func() {
		ch.stop.Store(true)
		ch.wg.Wait()
	}()
	// Build up some state: wait for writes rather than for a fixed time, which
	// on a loaded machine may see none.
	if !eventually(60*time.Second, 50*time.Millisecond, func() bool { return ch.mutations.Load() >= 200 }) {
		var last string
		if e := ch.lastErr.Load(); e != nil {
			last = *e
		}
		t.Fatalf("writers made %d mutations in 60s, want 200 before the first fault (last failed write: %q)", ch.mutations.Load(), last)
	}

	// relists counts initial lists (LIST, or a watch-list stream) per kind.
	relists := func(only string) int {
		n := 0
		for _, q := range rec.snapshot() {
			for _, k := range kinds {
				if (only == "" || only == k.path) && q.Path == k.path && (q.isList() || q.Query.Get("sendInitialEvents") == "true") {
					n++
				}
			}
		}
		return n
	}

	var rows []*faultRow
	row := func(name string) *faultRow {
		for _, r := range rows {
			if r.fault == name {
				return r
			}
		}
		r := &faultRow{fault: name}
		rows = append(rows, r)
		return r
	}

	// phase injects one fault, lets writers run on for a while after recovery,
	// then pauses them and waits for convergence.
	phase := func(name string, inject func() error) {
		r := row(name)
		m0, f0, rl0, nreq := ch.mutations.Load(), ch.failures.Load(), relists(""), len(rec.snapshot())
		cm0 := relists(kinds[0].path)
		var u0 int
		for _, k := range kinds {
			_, _, _, u := k.view.counts()
			u0 += u
		}
		if err := inject(); err != nil {
			t.Fatalf("%s: inject: %v\n%s", name, err, env.LogTails(60))
		}
		// Let writers run on after recovery, so that the informers must
		// follow writes made after the fault, not just before it.
		mAfter := ch.mutations.Load()
		if !eventually(60*time.Second, 50*time.Millisecond, func() bool { return ch.mutations.Load() >= mAfter+100 }) {
			t.Errorf("%s: writers made %d mutations in 60s after the fault, want 100", name, ch.mutations.Load()-mAfter)
		}
		ch.gate.Lock()
		paused := time.Now()
		var lost, stale int
		var details []string
		ok := eventually(convergeTimeout, 100*time.Millisecond, func() bool {
			lost, stale, details = 0, 0, nil
			for _, k := range kinds {
				l, s, d, err := divergence(ctx, wclient, c.ns, k)
				if err != nil {
					stale++
					details = append(details, err.Error())
					continue
				}
				lost += l
				stale += s
				if d != "" {
					details = append(details, d)
				}
			}
			return lost+stale == 0
		})
		took := time.Since(paused)
		ch.gate.Unlock()
		var u1 int
		for _, k := range kinds {
			_, _, _, u := k.view.counts()
			u1 += u
		}
		r.count++
		r.mutations += ch.mutations.Load() - m0
		r.failedWrites += ch.failures.Load() - f0
		r.relists += relists("") - rl0
		r.cmRelists += relists(kinds[0].path) - cm0
		r.unknownDels += u1 - u0
		r.lost += lost
		r.stale += stale
		if took > r.worst {
			r.worst = took
		}
		if os.Getenv("E2E_VERBOSE") != "" {
			for _, q := range rec.snapshot()[nreq:] {
				t.Logf("  informer request: %s %s?%s -> %d %v", q.Method, q.Path, q.Query.Encode(), q.Status, q.Err)
			}
		}
		if e := ch.lastErr.Load(); e != nil && r.failedWrites > 0 {
			t.Logf("  last failed write: %v", *e)
		}
		if !ok {
			t.Errorf("%s #%d: no convergence within %v: %s", name, r.count, convergeTimeout, strings.Join(details, "; "))
		} else {
			t.Logf("%s #%d: converged %v after writers paused", name, r.count, took.Round(time.Millisecond))
		}
	}

	phase("baseline (no fault)", func() error { return nil })
	for i := 0; i < 3; i++ {
		kill := i == 1
		phase("kube-apiserver restart", func() error { return env.RestartAPIServer(kill) })
	}
	for i := 0; i < 3; i++ {
		phase("etcd compaction + watch drop", func() error {
			// Pause writers so the informer's last RV is strictly older than
			// the compaction revision, then sever the informers' connections:
			// the re-established configmap watch (served by etcd) gets 410 Gone.
			ch.gate.Lock()
			defer ch.gate.Unlock()
			// Two writes of another kind: the compaction revision is then at
			// least two past the configmap informer's RV, so its watch (which
			// starts at RV+1) lies below the compaction.
			for i := 0; i < 2; i++ {
				if _, err := wclient.CoreV1().Secrets(c.ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: "bump-"}}, metav1.CreateOptions{}); err != nil {
					return err
				}
			}
			rev, err := env.CompactEtcd(ctx)
			if err != nil {
				return err
			}
			n := cc.closeAll()
			t.Logf("compacted etcd at revision %d; configmap informer at %s, secret informer at %s; severed %d informer connections",
				rev, cmInf.LastSyncResourceVersion(), secInf.LastSyncResourceVersion(), n)
			return nil
		})
	}
	for i := 0; i < 2; i++ {
		phase("etcd stop 4s + start", func() error {
			if err := env.StopEtcd(); err != nil {
				return err
			}
			time.Sleep(4 * time.Second)
			if err := env.StartEtcd(); err != nil {
				return err
			}
			return env.WaitReady(90 * time.Second)
		})
	}

	ch.stop.Store(true)
	ch.wg.Wait()

	// The namespace nobody wrote to kept exactly its objects through every
	// fault, next to the churned one in the same informer.
	statics, err := fm.Core().V1().ConfigMaps().Lister().ConfigMaps(nsStatic).List(labels.Everything())
	if err != nil || len(statics) != 5 {
		t.Errorf("several-namespace informer: %d configmaps cached in %s after the faults (%v), want its 5", len(statics), nsStatic, err)
	}
	if all, _ := fm.Core().V1().ConfigMaps().Lister().List(labels.Everything()); len(all) != len(statics)+len(multi.cached()) {
		t.Errorf("several-namespace informer caches %d configmaps, want %d (%s) + %d (%s)", len(all), len(multi.cached()), nsMulti, len(statics), nsStatic)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\n%-30s %5s %9s %7s %7s %9s %5s %5s %10s\n", "fault", "count", "mutations", "failed", "relists", "DFSU-dels", "lost", "stale", "worst-conv")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-30s %5d %9d %7d %7d %9d %5d %5d %10v\n", r.fault, r.count, r.mutations, r.failedWrites, r.relists, r.unknownDels, r.lost, r.stale, r.worst.Round(time.Millisecond))
	}
	for _, k := range kinds {
		a, u, d, unk := k.view.counts()
		k.mu.Lock()
		nd := len(k.deleted)
		k.mu.Unlock()
		fmt.Fprintf(&b, "%s: handler saw %d adds, %d updates, %d deletes (%d DeletedFinalStateUnknown); writers deleted %d\n", k.name, a, u, d, unk, nd)
	}
	t.Log(b.String())
	fmt.Println("RELIABILITY:" + b.String())
	for _, r := range rows {
		if r.fault == "etcd compaction + watch drop" && r.cmRelists < r.count {
			t.Errorf("compaction: configmap informer relisted %d times for %d compactions; expected the 410 to force a relist each time", r.cmRelists, r.count)
		}
	}
	// The lean informer's events came through the stripped decoding: at
	// least one object per configmap it caches, and some.
	if n, cached := listwatch.StrippedObjects()-strippedBefore, int64(len(lean.cached())); n < cached || n == 0 {
		t.Errorf("the lean informer decoded %d objects stripped and caches %d: want at least as many, and some", n, cached)
	}
}

// multiNamespaceKind is configmaps in ns, written there and read through a
// several-namespace informer of f.
func multiNamespaceKind(f informers.SharedInformerFactory, ns string) *relKind {
	return configMapKind("configmaps (2 namespaces)", ns, f.Core().V1().ConfigMaps().Lister().ConfigMaps(ns))
}

// configMapKind is configmaps in ns (whatever namespace churn passes),
// read through cms.
func configMapKind(name, ns string, cms corev1listers.ConfigMapNamespaceLister) *relKind {
	return &relKind{
		name: name,
		path: "/api/v1/namespaces/" + ns + "/configmaps",
		create: func(ctx context.Context, c kubernetes.Interface, _, n string) error {
			_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}, Data: map[string]string{"i": "0"}}, metav1.CreateOptions{})
			return err
		},
		patch: func(ctx context.Context, c kubernetes.Interface, _, n string, i int) error {
			_, err := c.CoreV1().ConfigMaps(ns).Patch(ctx, n, types.MergePatchType, fmt.Appendf(nil, `{"data":{"i":"%d"}}`, i), metav1.PatchOptions{})
			return err
		},
		delete: func(ctx context.Context, c kubernetes.Interface, _, n string) error {
			return c.CoreV1().ConfigMaps(ns).Delete(ctx, n, metav1.DeleteOptions{})
		},
		server: func(ctx context.Context, c kubernetes.Interface, _ string) (map[string]string, error) {
			return serverConfigMaps(ctx, c, ns)
		},
		cached: func() map[string]string {
			l, _ := cms.List(labels.Everything())
			out := make(map[string]string, len(l))
			for _, o := range l {
				out[o.Name] = o.ResourceVersion
			}
			return out
		},
		view:    newHandlerView(),
		deleted: map[string]bool{},
	}
}
