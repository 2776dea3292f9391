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
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/test/e2e/testenv"
)

// TestAPIDiscoveryPermissions: a user whose RBAC grant comes after Start,
// is revoked and is granted again. Under WithAPIDiscovery the informer's
// Ready names the 403 while it lasts, it retries at most every 10 s, it
// logs one line when forbidden and one when permitted again, and it
// recovers within 60 s of each grant (in practice within the retry bound).
func TestAPIDiscoveryPermissions(t *testing.T) {
	c := setup(t)
	logs := captureLog(t, func(line string) string {
		switch {
		case strings.Contains(line, "The informer's requests are"):
			return "ours"
		case strings.Contains(line, "configmaps") && strings.Contains(line, "forbidden"):
			return "other"
		}
		return ""
	})
	rec := &recorder{label: testenv.LimitedUser}
	conns := &connCounter{}
	uclient := kubernetes.NewForConfigOrDie(conns.install(rec.wrap(env.LimitedConfig())))
	f, err := informers.New(uclient, 0, informers.WithNamespace(c.ns), informers.WithAPIDiscovery())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer func() { cancel(); f.Shutdown() }()
	f.Core().V1().ConfigMaps().Informer()
	f.StartWithContext(ctx)
	forbidden := func() bool { err := f.Ready(); return err != nil && strings.Contains(err.Error(), "forbidden") }
	ready := func() bool { return f.Ready() == nil }
	requests := func() int {
		return len(rec.filter(func(r request) bool { return strings.Contains(r.Path, "/configmaps") }))
	}

	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-cm-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "e2e-cm-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: testenv.LimitedUser}},
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-cm-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := c.client.RbacV1().Roles(c.ns).Create(c.ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grant := func() time.Duration {
		if _, err := c.client.RbacV1().RoleBindings(c.ns).Create(c.ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if !eventually(60*time.Second, 20*time.Millisecond, ready) {
			t.Fatalf("not ready 60 s after the grant: %v", f.Ready())
		}
		return time.Since(t0)
	}

	// No grant yet: Ready names the 403, and the informer retries at
	// growing intervals, at most every 10 s (plus a tenth).
	if !eventually(30*time.Second, 20*time.Millisecond, forbidden) {
		t.Fatalf("Ready() = %v, want the 403", f.Ready())
	}
	t0, r0 := time.Now(), requests()
	time.Sleep(12 * time.Second) // a window to count requests in: nothing to wait on
	window, forbiddenRequests := time.Since(t0), requests()-r0
	if !forbidden() {
		t.Errorf("Ready() = %v while forbidden", f.Ready())
	}
	first := grant()

	// Revoked: the running watch goes on until it ends; end it.
	if err := c.client.RbacV1().RoleBindings(c.ns).Delete(c.ctx, rb.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !eventually(60*time.Second, 100*time.Millisecond, func() bool { conns.closeAll(); return forbidden() }) {
		t.Fatalf("Ready() = %v after the revocation and the watch ended, want the 403", f.Ready())
	}
	second := grant()
	cancel()
	f.Shutdown()

	ours := logs.get("ours")
	t.Logf("grant to ready: %v (first), %v (after a revocation); %d requests in %v while forbidden; log lines: %d ours, %d others about the 403",
		first.Round(time.Millisecond), second.Round(time.Millisecond), forbiddenRequests, window.Round(time.Second), ours, logs.get("other"))
	// Forbidden at the start and after the revocation, permitted after
	// each grant.
	if ours != 4 {
		t.Errorf("%d log lines about permissions, want 4:\n%s", ours, strings.Join(logs.lines, "\n"))
	}
	if n := logs.get("other"); n != 0 {
		t.Errorf("%d other log lines about the 403:\n%s", n, strings.Join(logs.lines, "\n"))
	}
	// Over 12 s at 1, 2, 4, 8 s: at most 5 requests (the first included).
	if forbiddenRequests > 5 {
		t.Errorf("%d requests in %v while forbidden, want at most 5", forbiddenRequests, window)
	}
}
