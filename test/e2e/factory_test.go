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

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/test/e2e/testenv"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRD creates a namespaced CRD with a status subresource in
// group/v1 and waits until it is served. It returns the resource.
func installCRD(t *testing.T, c *tcx, group, plural, kind string) schema.GroupVersionResource {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(c.cfg)
	crd := testenv.CRD(group, plural, kind)
	if _, err := dyn.Resource(crdGVR).Create(c.ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create CRD %s.%s: %v", plural, group, err)
	}
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	// Established is not enough: discovery and the handler lag a little.
	if !eventually(60*time.Second, 200*time.Millisecond, func() bool {
		_, err := dyn.Resource(gvr).Namespace(c.ns).List(c.ctx, metav1.ListOptions{Limit: 1})
		return err == nil
	}) {
		t.Fatalf("CRD %s.%s not served after 60s", plural, group)
	}
	return gvr
}

func deleteCRD(t *testing.T, c *tcx, gvr schema.GroupVersionResource) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(c.cfg)
	if err := dyn.Resource(crdGVR).Delete(c.ctx, gvr.Resource+"."+gvr.Group, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("delete CRD %s: %v", gvr.GroupResource(), err)
	}
}

func customObject(gvr schema.GroupVersionResource, kind, ns, name string, size int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": size}}}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// TestCustomResourcesThroughForResource: a CRD's objects run through
// ForResource as a shared dynamic informer of the one factory: create,
// update (spec and status) and delete arrive in order, and the lister
// equals the server's list.
func TestCustomResourcesThroughForResource(t *testing.T) {
	c := setup(t)
	gvr := installCRD(t, c, "e2e.kubeinformers.io", "widgets", "Widget")
	t.Cleanup(func() { deleteCRD(t, c, gvr) })
	dyn := dynamic.NewForConfigOrDie(c.cfg)

	f, err := informers.NewForConfig(c.cfg, 0, informers.WithNamespace(c.ns))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer f.Shutdown()
	defer cancel()
	gi, err := f.ForResource(gvr)
	if err != nil {
		t.Fatalf("ForResource(%v): %v", gvr, err)
	}
	log := &eventLog{}
	if _, err := gi.Informer().AddEventHandler(log.handler()); err != nil {
		t.Fatal(err)
	}
	pods := f.Core().V1().Pods().Informer() // a built-in next to it, same life cycle
	syncFactory(t, ctx, f)
	if !pods.HasSynced() {
		t.Fatal("the pods informer did not sync with the custom resource")
	}

	const n = 5
	var wantRVs = map[string][]string{}
	for i := range n {
		name := fmt.Sprintf("w%d", i)
		created, err := dyn.Resource(gvr).Namespace(c.ns).Create(ctx, customObject(gvr, "Widget", c.ns, name, int64(i)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(created.Object, int64(i+10), "spec", "size")
		updated, err := dyn.Resource(gvr).Namespace(c.ns).Update(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(updated.Object, "Ready", "status", "phase")
		status, err := dyn.Resource(gvr).Namespace(c.ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantRVs[c.ns+"/"+name] = []string{created.GetResourceVersion(), updated.GetResourceVersion(), status.GetResourceVersion()}
	}
	if err := dyn.Resource(gvr).Namespace(c.ns).Delete(ctx, "w0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !eventually(30*time.Second, 50*time.Millisecond, func() bool {
		evs := log.forName(c.ns + "/w0")
		return len(evs) > 0 && evs[len(evs)-1].Type == "delete" && len(log.forName(fmt.Sprintf("%s/w%d", c.ns, n-1))) >= 3
	}) {
		t.Fatalf("events did not arrive: %v", log.all())
	}
	for name, rvs := range wantRVs {
		var got []string
		for _, e := range log.forName(name) {
			got = append(got, e.Type+"@"+e.RV)
		}
		want := []string{"add@" + rvs[0], "update@" + rvs[1], "update@" + rvs[2]}
		if name == c.ns+"/w0" {
			// The final state carries the deletion's resource version.
			evs := log.forName(name)
			if last := evs[len(evs)-1]; last.Type != "delete" || rvInt(last.RV) <= rvInt(rvs[2]) {
				t.Errorf("the delete of %s = %v, want a delete after rv %s", name, last, rvs[2])
			}
			got = got[:len(got)-1]
		}
		if !slices.Equal(got, want) {
			t.Errorf("events of %s = %v, want %v", name, got, want)
		}
	}
	server, err := dyn.Resource(gvr).Namespace(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var serverKeys, listerKeys []string
	for _, o := range server.Items {
		serverKeys = append(serverKeys, o.GetNamespace()+"/"+o.GetName()+"@"+o.GetResourceVersion())
	}
	objs, err := gi.Lister().ByNamespace(c.ns).List(everything())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		listerKeys = append(listerKeys, u.GetNamespace()+"/"+u.GetName()+"@"+u.GetResourceVersion())
	}
	slices.Sort(serverKeys)
	slices.Sort(listerKeys)
	if !slices.Equal(serverKeys, listerKeys) {
		t.Errorf("lister %v != server %v", listerKeys, serverKeys)
	}
	t.Logf("crd: %s: %d events in order for %d objects (create, update, status update, delete); lister == server list (%d objects)",
		gvr, len(log.all()), n, len(listerKeys))
}

// TestMetadataInformers: metadata-only informers over pods and over a
// custom resource cache *metav1.PartialObjectMetadata, next to the typed
// pods informer of the same factory.
func TestMetadataInformers(t *testing.T) {
	c := setup(t)
	gvr := installCRD(t, c, "meta.kubeinformers.io", "gizmos", "Gizmo")
	t.Cleanup(func() { deleteCRD(t, c, gvr) })
	dyn := dynamic.NewForConfigOrDie(c.cfg)
	for i := range 3 {
		if _, err := dyn.Resource(gvr).Namespace(c.ns).Create(c.ctx, customObject(gvr, "Gizmo", c.ns, fmt.Sprintf("g%d", i), 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Labels: map[string]string{"i": fmt.Sprint(i)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
		if _, err := c.client.CoreV1().Pods(c.ns).Create(c.ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rec := &recorder{label: "admin"}
	f, err := informers.NewForConfig(rec.wrap(env.AdminConfig()), 0, informers.WithNamespace(c.ns))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer f.Shutdown()
	defer cancel()
	podsGVR := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	metaPods, err := f.ForMetadata(podsGVR)
	if err != nil {
		t.Fatal(err)
	}
	metaGizmos, err := f.ForMetadata(gvr)
	if err != nil {
		t.Fatal(err)
	}
	typedPods := f.Core().V1().Pods().Informer()
	syncFactory(t, ctx, f)

	for _, tc := range []struct {
		what     string
		informer cache.SharedIndexInformer
	}{{"pods", metaPods.Informer()}, {"gizmos", metaGizmos.Informer()}} {
		objs := tc.informer.GetStore().List()
		if len(objs) != 3 {
			t.Errorf("metadata %s: %d objects cached, want 3", tc.what, len(objs))
		}
		for _, o := range objs {
			m, ok := o.(*metav1.PartialObjectMetadata)
			if !ok {
				t.Fatalf("metadata %s cached %T, want *metav1.PartialObjectMetadata", tc.what, o)
			}
			if m.UID == "" || m.ResourceVersion == "" || m.Name == "" {
				t.Errorf("metadata %s: %s lacks its metadata: %+v", tc.what, m.Name, m.ObjectMeta)
			}
		}
	}
	typed, ok := typedPods.GetStore().List()[0].(*corev1.Pod)
	if !ok || len(typed.Spec.Containers) == 0 {
		t.Errorf("the typed pods informer lost its spec: %#v", typedPods.GetStore().List()[0])
	}
	// The informers went to the server themselves (a list, or a
	// watch-list stream), one per resource and form.
	if reqs := rec.filter(func(r request) bool { return strings.HasSuffix(r.Path, "/gizmos") }); len(reqs) == 0 {
		t.Fatal("no request for gizmos recorded")
	}
	t.Logf("metadata: pods %d and gizmos %d objects cached as *metav1.PartialObjectMetadata (no spec); typed pods informer alongside keeps its spec",
		len(metaPods.Informer().GetStore().List()), len(metaGizmos.Informer().GetStore().List()))
}

// TestRemoveRunningInformer: removing a running informer ends its
// goroutines, the server sees no more requests for it, the others keep
// running, and asking again gives a fresh informer that syncs.
func TestRemoveRunningInformer(t *testing.T) {
	c := setup(t)
	rec := &recorder{label: "admin"}
	before := goleak.IgnoreCurrent()
	f, err := informers.NewForConfig(rec.wrap(env.AdminConfig()), 0, informers.WithNamespace(c.ns))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	pods := f.Core().V1().Pods().Informer()
	cms := f.Core().V1().ConfigMaps().Informer()
	podsGVR := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	if _, err := f.ForMetadata(podsGVR); err != nil {
		t.Fatal(err)
	}
	syncFactory(t, ctx, f)

	isPods := func(r request) bool { return strings.HasSuffix(r.Path, "/pods") }
	start := time.Now()
	if !f.RemoveInformer(podsGVR) {
		t.Fatal("RemoveInformer(pods) = false")
	}
	took := time.Since(start)
	if !pods.IsStopped() {
		t.Fatal("the removed informer is not stopped")
	}
	afterRemove := len(rec.filter(isPods))
	mkCM(t, c, c.ns, "after-remove", nil)
	if !eventually(30*time.Second, 50*time.Millisecond, func() bool {
		_, ok, _ := cms.GetStore().GetByKey(c.ns + "/after-remove")
		return ok
	}) {
		t.Fatal("the configmaps informer stopped getting events after pods was removed")
	}
	time.Sleep(2 * time.Second) // long enough for a reflector to relist
	if n := len(rec.filter(isPods)); n != afterRemove {
		t.Errorf("%d pods requests after RemoveInformer, want none: %v", n-afterRemove, rec.filter(isPods)[afterRemove:])
	}
	fresh := f.Core().V1().Pods().Informer()
	if fresh == pods {
		t.Fatal("asking again returned the removed informer")
	}
	if _, err := c.client.CoreV1().Pods(c.ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	syncFactory(t, ctx, f)
	if _, err := f.Core().V1().Pods().Lister().Pods(c.ns).Get("p"); err != nil {
		t.Errorf("the fresh pods informer: %v", err)
	}
	if err := f.Ready(); err != nil {
		t.Errorf("Ready() = %v", err)
	}
	cancel()
	f.Shutdown()
	goleak.VerifyNone(t, before)
	t.Logf("removal: pods (typed and metadata) stopped in %v; 0 pods requests in the 2s after; configmaps kept syncing; a fresh pods informer synced", took.Round(time.Millisecond))
}

// TestCRDDeletedUnderRunningInformer: deleting the CRD of a running dynamic
// informer makes Ready name it; its retries back off; RemoveInformer stops
// it cleanly.
func TestCRDDeletedUnderRunningInformer(t *testing.T) {
	c := setup(t)
	gvr := installCRD(t, c, "doomed.kubeinformers.io", "doodads", "Doodad")
	rec := &recorder{label: "admin"}
	f, err := informers.NewForConfig(rec.wrap(env.AdminConfig()), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer f.Shutdown()
	defer cancel()
	gi, err := f.ForResource(gvr)
	if err != nil {
		t.Fatal(err)
	}
	syncFactory(t, ctx, f)
	if err := f.Ready(); err != nil {
		t.Fatalf("Ready() before deleting the CRD = %v", err)
	}

	deleteCRD(t, c, gvr)
	deleted := time.Now()
	var readyErr error
	// The reflector's first backoff is under a second, growing to 30s;
	// one backoff period after the watch ends is well within a minute.
	if !eventually(60*time.Second, 100*time.Millisecond, func() bool {
		readyErr = f.Ready()
		return readyErr != nil && strings.Contains(readyErr.Error(), "doodads.doomed.kubeinformers.io/v1 [dynamic]")
	}) {
		t.Fatalf("Ready() did not name the deleted CRD's informer within 60s: %v", readyErr)
	}
	named := time.Since(deleted)
	isDoodadList := func(r request) bool { return r.isList() && strings.HasSuffix(r.Path, "/doodads") }
	const window = 20 * time.Second
	n0 := len(rec.filter(isDoodadList))
	time.Sleep(window)
	lists := len(rec.filter(isDoodadList)) - n0
	perMinute := float64(lists) * float64(time.Minute) / float64(window)
	// client-go's reflector backs off exponentially to 30s: a handful of
	// attempts a minute. A hot loop would be hundreds.
	if perMinute > 30 {
		t.Errorf("%d LIST attempts in %v (%.0f/min) for the deleted CRD: not backing off", lists, window, perMinute)
	}
	if !gi.Informer().HasSynced() {
		t.Error("HasSynced went back to false")
	}
	if !f.RemoveInformer(gvr) {
		t.Fatal("RemoveInformer(deleted CRD) = false")
	}
	n1 := len(rec.filter(func(r request) bool { return strings.HasSuffix(r.Path, "/doodads") }))
	time.Sleep(2 * time.Second)
	if n2 := len(rec.filter(func(r request) bool { return strings.HasSuffix(r.Path, "/doodads") })); n2 != n1 {
		t.Errorf("%d requests for doodads after RemoveInformer", n2-n1)
	}
	if err := f.Ready(); err != nil {
		t.Errorf("Ready() after removing the failing informer = %v", err)
	}
	t.Logf("crd deleted: Ready named it after %v (%q); %d LIST attempts in %v = %.1f/min; RemoveInformer stopped it, 0 requests after",
		named.Round(time.Millisecond), readyErr, lists, window, perMinute)
}

// TestReadyNamesForbiddenResource: for a user RBAC does not allow to list
// secrets, Ready and SyncResult.Err name the resource with the 403.
func TestReadyNamesForbiddenResource(t *testing.T) {
	c := setup(t)
	grantLimitedUser(t, c) // configmaps and pods in c.ns only
	f, err := informers.NewForConfig(env.LimitedConfig(), 0, informers.WithNamespace(c.ns))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer f.Shutdown()
	defer cancel()
	f.Core().V1().ConfigMaps().Informer()
	f.Core().V1().Secrets().Informer()
	f.StartWithContext(ctx)
	var readyErr error
	if !eventually(30*time.Second, 100*time.Millisecond, func() bool {
		readyErr = f.Ready()
		return readyErr != nil && strings.Contains(readyErr.Error(), "forbidden")
	}) {
		t.Fatalf("Ready() = %v; want the 403 for secrets", readyErr)
	}
	for _, want := range []string{"secrets (v1): not synced", `secrets is forbidden: User "e2e-limited" cannot list resource "secrets"`} {
		if !strings.Contains(readyErr.Error(), want) {
			t.Errorf("Ready() = %q; want %q in it", readyErr, want)
		}
	}
	if strings.Contains(readyErr.Error(), "configmaps") {
		t.Errorf("Ready() = %q names configmaps, which the user may list", readyErr)
	}
	wctx, stop := context.WithTimeout(ctx, 3*time.Second)
	defer stop()
	res := f.WaitForCacheSyncWithContext(wctx)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "secrets (v1)") || !strings.Contains(res.Err.Error(), "forbidden") {
		t.Errorf("SyncResult.Err = %v; want it to name secrets and the 403", res.Err)
	}
	t.Logf("readiness: Ready() = %q", readyErr)
	t.Logf("readiness: SyncResult.Err = %q", res.Err)
}
