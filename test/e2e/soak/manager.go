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
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/crcache"
	"github.com/kubeinformers/informers/sharding"
)

// The controller-runtime managers of the soak: two replicas of a manager,
// each on crcache.NewCache(informers.WithAPIDiscovery(),
// informers.WithShardMembership(...)) with a Lease membership of their own
// (mgrController), run from the start to the end, through every fault;
// each has a ConfigMap controller and a controller of gadgets, a custom
// resource whose CRD is deleted and created again under them. Faults of
// their own: a namespace taken out of their caches (SetNamespaces) and put
// back, a third manager joining and leaving, the gadgets' CRD cycled.

// mgrController names the managers' memberships.
const mgrController = "soak-manager"

// The managers' custom resource.
var (
	gadgetGVR = schema.GroupVersionResource{Group: "soak-manager.kubeinformers.io", Version: "v1", Resource: "gadgets"}
	gadgetGVK = gadgetGVR.GroupVersion().WithKind("Gadget")
)

// Goals of the managers' faults: after each, the managers' caches and
// reconcilers match the server within this.
const maxManagerSettle = 10 * time.Second

// managers is the soak's controller-runtime managers and their faults.
type managers struct {
	s   *soak
	dyn dynamic.Interface

	mu       sync.Mutex
	nss      []string      // the managers' namespaces now
	replicas []*mgrReplica // running: the two that run throughout, then a joined one
	nextID   int

	// Kept under mu: faults done, and the longest each took for the
	// managers to match the server again.
	counts struct {
		setNamespaces, memberships, crdCycles, failures int
	}
	settleMax time.Duration
}

// mgrReplica is one manager with its membership.
type mgrReplica struct {
	id     string
	m      *sharding.Membership
	cache  *crcache.Cache
	conns  *conns
	rec    *reconciled
	cancel context.CancelFunc
	done   chan error // Start's result
}

// reconciled is what a manager's reconcilers last read: the
// resourceVersion of each object (by objKey) found in the cache.
type reconciled struct {
	mu   sync.Mutex
	rv   map[string]string
	runs atomic.Int64
	// errs counts reads that failed otherwise than not found (retried
	// after a second).
	errs atomic.Int64
}

// objKey names an object of either kind: "configmap ns/name" or "gadget ns/name".
func objKey(kind, namespace, name string) string { return kind + " " + namespace + "/" + name }

func (r *reconciled) set(key, rv string) {
	r.mu.Lock()
	r.rv[key] = rv
	r.mu.Unlock()
}

func (r *reconciled) forget(key string) {
	r.mu.Lock()
	delete(r.rv, key)
	r.mu.Unlock()
}

func (r *reconciled) snapshot() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(r.rv))
	for k, v := range r.rv {
		out[k] = v
	}
	return out
}

func newManagers(s *soak) (*managers, error) {
	ms := &managers{s: s, dyn: dynamic.NewForConfigOrDie(s.env.AdminConfig()), nss: slices.Clone(s.nss)}
	if _, err := installCRD(s.ctx, ms.dyn, gadgetGVR, gadgetGVK.Kind, s.nss); err != nil {
		return nil, err
	}
	for range 2 {
		r, err := ms.start(s.nss)
		if err != nil {
			ms.close()
			return nil, err
		}
		ms.replicas = append(ms.replicas, r)
	}
	return ms, nil
}

// namespaces returns the managers' namespaces now.
func (ms *managers) namespaces() []string {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return slices.Clone(ms.nss)
}

func (ms *managers) inNamespaces(ns string) bool { return slices.Contains(ms.namespaces(), ns) }

func (ms *managers) running() []*mgrReplica {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return slices.Clone(ms.replicas)
}

// start starts a manager with a new member identity over nss.
func (ms *managers) start(nss []string) (*mgrReplica, error) {
	ms.mu.Lock()
	ms.nextID++
	id := ms.nextID
	ms.mu.Unlock()
	r := &mgrReplica{id: fmt.Sprintf("manager-%d", id), conns: &conns{}, rec: &reconciled{rv: map[string]string{}}, done: make(chan error, 1)}
	cfg := r.conns.install(ms.s.env.AdminConfig())
	m, err := sharding.NewMembership(sharding.MembershipConfig{
		Client: kubernetes.NewForConfigOrDie(cfg), Namespace: ms.s.leases, Controller: mgrController, Identity: r.id,
		LeaseDuration: sharding.DefaultLeaseDuration, RenewInterval: sharding.DefaultRenewInterval,
	})
	if err != nil {
		return nil, err
	}
	r.m = m
	defaults := map[string]cache.Config{}
	for _, ns := range nss {
		defaults[ns] = cache.Config{}
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                 clientgoscheme.Scheme,
		NewCache:               crcache.NewCache(informers.WithAPIDiscovery(), informers.WithShardMembership(m, sharding.FieldUID)),
		Cache:                  cache.Options{DefaultNamespaces: defaults},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Sharded controllers run on every replica; the same controller
		// names in each manager of the process.
		Controller: config.Controller{NeedLeaderElection: ptr.To(false), SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("%s: manager.New: %w", r.id, err)
	}
	crc, ok := mgr.GetCache().(*crcache.Cache)
	if !ok {
		return nil, fmt.Errorf("%s: the manager's cache is %T, want *crcache.Cache", r.id, mgr.GetCache())
	}
	r.cache = crc
	if err := ctrl.NewControllerManagedBy(mgr).Named("configmaps").For(&corev1.ConfigMap{}).
		Complete(ms.reconciler(r, "configmap", func() client.Object { return &corev1.ConfigMap{} })); err != nil {
		return nil, err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("gadgets").For(newGadget()).
		Complete(ms.reconciler(r, "gadget", newGadget)); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ms.s.ctx)
	r.cancel = cancel
	if err := m.Start(ctx); err != nil {
		cancel()
		return nil, fmt.Errorf("start membership %s: %w", r.id, err)
	}
	go func() { r.done <- mgr.Start(ctx) }()
	return r, nil
}

func newGadget() client.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gadgetGVK)
	return u
}

// reconciler reads the request's object from r's cache and records its
// resourceVersion, or forgets it when the cache does not hold it (deleted,
// outside r's shard, in a namespace taken out, or its CRD gone).
func (ms *managers) reconciler(r *mgrReplica, kind string, newObj func() client.Object) reconcile.Func {
	return func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		r.rec.runs.Add(1)
		key := objKey(kind, req.Namespace, req.Name)
		obj := newObj()
		err := r.cache.Get(ctx, req.NamespacedName, obj)
		switch {
		case err == nil:
			r.rec.set(key, obj.GetResourceVersion())
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err) || !ms.inNamespaces(req.Namespace):
			r.rec.forget(key)
		default:
			// Retried after a second rather than with the controller's
			// exponential backoff, so that the final check does not wait
			// on it; counted and logged.
			r.rec.errs.Add(1)
			klog.Errorf("%s: reconcile %s: %v", r.id, key, err)
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		return reconcile.Result{}, nil
	}
}

// stop ends r: gracefully (its Lease is deleted) or as a crash (its Lease
// expires). The manager must return from Start without error.
func (r *mgrReplica) stop(graceful bool) error {
	if graceful {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = r.m.Stop(sctx)
		cancel()
	}
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			return fmt.Errorf("%s: manager.Start returned %w", r.id, err)
		}
		return nil
	case <-time.After(time.Minute):
		return fmt.Errorf("%s: manager.Start did not return a minute after its context ended", r.id)
	}
}

func (ms *managers) close() {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for _, r := range ms.replicas {
		if err := r.stop(true); err != nil {
			ms.s.log.logf("%v", err)
		}
	}
	ms.replicas = nil
}

// severAll closes the managers' connections (the compaction fault).
func (ms *managers) severAll() int {
	n := 0
	for _, r := range ms.running() {
		n += r.conns.closeAll()
	}
	return n
}

// reconciles is the managers' reconciles so far, and reads that failed.
func (ms *managers) reconciles() (runs, errs int64) {
	for _, r := range ms.running() {
		runs += r.rec.runs.Load()
		errs += r.rec.errs.Load()
	}
	return runs, errs
}

// check compares the managers' caches and what their reconcilers last read
// with the server's configmaps and gadgets in the managers' namespaces: an
// object in no manager's cache is lost; one in a cache at another
// resourceVersion, or last reconciled at another (or never) by the manager
// that holds it, is stale, as is one a cache or a reconciler holds that is
// gone from the server (or from the namespaces); one in two caches is
// double-owned.
func (ms *managers) check(ctx context.Context) (d diff, detail string, err error) {
	ms.mu.Lock()
	nss, reps := slices.Clone(ms.nss), slices.Clone(ms.replicas)
	ms.mu.Unlock()
	server := map[string]string{}
	for _, ns := range nss {
		cms, err := ms.s.admin.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return d, "", err
		}
		for _, cm := range cms.Items {
			server[objKey("configmap", cm.Namespace, cm.Name)] = cm.ResourceVersion
		}
		gs, err := ms.dyn.Resource(gadgetGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue // the CRD is gone
		}
		if err != nil {
			return d, "", err
		}
		for _, g := range gs.Items {
			server[objKey("gadget", g.GetNamespace(), g.GetName())] = g.GetResourceVersion()
		}
	}
	cached := make([]map[string]string, len(reps))
	for i, r := range reps {
		if cached[i], err = r.cached(ctx); err != nil {
			return d, "", fmt.Errorf("%s: %w", r.id, err)
		}
	}
	for k, rv := range server {
		owners := 0
		for i, r := range reps {
			got, ok := cached[i][k]
			if !ok {
				continue
			}
			owners++
			read, reconciled := r.rec.snapshotOne(k)
			switch {
			case got != rv:
				d.stale++
				detail = fmt.Sprintf("%s caches %s at resourceVersion %s, the server %s", r.id, k, got, rv)
			case !reconciled || read != rv:
				d.stale++
				detail = fmt.Sprintf("%s last reconciled %s at resourceVersion %q, the server %s", r.id, k, read, rv)
			}
		}
		switch {
		case owners == 0:
			d.lost++
			detail = k + " is in no manager's cache"
		case owners > 1:
			d.double++
			detail = fmt.Sprintf("%s is in %d managers' caches", k, owners)
		}
	}
	for i, r := range reps {
		for k := range cached[i] {
			if _, ok := server[k]; !ok {
				d.stale++
				detail = fmt.Sprintf("%s still caches %s, gone from the server or the namespaces", r.id, k)
			}
		}
		for k := range r.rec.snapshot() {
			if _, ok := cached[i][k]; !ok {
				d.stale++
				detail = fmt.Sprintf("%s's reconciler last read %s, which its cache no longer holds", r.id, k)
			}
		}
	}
	return d, detail, nil
}

func (r *reconciled) snapshotOne(key string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rv, ok := r.rv[key]
	return rv, ok
}

// cached lists r's cache: configmaps and gadgets by objKey, with their
// resourceVersions.
func (r *mgrReplica) cached(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	var cms corev1.ConfigMapList
	if err := r.cache.List(ctx, &cms); err != nil {
		return nil, err
	}
	for _, cm := range cms.Items {
		out[objKey("configmap", cm.Namespace, cm.Name)] = cm.ResourceVersion
	}
	gs := &unstructured.UnstructuredList{}
	gs.SetGroupVersionKind(gadgetGVK.GroupVersion().WithKind(gadgetGVK.Kind + "List"))
	if err := r.cache.List(ctx, gs); err != nil {
		return nil, err
	}
	for _, g := range gs.Items {
		out[objKey("gadget", g.GetNamespace(), g.GetName())] = g.GetResourceVersion()
	}
	return out, nil
}

// settle waits, with the writer paused, until the managers match the
// server (check), and returns how long that took; an error names the last
// difference after timeout.
func (ms *managers) settle(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	ms.s.writer.pause.Lock()
	defer ms.s.writer.pause.Unlock()
	t0 := time.Now()
	var last string
	err := poll(ctx, timeout, func() (bool, error) {
		d, detail, err := ms.check(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("lost=%d stale=%d double-owned=%d, e.g. %s", d.lost, d.stale, d.double, detail)
		return d.clean(), nil
	})
	if err != nil {
		return 0, fmt.Errorf("the managers do not match the server: %s: %w", last, err)
	}
	return time.Since(t0), nil
}

// done records a manager fault: its count, and how long the managers took
// to match the server after it.
func (ms *managers) done(count *int, settled time.Duration) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	*count++
	ms.settleMax = max(ms.settleMax, settled)
}

func (ms *managers) failed() {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.counts.failures++
}

// changeNamespaces is a fault: one namespace (another each time) is taken
// out of the managers' caches with SetNamespaces, while the writer goes on
// writing there, and put back 15 s later; after each change the managers
// must match the server.
func (ms *managers) changeNamespaces(ctx context.Context, n int) error {
	all := ms.s.nss
	if len(all) < 2 {
		return errors.New("one namespace: none to take out")
	}
	out := all[n%len(all)]
	set := func(nss []string) (time.Duration, error) {
		ms.mu.Lock()
		ms.nss = nss
		reps := slices.Clone(ms.replicas)
		ms.mu.Unlock()
		t0 := time.Now()
		for _, r := range reps {
			if err := r.cache.SetNamespaces(nss...); err != nil {
				return 0, fmt.Errorf("%s: %w", r.id, err)
			}
		}
		returned := time.Since(t0)
		settled, err := ms.settle(ctx, time.Minute)
		if err != nil {
			return 0, fmt.Errorf("SetNamespaces(%q) (returned after %v): %w", nss, returned.Round(time.Millisecond), err)
		}
		return settled, nil
	}
	removed, err := set(slices.DeleteFunc(slices.Clone(all), func(ns string) bool { return ns == out }))
	if err != nil {
		ms.failed()
		return err
	}
	sleepUntil(ctx, time.Now().Add(15*time.Second))
	added, err := set(slices.Clone(all))
	if err != nil {
		ms.failed()
		return err
	}
	ms.done(&ms.counts.setNamespaces, max(removed, added))
	ms.s.log.logf("managers: namespace %s taken out (matched the server %.2fs later) and put back (%.2fs later)", out, removed.Seconds(), added.Seconds())
	return nil
}

// changeMembership is a fault: a third manager joins; once the three match
// the server it leaves, gracefully and as a crash in turn (then the others
// take its ranges when its Lease expires).
func (ms *managers) changeMembership(ctx context.Context, n int) error {
	r, err := ms.start(ms.namespaces())
	if err != nil {
		ms.failed()
		return err
	}
	ms.mu.Lock()
	ms.replicas = append(ms.replicas, r)
	ms.mu.Unlock()
	joined, err := ms.settle(ctx, time.Minute)
	graceful := n%2 == 0
	ms.mu.Lock()
	ms.replicas = slices.DeleteFunc(ms.replicas, func(x *mgrReplica) bool { return x == r })
	ms.mu.Unlock()
	if serr := r.stop(graceful); serr != nil {
		err = errors.Join(err, serr)
	}
	if err != nil {
		ms.failed()
		return fmt.Errorf("%s joined: %w", r.id, err)
	}
	left, err := ms.settle(ctx, sharding.DefaultLeaseDuration+time.Minute)
	if err != nil {
		ms.failed()
		return fmt.Errorf("%s left: %w", r.id, err)
	}
	settled, how := max(joined, left), "left"
	if !graceful {
		// Its ranges are no one's until its Lease expires: the wait
		// is the Lease's, not the managers'.
		settled, how = joined, fmt.Sprintf("crashed (its Lease lasts %v)", sharding.DefaultLeaseDuration)
	}
	ms.done(&ms.counts.memberships, settled)
	ms.s.log.logf("managers: %s joined (matched the server %.2fs later) and %s (%.2fs later)", r.id, joined.Seconds(), how, left.Seconds())
	return nil
}

// cycleCRD is a fault: the gadgets' CRD is deleted (the managers' caches
// and reconcilers must let go of every gadget) and created again with new
// gadgets (which they must cache and reconcile).
func (ms *managers) cycleCRD(ctx context.Context, _ int) error {
	err := ms.cycle(ctx)
	if err != nil {
		ms.failed()
		return restoreCRD(ctx, ms.dyn, gadgetGVR, gadgetGVK.Kind, ms.s.nss, err)
	}
	return nil
}

func (ms *managers) cycle(ctx context.Context) error {
	if err := uninstallCRD(ctx, ms.dyn, gadgetGVR); err != nil {
		return err
	}
	emptied, err := ms.settle(ctx, time.Minute)
	if err != nil {
		return fmt.Errorf("the CRD deleted: %w", err)
	}
	served, err := installCRD(ctx, ms.dyn, gadgetGVR, gadgetGVK.Kind, ms.s.nss)
	if err != nil {
		return err
	}
	if _, err := ms.settle(ctx, time.Minute); err != nil {
		return fmt.Errorf("the CRD created again: %w", err)
	}
	synced := time.Since(served) // from the resource served, as the informers' goal
	ms.done(&ms.counts.crdCycles, max(emptied, synced))
	ms.s.log.logf("managers: CRD %s deleted: caches and reconcilers let go %.2fs after the CRD was gone; created again: gadgets cached and reconciled %.2fs after the resource was served",
		gadgetGVR.GroupResource(), emptied.Seconds(), synced.Seconds())
	return nil
}
