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
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/crcache"
	"github.com/kubeinformers/informers/metrics"
	"github.com/kubeinformers/informers/sharding"
	"github.com/kubeinformers/informers/test/e2e/testenv"
)

// TestCRCacheManagerSetNamespaces runs a ConfigMap controller on a
// manager whose cache has DefaultNamespaces {a}, and changes the cache's
// namespaces while it runs: SetNamespaces(a, b) brings b's objects to the
// reconciler (namespace added → first reconcile is printed) with no new
// request for a; SetNamespaces(b) sends a delete event for each of a's
// objects before it returns, the cache's List no longer has them, and b
// makes no new request.
func TestCRCacheManagerSetNamespaces(t *testing.T) {
	c := setup(t)
	checkLeaks(t)
	a, b := c.newNamespace("crns-a"), c.newNamespace("crns-b")
	const seeds = 5
	aKeys := mkConfigMaps(t, c, a, "seed", seeds)
	bKeys := mkConfigMaps(t, c, b, "seed", seeds)

	rec := &recorder{label: "admin"}
	mgr := newManager(t, rec.wrap(rest.CopyConfig(c.cfg)), manager.Options{
		NewCache: crcache.NewCache(),
		Cache:    cache.Options{DefaultNamespaces: map[string]cache.Config{a: {}}},
	})
	crc := crCache(t, mgr)
	r := newReconciles()
	configMapController(t, mgr, "configmaps-setns", r, nil)
	stop, _ := runManager(t, c.ctx, mgr)
	if !eventually(30*time.Second, 5*time.Millisecond, func() bool { n, _ := r.seen(aKeys...); return n == seeds }) {
		t.Fatalf("a's ConfigMaps not reconciled within 30 s: %v", r.keys())
	}
	cms := &deletes{}
	inf, err := crc.GetInformer(c.ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(cms.handler()); err != nil {
		t.Fatal(err)
	}

	// requests counts the lists and watches of ConfigMaps in ns so far.
	requests := func(ns string) [2]int {
		var n [2]int
		for _, q := range rec.snapshot() {
			if !strings.HasSuffix(q.Path, "/namespaces/"+ns+"/configmaps") {
				continue
			}
			if q.isWatch() {
				n[1]++
			} else if q.isList() {
				n[0]++
			}
		}
		return n
	}
	listed := func(ns string) int {
		var list corev1.ConfigMapList
		if err := crc.List(c.ctx, &list); err != nil {
			t.Fatalf("List: %v", err)
		}
		return len(slices.DeleteFunc(list.Items, func(cm corev1.ConfigMap) bool { return cm.Namespace != ns }))
	}

	// Added: b.
	aBefore := requests(a)
	added := time.Now()
	if err := crc.SetNamespaces(a, b); err != nil {
		t.Fatalf("SetNamespaces(a, b): %v", err)
	}
	returned := time.Since(added)
	if !eventually(30*time.Second, time.Millisecond, func() bool { n, _ := r.seen(bKeys...); return n == seeds }) {
		t.Fatalf("b's ConfigMaps not reconciled within 30 s of SetNamespaces: %v", r.keys())
	}
	first, _ := r.earliest(b)
	_, last := r.seen(bKeys...)
	time.Sleep(300 * time.Millisecond) // a window for a request a kept namespace must not make
	aAfter := requests(a)
	t.Logf("SetNamespaces(a, b) returned after %v; namespace added → first reconcile of its objects %v, all %d %v; b in the cache's List: %d; kept namespace a: LIST %d→%d, WATCH %d→%d",
		returned.Round(time.Millisecond), first.Sub(added).Round(time.Millisecond), seeds, last.Sub(added).Round(time.Millisecond),
		listed(b), aBefore[0], aAfter[0], aBefore[1], aAfter[1])
	if aAfter != aBefore {
		t.Errorf("kept namespace a made new requests: LIST %d→%d, WATCH %d→%d", aBefore[0], aAfter[0], aBefore[1], aAfter[1])
	}
	if n := listed(b); n != seeds {
		t.Errorf("the cache's List holds %d of b's %d ConfigMaps", n, seeds)
	}

	// Removed: a.
	bBefore := requests(b)
	removed := time.Now()
	if err := crc.SetNamespaces(b); err != nil {
		t.Fatalf("SetNamespaces(b): %v", err)
	}
	returned = time.Since(removed)
	deletesAtReturn, listedAtReturn := cms.in(a), listed(a)
	var inA corev1.ConfigMapList
	inAErr := crc.List(c.ctx, &inA, client.InNamespace(a))
	time.Sleep(300 * time.Millisecond)
	bAfter := requests(b)
	t.Logf("SetNamespaces(b) returned after %v with %d delete events for a's %d ConfigMaps and %d of them in the cache's List (List in a: %d items, err %v); kept namespace b: LIST %d→%d, WATCH %d→%d",
		returned.Round(time.Millisecond), deletesAtReturn, seeds, listedAtReturn, len(inA.Items), inAErr, bBefore[0], bAfter[0], bBefore[1], bAfter[1])
	if deletesAtReturn != seeds || listedAtReturn != 0 || len(inA.Items) != 0 {
		t.Errorf("after SetNamespaces(b) returned: %d delete events for a's %d objects, %d in the List, %d in a List of a; want %d, 0, 0",
			deletesAtReturn, seeds, listedAtReturn, len(inA.Items), seeds)
	}
	if bAfter != bBefore {
		t.Errorf("kept namespace b made new requests: LIST %d→%d, WATCH %d→%d", bBefore[0], bAfter[0], bBefore[1], bAfter[1])
	}
	if n := listed(b); n != seeds {
		t.Errorf("the cache's List holds %d of b's %d ConfigMaps", n, seeds)
	}
	stop()
}

// TestCRCacheManagerReadyForbidden runs a manager as a user who may read
// ConfigMaps but not Secrets, with a controller of each, on
// crcache.NewCache(informers.WithAPIDiscovery()), and the cache's
// ReadyzCheck on the manager's /readyz. Ready names the Secrets informer
// and the 403, and /readyz fails; after a grant, Ready is nil, /readyz
// passes and both controllers reconcile (the 403 is retried within 10 s).
func TestCRCacheManagerReadyForbidden(t *testing.T) {
	c := setup(t)
	checkLeaks(t)
	rbac := c.client.RbacV1()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-crcache-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := rbac.Roles(c.ns).Create(c.ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-crcache-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: testenv.LimitedUser}},
	}
	if _, err := rbac.RoleBindings(c.ns).Create(c.ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	limited := kubernetes.NewForConfigOrDie(env.LimitedConfig())
	if !eventually(30*time.Second, 20*time.Millisecond, func() bool {
		_, err := limited.CoreV1().ConfigMaps(c.ns).List(c.ctx, metav1.ListOptions{Limit: 1})
		return err == nil
	}) {
		t.Fatal("the ConfigMap grant did not take effect within 30 s")
	}
	cmKeys := mkConfigMaps(t, c, c.ns, "cm", 1)
	secret, err := c.client.CoreV1().Secrets(c.ns).Create(c.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secretKey := c.ns + "/" + secret.Name

	probes := freeAddr(t)
	mgr := newManager(t, env.LimitedConfig(), manager.Options{
		NewCache:               crcache.NewCache(informers.WithAPIDiscovery()),
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{c.ns: {}}},
		HealthProbeBindAddress: probes,
	})
	crc := crCache(t, mgr)
	if err := mgr.AddReadyzCheck("informers", crc.ReadyzCheck); err != nil {
		t.Fatal(err)
	}
	cms, secrets := newReconciles(), newReconciles()
	configMapController(t, mgr, "configmaps-forbidden", cms, nil)
	if err := ctrl.NewControllerManagedBy(mgr).Named("secrets-forbidden").For(&corev1.Secret{}).
		Complete(secrets.reconciler(mgr.GetClient(), func() client.Object { return &corev1.Secret{} })); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	stop, exited := runManager(t, c.ctx, mgr)
	readyz := func() (int, string) {
		code, body, err := httpGet("http://" + probes + "/readyz?verbose")
		if err != nil {
			return 0, err.Error()
		}
		return code, body
	}

	forbidden := func() bool {
		err := crc.Ready()
		return err != nil && strings.Contains(err.Error(), "secrets") && strings.Contains(err.Error(), "forbidden")
	}
	if !eventually(30*time.Second, 10*time.Millisecond, forbidden) {
		t.Fatalf("Ready() = %v 30 s after the start, want the Secrets informer's 403", crc.Ready())
	}
	toForbidden := time.Since(started)
	ready := crc.Ready().Error()
	if strings.Contains(ready, "configmaps") {
		t.Errorf("Ready() names the ConfigMaps informer, which may list: %s", ready)
	}
	var code int
	var body string
	if !eventually(10*time.Second, 20*time.Millisecond, func() bool { code, body = readyz(); return code != 0 }) {
		t.Fatalf("/readyz did not answer within 10 s: %s", body)
	}
	if code == http.StatusOK || !strings.Contains(body, "informers failed") {
		t.Errorf("/readyz = %d %q while Secrets are forbidden, want a failing informers check", code, body)
	}
	if n, _ := secrets.seen(secretKey); n != 0 {
		t.Errorf("the Secret controller reconciled while Secrets were forbidden")
	}
	t.Logf("Ready() %v after the manager's start: %s", toForbidden.Round(time.Millisecond), ready)
	t.Logf("/readyz: %d %s", code, strings.Join(strings.Fields(body), " "))

	// The grant.
	role.Rules[0].Resources = append(role.Rules[0].Resources, "secrets")
	if _, err := rbac.Roles(c.ns).Update(c.ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	if !eventually(30*time.Second, 5*time.Millisecond, func() bool { return crc.Ready() == nil }) {
		t.Fatalf("Ready() = %v 30 s after the grant", crc.Ready())
	}
	toReady := time.Since(granted)
	if !eventually(10*time.Second, 20*time.Millisecond, func() bool { code, body = readyz(); return code == http.StatusOK }) {
		t.Errorf("/readyz = %d %q 10 s after Ready() was nil", code, body)
	}
	toReadyz := time.Since(granted)
	for _, r := range []struct {
		name string
		rec  *reconciles
		key  string
	}{{"Secret", secrets, secretKey}, {"ConfigMap", cms, cmKeys[0]}} {
		if !eventually(30*time.Second, 5*time.Millisecond, func() bool { n, _ := r.rec.seen(r.key); return n == 1 }) {
			t.Errorf("the %s controller did not reconcile within 30 s of the grant", r.name)
		}
	}
	_, reconciledAt := secrets.seen(secretKey)
	_, cmReconciledAt := cms.seen(cmKeys...)
	select {
	case err := <-exited:
		t.Fatalf("the manager exited: %v", err)
	default:
	}
	stop()
	// controller-runtime's Kind source waits for the whole cache's
	// WaitForCacheSync before its controller's workers start, as it does
	// over controller-runtime's own cache: the ConfigMap controller may
	// wait for the Secrets informer too (negative: before the grant).
	t.Logf("grant → Ready() nil %v, → /readyz 200 %v, → the Secret reconciled %v (the ConfigMap %v)",
		toReady.Round(time.Millisecond), toReadyz.Round(time.Millisecond), reconciledAt.Sub(granted).Round(time.Millisecond),
		cmReconciledAt.Sub(granted).Round(time.Millisecond))
	if toReady > 10*time.Second {
		t.Errorf("Ready() nil %v after the grant, want within 10 s", toReady)
	}
}

// TestCRCacheManagerShards runs two replicas of a manager, each with its
// own Lease membership and crcache.NewCache(informers.WithShardMembership)
// and a ConfigMap controller, over 200 ConfigMaps: their caches are
// disjoint and together complete, and each reconciled exactly its own.
//
// How this fits with leader election: sharded controllers run on every
// replica, each on the objects of its shard, so they set
// NeedLeaderElection false (as here; the cache itself runs on every
// replica anyway); the membership's Leases, not a leader, divide the
// work. A controller that must run once in the whole deployment (one that
// writes cluster-wide state, say) keeps leader election and an unsharded
// cache, in the same manager or another.
func TestCRCacheManagerShards(t *testing.T) {
	c := setup(t)
	checkLeaks(t)
	const n = 200
	keys := mkConfigMaps(t, c, c.ns, "cm", n)
	r0, r1 := startShardMember(t, c, "r0"), startShardMember(t, c, "r1")
	waitFor(t, "2 members to converge", 30*time.Second, func() bool { return partitioned(r0, r1) })

	type replica struct {
		member *shardMember
		cache  *crcache.Cache
		rec    *reconciles
	}
	var replicas []replica
	started := time.Now()
	for _, m := range []*shardMember{r0, r1} {
		mgr := newManager(t, c.cfg, manager.Options{
			NewCache: crcache.NewCache(informers.WithShardMembership(m.Membership, sharding.FieldUID)),
			Cache:    cache.Options{DefaultNamespaces: map[string]cache.Config{c.ns: {}}},
		})
		rec := newReconciles()
		configMapController(t, mgr, "configmaps-"+m.id, rec, ptr.To(false))
		runManager(t, c.ctx, mgr)
		replicas = append(replicas, replica{m, crCache(t, mgr), rec})
	}
	// cached lists a replica's cache; nil before its cache has started.
	cached := func(r replica) []string {
		var list corev1.ConfigMapList
		if err := r.cache.List(c.ctx, &list, client.InNamespace(c.ns)); err != nil {
			if errors.As(err, new(*cache.ErrCacheNotStarted)) {
				return nil
			}
			t.Fatalf("%s: List: %v", r.member.id, err)
		}
		var out []string
		for _, cm := range list.Items {
			out = append(out, cm.Namespace+"/"+cm.Name)
		}
		return out
	}
	// complete: the two caches hold n objects between them, none twice,
	// and each replica reconciled what it holds.
	complete := func() bool {
		a, b := cached(replicas[0]), cached(replicas[1])
		union := append(slices.Clone(a), b...)
		slices.Sort(union)
		return len(union) == n && len(slices.Compact(union)) == n &&
			slices.Equal(replicas[0].rec.keys(), sorted(a)) && slices.Equal(replicas[1].rec.keys(), sorted(b))
	}
	if !eventually(30*time.Second, 10*time.Millisecond, complete) {
		t.Fatalf("not complete and disjoint 30 s after the start: caches %d and %d, reconciled %d and %d of %d",
			len(cached(replicas[0])), len(cached(replicas[1])), len(replicas[0].rec.keys()), len(replicas[1].rec.keys()), n)
	}
	toComplete := time.Since(started)
	var figures []string
	for _, r := range replicas {
		figures = append(figures, fmt.Sprintf("%s %v: %d cached, %d reconciled", r.member.id, r.member.Ranges(), len(cached(r)), len(r.rec.keys())))
	}
	all := append(cached(replicas[0]), cached(replicas[1])...)
	slices.Sort(all)
	if !slices.Equal(all, sorted(keys)) {
		t.Errorf("the union of the caches is not the server's %d ConfigMaps", n)
	}
	t.Logf("2 replicas, Lease membership, %d ConfigMaps: complete and disjoint %v after the managers' start; %s",
		n, toComplete.Round(time.Millisecond), strings.Join(figures, "; "))
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestCRCacheManagerMetrics: metrics.Register(ctrlmetrics.Registry)
// puts the informer families on the manager's /metrics. The manager's
// metrics server, on a free port, serves kubeinformers_informer_objects
// for its Pods informer, at the number of Pods the cache holds.
//
// metrics.Register is process-wide: from the call on, every factory of the
// process reports into the families, which it registers with each
// registerer it is given (here controller-runtime's registry; the other
// metrics tests register the same families with a registry of their own,
// which Register allows). Series carry the factory label, so the other
// tests' figures are not mixed with these.
func TestCRCacheManagerMetrics(t *testing.T) {
	c := setup(t)
	checkLeaks(t)
	if err := metrics.Register(ctrlmetrics.Registry); err != nil {
		t.Fatalf("metrics.Register(ctrlmetrics.Registry): %v", err)
	}
	const pods = 2
	var keys []string
	for i := range pods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
		}
		if _, err := c.client.CoreV1().Pods(c.ns).Create(c.ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, c.ns+"/"+pod.Name)
	}
	addr := freeAddr(t)
	mgr := newManager(t, c.cfg, manager.Options{
		NewCache: crcache.NewCache(),
		Cache:    cache.Options{DefaultNamespaces: map[string]cache.Config{c.ns: {}}},
		Metrics:  metricsserver.Options{BindAddress: addr},
	})
	r := newReconciles()
	if err := ctrl.NewControllerManagedBy(mgr).Named("pods-metrics").For(&corev1.Pod{}).
		Complete(r.reconciler(mgr.GetClient(), func() client.Object { return &corev1.Pod{} })); err != nil {
		t.Fatal(err)
	}
	stop, _ := runManager(t, c.ctx, mgr)
	if !eventually(30*time.Second, 5*time.Millisecond, func() bool { n, _ := r.seen(keys...); return n == pods }) {
		t.Fatalf("the Pods were not reconciled within 30 s")
	}
	// The Pods informer's series, for its resource in this manager's
	// namespace: the only pods informer of the process now running.
	var series []string
	var objects, synced float64
	ok := eventually(10*time.Second, 20*time.Millisecond, func() bool {
		code, body, err := httpGet("http://" + addr + "/metrics")
		if err != nil || code != http.StatusOK {
			return false
		}
		series, objects, synced = nil, 0, 0
		for _, line := range strings.Split(body, "\n") {
			if !strings.Contains(line, `resource="pods"`) {
				continue
			}
			value := line[strings.LastIndexByte(line, ' ')+1:]
			switch {
			case strings.HasPrefix(line, "kubeinformers_informer_objects{"):
				series = append(series, line)
				_, _ = fmt.Sscan(value, &objects)
			case strings.HasPrefix(line, "kubeinformers_informer_synced{"):
				_, _ = fmt.Sscan(value, &synced)
			}
		}
		return len(series) == 1 && objects == pods && synced == 1
	})
	stop()
	t.Logf("the manager's /metrics: %q; kubeinformers_informer_synced %v", series, synced)
	if !ok {
		t.Errorf("the manager's /metrics has %d kubeinformers_informer_objects series of pods (%q), objects %v, synced %v; want 1 series at %d, synced 1",
			len(series), series, objects, synced, pods)
	}
}
