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

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	informers "github.com/kubeinformers/informers"

	"github.com/kubeinformers/informers/test/e2e/testenv"
)

// TestWatchForbiddenUser: a user who may list services in the namespace
// but not watch them. client-go's informer would report synced after the
// list and then fail every watch; the factory's "synced" includes the
// first watch, so WaitForCacheSync returns at once, long before its
// deadline, with the informer not synced and named with the server's
// answer, and Ready says the same.
func TestWatchForbiddenUser(t *testing.T) {
	c := setup(t)
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-lister"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list"}}},
	}
	if _, err := c.client.RbacV1().Roles(c.ns).Create(c.ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-lister"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "e2e-lister"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: testenv.LimitedUser}},
	}
	if _, err := c.client.RbacV1().RoleBindings(c.ns).Create(c.ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := c.client.CoreV1().Services(c.ns).Create(c.ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{label: testenv.LimitedUser}
	uclient := kubernetes.NewForConfigOrDie(rec.wrap(env.LimitedConfig()))
	if !eventually(30*time.Second, 100*time.Millisecond, func() bool {
		_, err := uclient.CoreV1().Services(c.ns).List(c.ctx, metav1.ListOptions{Limit: 1})
		return err == nil
	}) {
		t.Fatal("the list grant never took effect")
	}

	f, err := informers.New(uclient, 0, informers.WithNamespace(c.ns))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer func() { cancel(); f.Shutdown() }()
	f.Core().V1().Services().Informer()
	f.Start(ctx.Done())
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	start := time.Now()
	res := f.WaitForCacheSyncWithContext(wctx)
	elapsed := time.Since(start)
	if wctx.Err() != nil {
		t.Fatalf("WaitForCacheSync waited for its whole deadline: %v", res.Err)
	}
	t.Logf("WaitForCacheSync returned after %v: %v", elapsed.Round(time.Millisecond), res.Err)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "services (v1)") || !strings.Contains(res.Err.Error(), "watch") || !strings.Contains(res.Err.Error(), "forbidden") {
		t.Errorf("WaitForCacheSync: %v, want it to name services (v1) and the forbidden watch", res.Err)
	}
	ready := f.Ready()
	t.Logf("Ready: %v", ready)
	if ready == nil || !strings.Contains(ready.Error(), "services (v1)") || !strings.Contains(ready.Error(), "forbidden") {
		t.Errorf("Ready: %v, want it to name services (v1) and the forbidden watch", ready)
	}
	watches := 0
	for _, q := range rec.snapshot() {
		if strings.HasSuffix(q.Path, "/services") && q.isWatch() {
			watches++
		}
	}
	t.Logf("%d watch requests of services by the lister", watches)
	if watches == 0 {
		t.Error("no watch of services was attempted")
	}
}
