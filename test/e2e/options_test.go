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
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
)

func mkCM(t *testing.T, c *tcx, ns, name string, lbl map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm, err := c.client.CoreV1().ConfigMaps(ns).Create(c.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl}, Data: map[string]string{"x": "y"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create configmap %s/%s: %v", ns, name, err)
	}
	return cm
}

func syncFactory(t *testing.T, ctx context.Context, f informers.SharedInformerFactory) {
	t.Helper()
	f.Start(ctx.Done())
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := f.WaitForCacheSyncWithContext(wctx).AsError(); err != nil {
		t.Fatalf("WaitForCacheSyncWithContext: %v", err)
	}
}

func cmNames(cms []*corev1.ConfigMap) []string {
	out := make([]string, 0, len(cms))
	for _, cm := range cms {
		out = append(out, cm.Namespace+"/"+cm.Name)
	}
	slices.Sort(out)
	return out
}

// configmapRequests returns the recorded list/watch requests for configmaps.
func configmapRequests(r *recorder) []request {
	return r.filter(func(q request) bool { return strings.HasSuffix(q.Path, "/configmaps") })
}

func TestOptionWithNamespace(t *testing.T) {
	c := setup(t)
	other := c.newNamespace("e2e-other")
	mkCM(t, c, c.ns, "mine-1", nil)
	mkCM(t, c, other, "theirs-1", nil)

	rec := &recorder{label: "admin"}
	client := kubernetes.NewForConfigOrDie(rec.wrap(env.AdminConfig()))
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(c.ns))
	defer f.Shutdown()
	lister := f.Core().V1().ConfigMaps().Lister()
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	syncFactory(t, ctx, f)

	mkCM(t, c, c.ns, "mine-2", nil)
	mkCM(t, c, other, "theirs-2", nil)
	if !eventually(30*time.Second, 50*time.Millisecond, func() bool {
		_, err := lister.ConfigMaps(c.ns).Get("mine-2")
		return err == nil
	}) {
		t.Fatal("mine-2 never reached the lister")
	}
	all, _ := lister.List(labels.Everything())
	for _, cm := range all {
		if cm.Namespace != c.ns {
			t.Errorf("lister holds %s/%s from another namespace", cm.Namespace, cm.Name)
		}
	}
	reqs := configmapRequests(rec)
	if len(reqs) == 0 {
		t.Fatal("no configmap requests recorded")
	}
	for _, q := range reqs {
		if !strings.Contains(q.Path, "/namespaces/"+c.ns+"/configmaps") {
			t.Errorf("request not scoped to namespace %s: %s %s", c.ns, q.Method, q.Path)
		}
	}
	t.Logf("lister: %v; %d namespaced requests", cmNames(all), len(reqs))
}

func TestOptionTweakListOptionsSelectors(t *testing.T) {
	c := setup(t)
	mkCM(t, c, c.ns, "labelled-1", map[string]string{"e2e-select": "yes"})
	mkCM(t, c, c.ns, "labelled-2", map[string]string{"e2e-select": "yes"})
	mkCM(t, c, c.ns, "other", map[string]string{"e2e-select": "no"})
	mkCM(t, c, c.ns, "plain", nil)

	t.Run("label selector", func(t *testing.T) {
		rec := &recorder{label: "admin"}
		client := kubernetes.NewForConfigOrDie(rec.wrap(env.AdminConfig()))
		f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(c.ns),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "e2e-select=yes" }))
		defer f.Shutdown()
		lister := f.Core().V1().ConfigMaps().Lister()
		ctx, cancel := context.WithCancel(c.ctx)
		defer cancel()
		syncFactory(t, ctx, f)
		all, _ := lister.List(labels.Everything())
		if got, want := cmNames(all), []string{c.ns + "/labelled-1", c.ns + "/labelled-2"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("lister = %v, want %v", got, want)
		}
		// Moving an object out of the selector removes it from the cache.
		cm, err := c.client.CoreV1().ConfigMaps(c.ns).Get(c.ctx, "labelled-2", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Labels["e2e-select"] = "no"
		if _, err := c.client.CoreV1().ConfigMaps(c.ns).Update(c.ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if !eventually(30*time.Second, 50*time.Millisecond, func() bool {
			all, _ := lister.List(labels.Everything())
			return len(all) == 1
		}) {
			t.Error("relabelled object was not dropped from the cache")
		}
		reqs := configmapRequests(rec)
		if len(reqs) == 0 {
			t.Fatal("no requests recorded")
		}
		for _, q := range reqs {
			if q.Query.Get("labelSelector") != "e2e-select=yes" {
				t.Errorf("request without server-side label selector: %s %s?%s", q.Method, q.Path, q.Query.Encode())
			}
		}
	})

	t.Run("field selector", func(t *testing.T) {
		rec := &recorder{label: "admin"}
		client := kubernetes.NewForConfigOrDie(rec.wrap(env.AdminConfig()))
		f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(c.ns),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=plain" }))
		defer f.Shutdown()
		lister := f.Core().V1().ConfigMaps().Lister()
		ctx, cancel := context.WithCancel(c.ctx)
		defer cancel()
		syncFactory(t, ctx, f)
		all, _ := lister.List(labels.Everything())
		if got, want := cmNames(all), []string{c.ns + "/plain"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("lister = %v, want %v", got, want)
		}
		reqs := configmapRequests(rec)
		if len(reqs) == 0 {
			t.Fatal("no requests recorded")
		}
		for _, q := range reqs {
			if q.Query.Get("fieldSelector") != "metadata.name=plain" {
				t.Errorf("request without server-side field selector: %s %s?%s", q.Method, q.Path, q.Query.Encode())
			}
		}
	})
}

func TestOptionWithTransformStripsManagedFields(t *testing.T) {
	c := setup(t)
	for i := 0; i < 5; i++ {
		mkCM(t, c, c.ns, fmt.Sprintf("cm-%d", i), nil)
	}
	var transformed atomic.Int64
	strip := func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
			transformed.Add(1)
		}
		return obj, nil
	}
	f := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(c.ns), informers.WithTransform(strip))
	defer f.Shutdown()
	control := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(c.ns))
	defer control.Shutdown()
	lister := f.Core().V1().ConfigMaps().Lister()
	clister := control.Core().V1().ConfigMaps().Lister()
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	syncFactory(t, ctx, f)
	syncFactory(t, ctx, control)
	// An update after sync must be transformed too.
	cm, _ := c.client.CoreV1().ConfigMaps(c.ns).Get(c.ctx, "cm-0", metav1.GetOptions{})
	cm.Data["x"] = "changed"
	upd, err := c.client.CoreV1().ConfigMaps(c.ns).Update(c.ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !eventually(30*time.Second, 50*time.Millisecond, func() bool {
		got, err := lister.ConfigMaps(c.ns).Get("cm-0")
		return err == nil && got.ResourceVersion == upd.ResourceVersion
	}) {
		t.Fatal("update not observed")
	}
	all, _ := lister.List(labels.Everything())
	if len(all) != 5 {
		t.Errorf("transformed cache has %d objects, want 5", len(all))
	}
	for _, o := range all {
		if len(o.ManagedFields) != 0 {
			t.Errorf("%s/%s still has %d managedFields entries", o.Namespace, o.Name, len(o.ManagedFields))
		}
	}
	withMF := 0
	call, _ := clister.List(labels.Everything())
	for _, o := range call {
		if len(o.ManagedFields) > 0 {
			withMF++
		}
	}
	if withMF == 0 {
		t.Error("control informer has no managedFields either; the check proves nothing")
	}
	if transformed.Load() < 6 {
		t.Errorf("transform ran %d times, want >= 6", transformed.Load())
	}
}

func TestOptionWithCustomResyncConfig(t *testing.T) {
	c := setup(t)
	mkCM(t, c, c.ns, "resync-me", nil)
	if _, err := c.client.CoreV1().Secrets(c.ns).Create(c.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "no-resync"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(c.ns),
		informers.WithCustomResyncConfig(map[metav1.Object]time.Duration{&corev1.ConfigMap{}: time.Second}))
	defer f.Shutdown()
	var cmResyncs, secretResyncs atomic.Int64
	sameRV := func(n *atomic.Int64) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{UpdateFunc: func(o, nw any) {
			if o.(metav1.Object).GetResourceVersion() == nw.(metav1.Object).GetResourceVersion() {
				n.Add(1)
			}
		}}
	}
	if _, err := f.Core().V1().ConfigMaps().Informer().AddEventHandler(sameRV(&cmResyncs)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Core().V1().Secrets().Informer().AddEventHandler(sameRV(&secretResyncs)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	syncFactory(t, ctx, f)
	if !eventually(30*time.Second, 100*time.Millisecond, func() bool { return cmResyncs.Load() >= 3 }) {
		t.Fatalf("configmap informer (resync 1s) delivered %d resync updates, want >= 3", cmResyncs.Load())
	}
	if n := secretResyncs.Load(); n != 0 {
		t.Errorf("secret informer (no resync) delivered %d same-RV updates", n)
	}
	t.Logf("configmap resyncs: %d, secret resyncs: %d", cmResyncs.Load(), secretResyncs.Load())
}

func TestOptionWithInformerName(t *testing.T) {
	c := setup(t)
	nameStr := "kubeinformers-e2e-" + randSuffix()
	name, err := cache.NewInformerName(nameStr)
	if err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(c.ns), informers.WithInformerName(name))
	if f.InformerName() != name {
		t.Errorf("factory.InformerName() = %p, want %p", f.InformerName(), name)
	}
	f.Networking().V1().NetworkPolicies().Informer()
	f.Networking().V1().Ingresses().Informer()
	f.Core().V1().Endpoints().Informer()
	f.Apps().V1().Deployments().Informer()
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	syncFactory(t, ctx, f)

	taken := []schema.GroupVersionResource{
		{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
		{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
		{Group: "", Version: "v1", Resource: "endpoints"},
		{Group: "apps", Version: "v1", Resource: "deployments"},
	}
	for _, gvr := range taken {
		if name.WithResource(gvr).Reserved() {
			t.Errorf("%s was not registered by the factory (Reserved() = true for a fresh registration)", gvrString(gvr))
		}
	}
	free := []schema.GroupVersionResource{
		{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicys"},
		{Group: "networking.k8s.io", Version: "v1", Resource: "ingresss"},
		{Group: "", Version: "v1", Resource: "endpointss"},
		{Group: "", Version: "v1", Resource: "services"},
	}
	for _, gvr := range free {
		if !name.WithResource(gvr).Reserved() {
			t.Errorf("%s was unexpectedly already registered", gvrString(gvr))
		}
	}
	if _, err := cache.NewInformerName(nameStr); err == nil {
		t.Error("NewInformerName with a name in use succeeded")
	}
	cancel()
	f.Shutdown()
	n2, err := cache.NewInformerName(nameStr)
	if err != nil {
		t.Errorf("name not released by Shutdown: %v", err)
	} else {
		n2.Release()
	}
}
