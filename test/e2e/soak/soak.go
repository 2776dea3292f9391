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

package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
	"github.com/kubeinformers/informers/test/e2e/testenv"
)

// controller names the sharded replicas' memberships.
const controller = "soak"

// soak is the state of one run: the server, the writer, the replicas and
// the whole-cache factory, and the faults injected so far.
type soak struct {
	// ctx is the run's: replicas live under it, not under the faults'
	// context, which ends before the final check.
	ctx    context.Context
	env    *testenv.Env
	o      options
	log    *logger
	admin  kubernetes.Interface
	nss    []string
	leases string // namespace of the member Leases
	writer *writer

	mu       sync.Mutex
	replicas []*replica
	whole    *wholeCache
	custom   *customCache
	mgrs     *managers
	nextID   int

	counts struct {
		restarts, compactions, memberships, removals int
		crdCycles, crdFailures                       int
	}
	// The longest a CRD cycle took to empty the custom cache and to sync
	// it again.
	crdEmptied, crdSynced time.Duration
}

func newSoak(ctx context.Context, env *testenv.Env, o options, log *logger) (*soak, error) {
	admin := kubernetes.NewForConfigOrDie(env.AdminConfig())
	s := &soak{ctx: ctx, env: env, o: o, log: log, admin: admin, leases: "soak-leases"}
	for i := range o.namespaces {
		s.nss = append(s.nss, fmt.Sprintf("soak-%d", i))
	}
	for _, ns := range append([]string{s.leases}, s.nss...) {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	// The writer has a client of its own: its connections are not the
	// informers', which the compaction fault severs.
	s.writer = newWriter(kubernetes.NewForConfigOrDie(env.AdminConfig()), s.nss)
	if err := s.writer.seed(ctx, o.objects); err != nil {
		return nil, err
	}
	for range 3 {
		r, err := s.startReplica()
		if err != nil {
			return nil, err
		}
		s.replicas = append(s.replicas, r)
	}
	w, err := s.startWhole(ctx)
	if err != nil {
		return nil, err
	}
	s.whole = w
	if s.custom, err = s.startCustom(ctx); err != nil {
		return nil, err
	}
	syncCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, r := range s.replicas {
		if !cache.WaitForCacheSync(syncCtx.Done(), r.inf.HasSynced) {
			return nil, fmt.Errorf("replica %s not synced in 2 minutes: %w", r.id, r.factory.Ready())
		}
	}
	if !cache.WaitForCacheSync(syncCtx.Done(), w.informer().HasSynced) {
		return nil, fmt.Errorf("whole-cache factory not synced in 2 minutes: %w", w.factory.Ready())
	}
	if !cache.WaitForCacheSync(syncCtx.Done(), s.custom.inf.HasSynced) {
		return nil, fmt.Errorf("custom-resource factory not synced in 2 minutes: %w", s.custom.factory.Ready())
	}
	if s.mgrs, err = newManagers(s); err != nil {
		return nil, err
	}
	if _, err := s.mgrs.settle(ctx, 2*time.Minute); err != nil {
		return nil, fmt.Errorf("after their start: %w", err)
	}
	return s, nil
}

func (s *soak) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.replicas {
		r.stop(true)
	}
	// Shutdown waits for the informers, which stop when their context
	// ends, as with client-go.
	s.whole.cancel()
	s.whole.factory.Shutdown()
	if s.custom != nil {
		s.custom.close()
	}
	if s.mgrs != nil {
		s.mgrs.close()
	}
}

// conns counts a client's open connections, so that a fault can sever
// them (as a network blip or a load balancer would).
type conns struct {
	mu  sync.Mutex
	set map[*conn]struct{}
}

type conn struct {
	net.Conn
	c    *conns
	once sync.Once
}

func (c *conn) Close() error {
	c.once.Do(func() {
		c.c.mu.Lock()
		delete(c.c.set, c)
		c.c.mu.Unlock()
	})
	return c.Conn.Close()
}

func (c *conns) install(cfg *rest.Config) *rest.Config {
	c.set = map[*conn]struct{}{}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cc := &conn{Conn: nc, c: c}
		c.mu.Lock()
		c.set[cc] = struct{}{}
		c.mu.Unlock()
		return cc, nil
	}
	return cfg
}

func (c *conns) closeAll() int {
	c.mu.Lock()
	all := slices.Collect(maps.Keys(c.set))
	c.mu.Unlock()
	for _, cc := range all {
		_ = cc.Close()
	}
	return len(all)
}

// replica is one of the sharded replicas: a Lease membership and a factory
// that follows it, with a configmap informer over the soak's namespaces.
type replica struct {
	id      string
	m       *sharding.Membership
	factory informers.Factory
	inf     cache.SharedIndexInformer
	cancel  context.CancelFunc
	conns   *conns
}

func (s *soak) startReplica() (*replica, error) {
	s.nextID++
	id := fmt.Sprintf("replica-%d", s.nextID)
	cc := &conns{}
	client := kubernetes.NewForConfigOrDie(cc.install(s.env.AdminConfig()))
	m, err := sharding.NewMembership(sharding.MembershipConfig{
		Client: client, Namespace: s.leases, Controller: controller, Identity: id,
		LeaseDuration: sharding.DefaultLeaseDuration, RenewInterval: sharding.DefaultRenewInterval,
	})
	if err != nil {
		return nil, err
	}
	f, err := informers.New(client, 0, informers.WithNamespaces(s.nss...), informers.WithShardMembership(m, sharding.FieldUID))
	if err != nil {
		return nil, err
	}
	r := &replica{id: id, m: m, factory: f, conns: cc}
	r.inf = f.Core().V1().ConfigMaps().Informer()
	rctx, cancel := context.WithCancel(s.ctx)
	r.cancel = cancel
	if err := m.Start(rctx); err != nil {
		cancel()
		return nil, fmt.Errorf("start membership %s: %w", id, err)
	}
	f.Start(rctx.Done())
	return r, nil
}

// stop ends r: gracefully (its Lease is deleted, the others take its
// ranges at once) or as a crash (its Lease expires).
func (r *replica) stop(graceful bool) {
	if graceful {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = r.m.Stop(sctx)
		cancel()
	}
	r.cancel()
	r.factory.Shutdown()
}

// wholeCache is an unsharded factory over the same namespaces, whose
// configmap informer a fault removes and adds again.
type wholeCache struct {
	factory informers.Factory
	conns   *conns
	ctx     context.Context
	cancel  context.CancelFunc
}

func (s *soak) startWhole(ctx context.Context) (*wholeCache, error) {
	cc := &conns{}
	f, err := informers.New(kubernetes.NewForConfigOrDie(cc.install(s.env.AdminConfig())), 0, informers.WithNamespaces(s.nss...))
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &wholeCache{factory: f, conns: cc, ctx: wctx, cancel: cancel}
	w.informer()
	f.Start(wctx.Done())
	return w, nil
}

func (w *wholeCache) informer() cache.SharedIndexInformer {
	return w.factory.Core().V1().ConfigMaps().Informer()
}

var configMaps = corev1.SchemeGroupVersion.WithResource("configmaps")

// faults injects the faults on their schedule until ctx ends, and none in
// the last fifth of the run (at most two minutes), so that the end
// measures a settled system.
func (s *soak) faults(ctx context.Context, start time.Time, duration time.Duration) {
	quiet := min(duration/5, 2*time.Minute)
	type fault struct {
		name         string
		first, every time.Duration
		inject       func(ctx context.Context, n int) error
	}
	schedule := []fault{
		{"etcd compaction", 30 * time.Second, time.Minute, s.compact},
		{"membership change", 50 * time.Second, 2 * time.Minute, s.changeMembership},
		{"apiserver restart", 75 * time.Second, 150 * time.Second, s.restart},
		{"informer removed and added", 100 * time.Second, 2 * time.Minute, s.readdInformer},
		{"CRD deleted and created again", 115 * time.Second, 150 * time.Second, s.recreateCRD},
		{"managers' namespace taken out and put back", 130 * time.Second, 2 * time.Minute, s.mgrs.changeNamespaces},
		{"manager joined and left", 160 * time.Second, 2 * time.Minute, s.mgrs.changeMembership},
		{"managers' CRD deleted and created again", 200 * time.Second, 150 * time.Second, s.mgrs.cycleCRD},
	}
	type due struct {
		at time.Duration
		f  fault
		n  int
	}
	var plan []due
	for _, f := range schedule {
		for at, n := f.first, 0; at < duration-quiet; at, n = at+f.every, n+1 {
			plan = append(plan, due{at, f, n})
		}
	}
	sort.SliceStable(plan, func(i, j int) bool { return plan[i].at < plan[j].at })
	for _, d := range plan {
		sleepUntil(ctx, start.Add(d.at))
		if ctx.Err() != nil {
			return
		}
		t0 := time.Now()
		if err := d.f.inject(ctx, d.n); err != nil {
			s.log.logf("%s #%d: failed: %v", d.f.name, d.n+1, err)
			continue
		}
		s.log.logf("%s #%d done in %.1fs", d.f.name, d.n+1, time.Since(t0).Seconds())
	}
}

// compact makes the informers' watches end with 410 Gone: with the writer
// paused, two writes move etcd past every informer's resourceVersion,
// etcd is compacted there, and the informers' connections are severed,
// so that each watch is re-established from a compacted revision.
func (s *soak) compact(ctx context.Context, _ int) error {
	s.writer.pause.Lock()
	defer s.writer.pause.Unlock()
	for range 2 {
		if _, err := s.admin.CoreV1().Secrets(s.leases).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: "bump-"}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	rev, err := s.env.CompactEtcd(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	n := s.whole.conns.closeAll() + s.custom.conns.closeAll()
	for _, r := range s.replicas {
		n += r.conns.closeAll()
	}
	s.counts.compactions++
	s.mu.Unlock()
	m := s.mgrs.severAll()
	s.log.logf("compacted etcd at revision %d, severed %d informer connections and %d of the managers", rev, n, m)
	return nil
}

// restart restarts kube-apiserver, by SIGTERM and by SIGKILL in turn.
func (s *soak) restart(_ context.Context, n int) error {
	kill := n%2 == 1
	err := s.env.RestartAPIServer(kill)
	s.mu.Lock()
	s.counts.restarts++
	s.mu.Unlock()
	how := "SIGTERM"
	if kill {
		how = "SIGKILL"
	}
	s.log.logf("restarted kube-apiserver (%s)", how)
	return err
}

// changeMembership replaces one replica (the oldest) by a new one: it
// leaves gracefully and crashes in turn, and the new one joins at once.
func (s *soak) changeMembership(_ context.Context, n int) error {
	s.mu.Lock()
	old := s.replicas[0]
	s.mu.Unlock()
	graceful := n%2 == 0
	old.stop(graceful)
	r, err := s.startReplica()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.replicas = replaceOldest(s.replicas, r)
	s.counts.memberships++
	s.mu.Unlock()
	how := "left"
	if !graceful {
		how = "crashed"
	}
	s.log.logf("%s %s, %s joined", old.id, how, r.id)
	return nil
}

// replaceOldest drops the first of replicas and appends r. The departed
// replica leaves the slice's array too: resliced with replicas[1:], it
// would stay reachable there, with its stopped informer's cache, until an
// append reallocated, and add to the heap the soak measures.
func replaceOldest(replicas []*replica, r *replica) []*replica {
	return append(slices.Delete(replicas, 0, 1), r)
}

// readdInformer removes the whole-cache factory's configmap informer and
// adds it again; the new one must sync from scratch.
func (s *soak) readdInformer(ctx context.Context, _ int) error {
	f := s.whole.factory
	if !f.RemoveInformer(configMaps) {
		return fmt.Errorf("RemoveInformer(%v) found no informer", configMaps)
	}
	inf := s.whole.informer()
	f.Start(s.whole.ctx.Done())
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(sctx.Done(), inf.HasSynced) {
		return fmt.Errorf("the configmap informer added again did not sync in 2 minutes: %w", f.Ready())
	}
	s.mu.Lock()
	s.counts.removals++
	s.mu.Unlock()
	return nil
}

// converge checks every cache, the factories' and the managers', against
// the server until they match or timeout passes, and returns the last
// counts and the server's objects.
func (s *soak) converge(ctx context.Context, timeout time.Duration) (lost, stale, double, objects int, mgr diff, err error) {
	deadline := time.Now().Add(timeout)
	for {
		var detail, mgrDetail string
		lost, stale, double, objects, detail, err = s.check(ctx)
		if err == nil {
			mgr, mgrDetail, err = s.mgrs.check(ctx)
		}
		if err == nil && lost+stale+double == 0 && mgr.clean() {
			return lost, stale, double, objects, mgr, nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return 0, 0, 0, 0, diff{}, err
			}
			s.log.logf("caches still differ after %v: factories lost=%d stale=%d double-owned=%d (e.g. %s); managers lost=%d stale=%d double-owned=%d (e.g. %s)",
				timeout, lost, stale, double, detail, mgr.lost, mgr.stale, mgr.double, mgrDetail)
			s.diagnose()
			return lost, stale, double, objects, mgr, nil
		}
		time.Sleep(2 * time.Second)
	}
}

// diagnose logs what each replica believes: its members, its ranges, how
// many of its objects lie outside them, and its factory's Ready.
func (s *soak) diagnose() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.replicas {
		ranges := r.m.Ranges()
		outside := 0
		objs := r.inf.GetStore().List()
		for _, o := range objs {
			h := sharding.Hash(string(o.(*corev1.ConfigMap).UID))
			if !slices.ContainsFunc(ranges, func(rg sharding.Range) bool { return rg.Contains(h) }) {
				outside++
			}
		}
		s.log.logf("%s: members %v, ranges %v, health %v; %d objects cached, %d outside its ranges; last resourceVersion %s; Ready: %v; Notices: %q",
			r.id, r.m.Members(), ranges, r.m.Health(), len(objs), outside, r.inf.LastSyncResourceVersion(), r.factory.Ready(), r.factory.Notices())
	}
}

// check compares the caches with the server's configmaps: an object in no
// replica, or missing from the whole cache, is lost; one at another
// resourceVersion, or deleted on the server, is stale; one in several
// replicas is double-owned. The custom cache is compared with the
// server's widgets the same way (checkCustom).
func (s *soak) check(ctx context.Context) (lost, stale, double, objects int, detail string, err error) {
	server := map[string]string{}
	for _, ns := range s.nss {
		list, err := s.admin.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, 0, 0, 0, "", err
		}
		for _, cm := range list.Items {
			server[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
		}
	}
	s.mu.Lock()
	stores := map[string]cache.Store{"whole": s.whole.informer().GetStore()}
	var shards []string
	for _, r := range s.replicas {
		stores[r.id] = r.inf.GetStore()
		shards = append(shards, r.id)
	}
	s.mu.Unlock()
	rvOf := func(store cache.Store, k string) (string, bool) {
		obj, ok, _ := store.GetByKey(k)
		if !ok {
			return "", false
		}
		return obj.(*corev1.ConfigMap).ResourceVersion, true
	}
	for k, rv := range server {
		owners := 0
		for _, id := range shards {
			got, ok := rvOf(stores[id], k)
			if !ok {
				continue
			}
			owners++
			if got != rv {
				stale++
				detail = fmt.Sprintf("%s has %s at resourceVersion %s, the server %s", id, k, got, rv)
			}
		}
		switch {
		case owners == 0:
			lost++
			detail = k + " is in no replica"
		case owners > 1:
			double++
			detail = fmt.Sprintf("%s is in %d replicas", k, owners)
		}
		switch got, ok := rvOf(stores["whole"], k); {
		case !ok:
			lost++
			detail = k + " is missing from the whole cache"
		case got != rv:
			stale++
			detail = fmt.Sprintf("the whole cache has %s at resourceVersion %s, the server %s", k, got, rv)
		}
	}
	for id, store := range stores {
		for _, k := range store.ListKeys() {
			if _, ok := server[k]; !ok {
				stale++
				detail = fmt.Sprintf("%s still holds %s, deleted on the server", id, k)
			}
		}
	}
	cl, cs, cdetail, err := s.checkCustom(ctx)
	if cdetail != "" {
		detail = cdetail
	}
	return lost + cl, stale + cs, double, len(server), detail, err
}

// writer creates, updates and deletes configmaps at a steady rate, in
// turn, so that their number stays put.
type writer struct {
	client kubernetes.Interface
	nss    []string
	// pause, held, stops the writer between two writes.
	pause    sync.Mutex
	mu       sync.Mutex
	keys     []string // namespace/name of the objects it made
	seq      int
	writes   atomic.Int64
	failures atomic.Int64
	halt     chan struct{}
	done     sync.WaitGroup
}

func newWriter(client kubernetes.Interface, nss []string) *writer {
	return &writer{client: client, nss: nss, halt: make(chan struct{})}
}

func (w *writer) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.keys)
}

// object returns a new configmap of about 300 bytes of data.
func (w *writer) object() *corev1.ConfigMap {
	w.mu.Lock()
	w.seq++
	n := w.seq
	w.mu.Unlock()
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.nss[n%len(w.nss)], Name: fmt.Sprintf("cm-%07d", n), Labels: map[string]string{"app": "soak"}},
		Data:       map[string]string{"generation": "0", "pad": strings.Repeat("x", 256)},
	}
}

// seed creates n objects, eight at a time.
func (w *writer) seed(ctx context.Context, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	work := make(chan *corev1.ConfigMap)
	for range 8 {
		wg.Go(func() {
			for cm := range work {
				if err := w.create(ctx, cm); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for range n {
		work <- w.object()
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("seed %d objects: %w", n, err)
	default:
	}
	w.writes.Store(0)
	return nil
}

func (w *writer) create(ctx context.Context, cm *corev1.ConfigMap) error {
	_, err := w.client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	w.mu.Lock()
	w.keys = append(w.keys, cm.Namespace+"/"+cm.Name)
	w.mu.Unlock()
	w.writes.Add(1)
	return nil
}

// pick returns a random object the writer made, and removes it from its
// list if remove.
func (w *writer) pick(remove bool) (ns, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := rand.IntN(len(w.keys))
	k := w.keys[i]
	if remove {
		w.keys[i] = w.keys[len(w.keys)-1]
		w.keys = w.keys[:len(w.keys)-1]
	}
	ns, name, _ = strings.Cut(k, "/")
	return ns, name
}

// start writes at rate per second until stop: create, update, delete in
// turn. A write that fails (the server restarting) is counted and skipped.
func (w *writer) start(ctx context.Context, rate float64) {
	w.done.Go(func() {
		t := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-w.halt:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			w.pause.Lock()
			err := w.write(ctx, i%3)
			w.pause.Unlock()
			if err != nil {
				w.failures.Add(1)
			}
		}
	})
}

func (w *writer) write(ctx context.Context, op int) error {
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	switch op {
	case 0:
		return w.create(wctx, w.object())
	case 1:
		ns, name := w.pick(false)
		cms := w.client.CoreV1().ConfigMaps(ns)
		cm, err := cms.Get(wctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data["generation"] = fmt.Sprint(time.Now().UnixNano())
		if _, err := cms.Update(wctx, cm, metav1.UpdateOptions{}); err != nil {
			return err
		}
	default:
		ns, name := w.pick(true)
		err := w.client.CoreV1().ConfigMaps(ns).Delete(wctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			// Still there: keep it on the list.
			w.mu.Lock()
			w.keys = append(w.keys, ns+"/"+name)
			w.mu.Unlock()
			return err
		}
	}
	w.writes.Add(1)
	return nil
}

func (w *writer) stop() {
	close(w.halt)
	w.done.Wait()
}
