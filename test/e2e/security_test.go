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
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	informers "github.com/kubeinformers/informers"

	"github.com/kubeinformers/informers/test/e2e/testenv"
)

// grantLimitedUser binds the limited token user to read configmaps and pods in
// ns only, plus cluster-wide read of priorityclasses (so that one cluster-scoped
// informer is permitted).
func grantLimitedUser(t *testing.T, c *tcx) {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "pods"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := c.client.RbacV1().Roles(c.ns).Create(c.ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "e2e-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: testenv.LimitedUser}},
	}
	if _, err := c.client.RbacV1().RoleBindings(c.ns).Create(c.ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crName := "e2e-read-priorityclasses-" + c.ns
	cr := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: crName},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"scheduling.k8s.io"}, Resources: []string{"priorityclasses"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := c.client.RbacV1().ClusterRoles().Create(c.ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: crName},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: crName},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: testenv.LimitedUser}},
	}
	if _, err := c.client.RbacV1().ClusterRoleBindings().Create(c.ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = c.client.RbacV1().ClusterRoleBindings().Delete(ctx, crName, metav1.DeleteOptions{})
		_ = c.client.RbacV1().ClusterRoles().Delete(ctx, crName, metav1.DeleteOptions{})
	})
	// RBAC is served from an informer inside the apiserver; wait until it applies.
	probe := kubernetes.NewForConfigOrDie(env.LimitedConfig())
	if !eventually(30*time.Second, 100*time.Millisecond, func() bool {
		_, err1 := probe.CoreV1().ConfigMaps(c.ns).List(c.ctx, metav1.ListOptions{Limit: 1})
		_, err2 := probe.SchedulingV1().PriorityClasses().List(c.ctx, metav1.ListOptions{Limit: 1})
		return err1 == nil && err2 == nil
	}) {
		t.Fatal("RBAC grants for the limited user never took effect")
	}
}

func TestSecurityLimitedUser(t *testing.T) {
	c := setup(t)
	grantLimitedUser(t, c)
	rec := &recorder{label: testenv.LimitedUser}
	uclient := kubernetes.NewForConfigOrDie(rec.wrap(env.LimitedConfig()))

	t.Run("namespaced factory syncs", func(t *testing.T) {
		f := informers.NewSharedInformerFactoryWithOptions(uclient, 0, informers.WithNamespace(c.ns))
		defer f.Shutdown()
		cms := f.Core().V1().ConfigMaps().Lister()
		f.Core().V1().Pods().Informer()
		ctx, cancel := context.WithCancel(c.ctx)
		defer cancel()
		syncFactory(t, ctx, f)
		mkCM(t, c, c.ns, "visible", nil)
		if !eventually(30*time.Second, 50*time.Millisecond, func() bool {
			_, err := cms.ConfigMaps(c.ns).Get("visible")
			return err == nil
		}) {
			t.Error("namespaced informer of the limited user never saw a new configmap")
		}
	})

	t.Run("cluster-wide forbidden informer", func(t *testing.T) {
		f := informers.NewSharedInformerFactoryWithOptions(uclient, 0)
		defer f.Shutdown()
		f.Core().V1().Pods().Informer()
		pcs := f.Scheduling().V1().PriorityClasses().Lister()
		ctx, cancel := context.WithCancel(c.ctx)
		defer cancel()
		before := len(rec.snapshot())
		start := time.Now()
		f.Start(ctx.Done())
		const window = 5 * time.Second
		wctx, wcancel := context.WithTimeout(ctx, window)
		res := f.WaitForCacheSyncWithContext(wctx)
		wcancel()
		elapsed := time.Since(start)
		if elapsed > window+10*time.Second {
			t.Errorf("WaitForCacheSyncWithContext took %v with a %v deadline", elapsed, window)
		}
		err := res.AsError()
		if err == nil {
			t.Fatal("WaitForCacheSyncWithContext reported success although pods are forbidden cluster-wide")
		}
		t.Logf("sync error after %v: %v", elapsed.Round(time.Millisecond), err)
		if !strings.Contains(err.Error(), "v1.Pod") {
			t.Errorf("error does not name the unsynced pod informer: %v", err)
		}
		if strings.Contains(err.Error(), "PriorityClass") {
			t.Errorf("error names the permitted informer: %v", err)
		}
		if res.Synced[reflect.TypeOf(&corev1.Pod{})] {
			t.Error("pod informer reported synced")
		}
		if !res.Synced[reflect.TypeOf(&schedulingv1.PriorityClass{})] {
			t.Error("permitted priorityclass informer did not sync")
		}
		if l, err := pcs.List(everything()); err != nil || len(l) == 0 {
			t.Errorf("priorityclass lister: %d items, err %v (system priority classes exist)", len(l), err)
		}
		var attempts, forbidden int
		for _, q := range rec.snapshot()[before:] {
			if q.Path == "/api/v1/pods" {
				attempts++
				if q.Status == http.StatusForbidden {
					forbidden++
				}
			}
		}
		t.Logf("pod informer: %d LIST/WATCH attempts (%d forbidden) in %v", attempts, forbidden, elapsed.Round(time.Millisecond))
		if attempts == 0 || forbidden == 0 {
			t.Errorf("expected forbidden pod list attempts, got %d attempts, %d forbidden", attempts, forbidden)
		}
		if attempts >= 10 {
			t.Errorf("%d pod list attempts in %v: no backoff", attempts, elapsed.Round(time.Millisecond))
		}
	})

	for _, q := range rec.snapshot() {
		if q.Method != http.MethodGet {
			t.Errorf("limited user sent a %s %s", q.Method, q.Path)
		}
	}
	t.Logf("limited user sent %d requests, all GET", len(rec.snapshot()))
}
