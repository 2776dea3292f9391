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
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

// The Health rule of sharding.Membership on the real server: 3 s lease,
// 1 s renewal, so the default grace G is 3 s, a multiple of the renewal
// R, and a replica whose informers fail from t on publishes itself not
// ready by t + G + R.
const (
	healthLease = 3 * time.Second
	healthRenew = time.Second
)

// healthReplica is one replica: a membership on the admin client (its
// Leases) and a factory on the replica's own identity, caching the
// configmaps of its share.
type healthReplica struct {
	id      string
	m       *sharding.Membership
	factory informers.Factory
	inf     cache.SharedIndexInformer
	rec     *recorder // the factory's requests
	started time.Time // the factory's Start
}

// impersonated is the admin's config acting as user, who has no
// permission until granted.
func impersonated(user string) *rest.Config {
	cfg := env.AdminConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

func startHealthReplica(t *testing.T, c *tcx, id string, cfg *rest.Config) *healthReplica {
	t.Helper()
	m, err := sharding.NewMembership(sharding.MembershipConfig{
		Client: c.client, Namespace: c.ns, Controller: "e2e-health", Identity: id,
		LeaseDuration: healthLease, RenewInterval: healthRenew,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &healthReplica{id: id, m: m, rec: &recorder{label: id}}
	client := kubernetes.NewForConfigOrDie(r.rec.wrap(cfg))
	f, err := informers.New(client, 0, informers.WithNamespace(c.ns), informers.WithShardMembership(m, sharding.FieldUID))
	if err != nil {
		t.Fatal(err)
	}
	r.factory = f
	r.inf = f.Core().V1().ConfigMaps().Informer()
	ctx, cancel := context.WithCancel(c.ctx)
	if err := m.Start(ctx); err != nil {
		cancel()
		t.Fatalf("start membership %s: %v", id, err)
	}
	r.started = time.Now()
	f.Start(ctx.Done())
	t.Cleanup(func() {
		_ = m.Stop(context.Background())
		cancel()
		f.Shutdown()
	})
	return r
}

// grantConfigMaps lets user list and watch the configmaps of the test's
// namespace.
func grantConfigMaps(t *testing.T, c *tcx, user string) {
	t.Helper()
	name := "e2e-health-" + user
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := c.client.RbacV1().Roles(c.ns).Create(c.ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}},
	}
	if _, err := c.client.RbacV1().RoleBindings(c.ns).Create(c.ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// notReady is the AnnotationNotReady of r's Lease on the server, and
// whether it is there.
func (r *healthReplica) notReady(t *testing.T, c *tcx) (string, bool) {
	t.Helper()
	l, err := c.client.CoordinationV1().Leases(c.ns).Get(c.ctx, r.m.LeaseName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Lease of %s: %v", r.id, err)
	}
	v, ok := l.Annotations[sharding.AnnotationNotReady]
	return v, ok
}

// renewTime is spec.renewTime of r's Lease on the server.
func (r *healthReplica) renewTime(t *testing.T, c *tcx) time.Time {
	t.Helper()
	l, err := c.client.CoordinationV1().Leases(c.ns).Get(c.ctx, r.m.LeaseName(), metav1.GetOptions{})
	if err != nil || l.Spec.RenewTime == nil {
		t.Fatalf("Lease of %s: %v", r.id, err)
	}
	return l.Spec.RenewTime.Time
}

// forbiddenLists counts r's configmap lists the server refused.
func (r *healthReplica) forbiddenLists() int {
	return len(r.rec.filter(func(q request) bool {
		return q.isList() && strings.HasSuffix(q.Path, "/configmaps") && q.Status == http.StatusForbidden
	}))
}

// assignedAmong reports whether each of rs divides the space among
// exactly ids.
func assignedAmong(ids []string, rs ...*healthReplica) bool {
	for _, r := range rs {
		if !slices.Equal(r.m.Assigned(), ids) {
			return false
		}
	}
	return true
}

// owners counts, for each server object, the replicas of rs whose cache
// holds it with the server's UID: it returns the objects held by none and
// those held by two or more.
func owners(server map[string]string, rs ...*healthReplica) (lost, double int) {
	caches := make([]map[string]string, len(rs))
	for i, r := range rs {
		caches[i] = storeUIDs(r.inf)
	}
	for k, uid := range server {
		n := 0
		for _, cache := range caches {
			if cache[k] == uid {
				n++
			}
		}
		switch {
		case n == 0:
			lost++
		case n > 1:
			double++
		}
	}
	return lost, double
}

// exact reports whether the caches of rs hold exactly the server's objects,
// each in one cache, and each replica only objects of its own ranges.
func exact(server map[string]string, rs ...*healthReplica) bool {
	lost, double := owners(server, rs...)
	total := 0
	for _, r := range rs {
		ranges := r.m.Ranges()
		for _, uid := range storeUIDs(r.inf) {
			h := sharding.Hash(uid)
			if !slices.ContainsFunc(ranges, func(rg sharding.Range) bool { return rg.Contains(h) }) {
				return false
			}
			total++
		}
	}
	return lost == 0 && double == 0 && total == len(server)
}

// TestShardingHealthForbiddenReplica: of three replicas, one may not list
// the configmaps it is sharded on (403). It publishes itself not ready
// within G + R of its first failure (plus the time the others take to see
// its Lease), the other two cover every object between them, and it stays
// out while it still fails. Once RBAC lets it list, it takes a share again
// and the three caches partition the objects exactly.
func TestShardingHealthForbiddenReplica(t *testing.T) {
	c := setup(t)
	const n = 300
	createShardConfigMaps(t, c.ctx, c.client, c.ns, "cm", n, 6)
	server := serverUIDs(t, c.ctx, dynamic.NewForConfigOrDie(c.cfg), corev1.SchemeGroupVersion.WithResource("configmaps"), c.ns)

	r0 := startHealthReplica(t, c, "r0", env.AdminConfig())
	r1 := startHealthReplica(t, c, "r1", env.AdminConfig())
	user := "e2e-health-r2-" + randSuffix()
	r2 := startHealthReplica(t, c, "r2", impersonated(user))
	all := []string{"r0", "r1", "r2"}
	healthy := []string{"r0", "r1"}

	waitFor(t, "r2's first refused list", 10*time.Second, func() bool { return r2.forbiddenLists() > 0 })
	waitFor(t, "r0 and r1 to divide the space without r2", 30*time.Second, func() bool {
		return assignedAmong(healthy, r0, r1, r2)
	})
	dropOut := time.Since(r2.started) // its first list failed at once
	msg, ok := r2.notReady(t, c)
	if !ok || !strings.Contains(msg, "configmaps (v1)") || !strings.Contains(msg, "forbidden") {
		t.Fatalf("r2's Lease: annotation %q (present %v), want the forbidden configmap informer", msg, ok)
	}
	if !slices.Equal(r0.m.Members(), all) || len(r2.m.Ranges()) != 0 {
		t.Fatalf("r2 must stay a live member owning nothing: members %v, r2 owns %v", r0.m.Members(), r2.m.Ranges())
	}
	coverage := waitFor(t, "r0 and r1 to cover every object", 30*time.Second, func() bool { return exact(server, r0, r1) })
	grace := healthLease
	bound := grace + healthRenew
	t.Logf("forbidden replica: out %v after its factory started (bound G + R = %v, plus the others' watch delay); r0+r1 cover all %d objects %v after that",
		dropOut.Round(time.Millisecond), bound, n, coverage.Round(time.Millisecond))
	// The bound is the rule's, on the membership's clock; the slack is the
	// Lease watch's delay on a loaded machine, not a performance target.
	if dropOut > bound+healthRenew+2*time.Second {
		t.Errorf("r2 gave up its share %v after its first failure, beyond the bound %v", dropOut, bound)
	}

	// Owning nothing, r2 must keep finding out whether it can list: it
	// stays out as long as the server refuses it.
	refused := r2.forbiddenLists()
	waitFor(t, "r2 to try again, or to rejoin", 30*time.Second, func() bool {
		return r2.forbiddenLists() > refused || !assignedAmong(healthy, r0, r1)
	})
	if !assignedAmong(healthy, r0, r1, r2) {
		t.Fatalf("r2 took a share back while the server still refuses its lists: r0 assigns among %v", r0.m.Assigned())
	}
	if lost, double := owners(server, r0, r1, r2); lost != 0 || double != 0 {
		t.Fatalf("with r2 out: %d objects lost, %d double-owned", lost, double)
	}

	grantConfigMaps(t, c, user)
	rejoin := waitFor(t, "r2 to take a share again", 60*time.Second, func() bool { return assignedAmong(all, r0, r1, r2) })
	if err := r2.m.Health(); err != nil {
		t.Fatalf("r2 rejoined but reports %v", err)
	}
	settle := waitFor(t, "the three caches to partition the objects", 30*time.Second, func() bool { return exact(server, r0, r1, r2) })
	t.Logf("recovery: r2 back in the assignment %v after the grant (its informer learns it by a probe or a retry, then its next renewal), exact partition %v after that; %d refused lists in all",
		rejoin.Round(time.Millisecond), settle.Round(time.Millisecond), r2.forbiddenLists())
}

// TestShardingHealthAllFailing: when every replica fails (here: none may
// list), each publishes itself not ready, yet none gives its share up: the
// space stays divided among all live members. Once they may list, they
// become ready with their shares unchanged and cache exactly the objects.
func TestShardingHealthAllFailing(t *testing.T) {
	c := setup(t)
	createShardConfigMaps(t, c.ctx, c.client, c.ns, "cm", 60, 4)
	server := serverUIDs(t, c.ctx, dynamic.NewForConfigOrDie(c.cfg), corev1.SchemeGroupVersion.WithResource("configmaps"), c.ns)
	u0, u1 := "e2e-health-a-"+randSuffix(), "e2e-health-b-"+randSuffix()
	a := startHealthReplica(t, c, "a", impersonated(u0))
	b := startHealthReplica(t, c, "b", impersonated(u1))
	both := []string{"a", "b"}

	out := waitFor(t, "both Leases to say not ready", 30*time.Second, func() bool {
		_, na := a.notReady(t, c)
		_, nb := b.notReady(t, c)
		return na && nb
	})
	// The first to fail is out until the other fails too, and each sees
	// the other's annotation one Lease watch later: wait for that.
	eventually(10*time.Second, 20*time.Millisecond, func() bool {
		return a.m.Health() != nil && b.m.Health() != nil && assignedAmong(both, a, b) && tiles(append(a.m.Ranges(), b.m.Ranges()...))
	})
	if !assignedAmong(both, a, b) || !tiles(append(a.m.Ranges(), b.m.Ranges()...)) {
		t.Fatalf("every member not ready: a assigns among %v and owns %v, b owns %v; want both to keep their shares", a.m.Assigned(), a.m.Ranges(), b.m.Ranges())
	}
	// Two renewals later, still both.
	renewed := a.renewTime(t, c)
	for range 2 {
		waitFor(t, "a renewal", 10*time.Second, func() bool { return a.renewTime(t, c).After(renewed) })
		renewed = a.renewTime(t, c)
		if !assignedAmong(both, a, b) {
			t.Fatalf("a member dropped out of an all-failing assignment: %v", a.m.Assigned())
		}
	}
	t.Logf("all failing: both not ready %v after start, both keep their shares", out.Round(time.Millisecond))

	grantConfigMaps(t, c, u0)
	grantConfigMaps(t, c, u1)
	back := waitFor(t, "both ready with exact caches", 60*time.Second, func() bool {
		return a.m.Health() == nil && b.m.Health() == nil && assignedAmong(both, a, b) && exact(server, a, b)
	})
	t.Logf("all failing: ready and exact %v after the grants", back.Round(time.Millisecond))
}
