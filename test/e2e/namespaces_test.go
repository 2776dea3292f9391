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
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/test/e2e/testenv"
)

// allowConfigMaps lets the limited user read configmaps and pods in ns.
func allowConfigMaps(t *testing.T, c *tcx, ns string) {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-multi-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "pods"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := c.client.RbacV1().Roles(ns).Create(c.ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-multi-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "e2e-multi-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: testenv.LimitedUser}},
	}
	if _, err := c.client.RbacV1().RoleBindings(ns).Create(c.ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestSeveralNamespacesLimitedUser: a user allowed 3 namespaces of 5 runs
// one factory over exactly those 3: it syncs, makes no cluster-wide
// request, and its listers equal the server's lists.
func TestSeveralNamespacesLimitedUser(t *testing.T) {
	c := setup(t)
	var all []string
	for i := range 5 {
		ns := c.newNamespace(fmt.Sprintf("multi%d", i))
		all = append(all, ns)
		for j := range 3 {
			mkCM(t, c, ns, fmt.Sprintf("cm%d", j), map[string]string{"app": []string{"web", "db", "web"}[j]})
		}
	}
	allowed := all[:3]
	for _, ns := range allowed {
		allowConfigMaps(t, c, ns)
	}
	limited := kubernetes.NewForConfigOrDie(env.LimitedConfig())
	if !eventually(30*time.Second, 200*time.Millisecond, func() bool {
		_, err := limited.CoreV1().ConfigMaps(allowed[2]).List(c.ctx, metav1.ListOptions{})
		return err == nil
	}) {
		t.Fatal("RBAC for the limited user did not apply within 30s")
	}
	rec := &recorder{label: "limited"}
	f, err := informers.New(kubernetes.NewForConfigOrDie(rec.wrap(env.LimitedConfig())), 0, informers.WithNamespaces(allowed...))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer f.Shutdown()
	defer cancel()
	cms := f.Core().V1().ConfigMaps()
	cms.Informer()
	syncFactory(t, ctx, f)
	if err := f.Ready(); err != nil {
		t.Errorf("Ready() = %v", err)
	}

	var paths []string
	for _, q := range rec.snapshot() {
		p := q.Method + " " + q.Path
		if q.isWatch() {
			p += " (watch)"
		}
		paths = append(paths, p)
		if q.Path == "/api/v1/configmaps" {
			t.Errorf("cluster-wide request: %s %s?%s", q.Method, q.Path, q.Query.Encode())
		}
		if q.Status == 403 {
			t.Errorf("forbidden request: %s %s", q.Method, q.Path)
		}
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	var want []string
	for _, ns := range allowed {
		server, err := c.client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range server.Items {
			want = append(want, o.Namespace+"/"+o.Name+"@"+o.ResourceVersion)
		}
	}
	got := func() []string {
		l, _ := cms.Lister().List(everything())
		var out []string
		for _, o := range l {
			out = append(out, o.Namespace+"/"+o.Name+"@"+o.ResourceVersion)
		}
		return out
	}()
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("lister over %v:\n got  %v\n want %v", allowed, got, want)
	}
	if inOne, _ := cms.Lister().ConfigMaps(allowed[1]).List(everything()); len(inOne) < 3 {
		t.Errorf("lister in %s = %d configmaps, want at least 3", allowed[1], len(inOne))
	}
	if byNS, _ := cms.Informer().GetIndexer().ByIndex("namespace", all[4]); len(byNS) != 0 {
		t.Errorf("namespace index has %d objects of the namespace the user may not read", len(byNS))
	}
	t.Logf("several namespaces: %d of 5 namespaces, lister == server (%d configmaps), request paths seen:\n  %s", len(allowed), len(got), strings.Join(paths, "\n  "))
}

// TestPerResourceOptionsOnServer: per-resource label and field selectors
// reach the server (recorded query strings) and filter there; a transform
// on one resource only changes that resource's cache.
func TestPerResourceOptionsOnServer(t *testing.T) {
	c := setup(t)
	for j, app := range []string{"web", "db", "web"} {
		mkCM(t, c, c.ns, fmt.Sprintf("cm%d", j), map[string]string{"app": app})
		if _, err := c.client.CoreV1().Secrets(c.ns).Create(c.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", j), Labels: map[string]string{"app": app}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rec := &recorder{label: "admin"}
	mark := func(obj any) (any, error) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			cm.Annotations = map[string]string{"transformed": "yes"}
		}
		return obj, nil
	}
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretGVR := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	f, err := informers.NewForConfig(rec.wrap(env.AdminConfig()), 0, informers.WithNamespace(c.ns),
		informers.WithResourceOptions(cmGVR, informers.ResourceOptions{LabelSelector: "app=web", Transform: mark}),
		informers.WithResourceOptions(secretGVR, informers.ResourceOptions{FieldSelector: "metadata.name=s1"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer f.Shutdown()
	defer cancel()
	cms, secrets := f.Core().V1().ConfigMaps(), f.Core().V1().Secrets()
	cms.Informer()
	secrets.Informer()
	metaCMs, err := f.ForMetadata(cmGVR) // options apply to every form
	if err != nil {
		t.Fatal(err)
	}
	syncFactory(t, ctx, f)

	queries := map[string][]string{}
	for _, q := range rec.snapshot() {
		switch {
		case strings.HasSuffix(q.Path, "/configmaps"):
			queries["configmaps"] = append(queries["configmaps"], "labelSelector="+q.Query.Get("labelSelector"))
		case strings.HasSuffix(q.Path, "/secrets"):
			queries["secrets"] = append(queries["secrets"], "fieldSelector="+q.Query.Get("fieldSelector"))
		}
	}
	for res, want := range map[string]string{"configmaps": "labelSelector=app=web", "secrets": "fieldSelector=metadata.name=s1"} {
		if len(queries[res]) == 0 {
			t.Errorf("no %s request recorded", res)
		}
		for _, q := range queries[res] {
			if q != want {
				t.Errorf("%s request with %s, want %s", res, q, want)
			}
		}
	}
	l, _ := cms.Lister().List(everything())
	if len(l) != 2 {
		t.Errorf("configmaps cached = %d, want the 2 with app=web", len(l))
	}
	for _, cm := range l {
		if cm.Annotations["transformed"] != "yes" {
			t.Errorf("configmap %s not transformed", cm.Name)
		}
	}
	if n := len(metaCMs.Informer().GetStore().List()); n != 2 {
		t.Errorf("metadata configmaps cached = %d, want 2 (the selector applies to every form)", n)
	}
	s, _ := secrets.Lister().List(everything())
	if len(s) != 1 || s[0].Name != "s1" || s[0].Annotations["transformed"] != "" {
		t.Errorf("secrets cached = %v; want only s1, untransformed", s)
	}
	t.Logf("per-resource options: configmaps requests %v; secrets requests %v; transform only on configmaps", slices.Compact(queries["configmaps"]), slices.Compact(queries["secrets"]))
}
