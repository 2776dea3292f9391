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
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/projection"
)

// keptUpdates records the updates a handler is given on one Pod.
type keptUpdates struct {
	mu   sync.Mutex
	seen [][2]string // old and new resourceVersion
	objs [][2]any
}

func (k *keptUpdates) handler(name string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
		if m, ok := n.(metav1.Object); !ok || m.GetName() != name {
			return
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		k.seen = append(k.seen, [2]string{o.(metav1.Object).GetResourceVersion(), n.(metav1.Object).GetResourceVersion()})
		k.objs = append(k.objs, [2]any{o, n})
	}}
}

// waitFor waits until k has seen the update to rv.
func (k *keptUpdates) waitFor(t *testing.T, rv string) (old, cur any) {
	t.Helper()
	var got [2]any
	if !eventually(30*time.Second, 10*time.Millisecond, func() bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		for i, s := range k.seen {
			if s[1] == rv {
				got = k.objs[i]
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no update to resourceVersion %s within 30s", rv)
	}
	return got[0], got[1]
}

// TestKeepFields runs a typed Pod informer (protobuf, cut before
// decoding) and a dynamic one (JSON, projected after decoding) with
// KeepFields on a real server: the caches hold only the kept fields; an
// update of a kept field arrives with the new value; an update of a
// dropped field only arrives as an update whose objects differ only in
// their resourceVersion. lost counts updates that never arrived.
func TestKeepFields(t *testing.T) {
	c := setup(t)
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	keep := []string{"spec.nodeName", "status.phase", "status.conditions"}
	pod, err := c.client.CoreV1().Pods(c.ns).Create(c.ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kept", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "dropped"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	opts := informers.WithResourceOptions(pods, informers.ResourceOptions{KeepFields: keep})
	typedF, err := informers.New(kubernetes.NewForConfigOrDie(c.cfg), 0, informers.WithLeanMemory(), opts)
	if err != nil {
		t.Fatal(err)
	}
	dynF, err := informers.NewForConfig(c.cfg, 0, informers.WithDynamicBuiltIns(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(typedF.Shutdown)
	t.Cleanup(dynF.Shutdown)
	typed := typedF.Core().V1().Pods().Informer()
	gi, err := dynF.ForResource(pods)
	if err != nil {
		t.Fatal(err)
	}
	dyn := gi.Informer()
	var typedUpdates, dynUpdates keptUpdates
	for inf, k := range map[cache.SharedIndexInformer]*keptUpdates{typed: &typedUpdates, dyn: &dynUpdates} {
		if _, err := inf.AddEventHandler(k.handler("kept")); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(c.ctx)
	t.Cleanup(cancel)
	before := listwatch.StrippedObjects()
	for _, f := range []informers.Factory{typedF, dynF} {
		f.Start(ctx.Done())
		wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
		err := f.WaitForCacheSyncWithContext(wctx).AsError()
		wcancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	key := c.ns + "/kept"
	check := func(when string) {
		t.Helper()
		obj, ok, err := typed.GetStore().GetByKey(key)
		if err != nil || !ok {
			t.Fatalf("%s: typed: %s not cached", when, key)
		}
		p := obj.(*corev1.Pod)
		if p.Spec.Containers != nil || p.Annotations != nil || p.ManagedFields != nil || p.Spec.SchedulerName != "" || p.Labels["app"] != "web" || p.UID == "" {
			t.Errorf("%s: typed cache holds %+v, want only the kept fields", when, p)
		}
		obj, ok, err = dyn.GetStore().GetByKey(key)
		if err != nil || !ok {
			t.Fatalf("%s: dynamic: %s not cached", when, key)
		}
		u := obj.(*unstructured.Unstructured)
		spec, _, _ := unstructured.NestedMap(u.Object, "spec")
		meta, _, _ := unstructured.NestedMap(u.Object, "metadata")
		if _, has := spec["containers"]; has || meta["annotations"] != nil || meta["managedFields"] != nil || meta["labels"] == nil {
			t.Errorf("%s: dynamic cache holds %v, want only the kept fields", when, u.Object)
		}
	}
	check("after sync")

	// An update of a kept field (a condition, through the status).
	pod.Status.Conditions = []corev1.PodCondition{{Type: "example.com/Checked", Status: corev1.ConditionTrue}}
	if pod, err = c.client.CoreV1().Pods(c.ns).UpdateStatus(c.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	keptRV := pod.ResourceVersion
	// An update of a dropped field only (an annotation).
	pod.Annotations["note"] = "changed"
	if pod, err = c.client.CoreV1().Pods(c.ns).Update(c.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	droppedRV := pod.ResourceVersion

	lost := 0
	for _, k := range []*keptUpdates{&typedUpdates, &dynUpdates} {
		_, cur := k.waitFor(t, keptRV)
		if !hasCondition(cur, "example.com/Checked") {
			t.Errorf("the update of a kept field arrived without it: %+v", cur)
		}
		old, cur := k.waitFor(t, droppedRV)
		if !equalButVersion(old, cur) {
			t.Errorf("the update of a dropped field changed the projected object:\nold %+v\nnew %+v", old, cur)
		}
	}
	for _, k := range []*keptUpdates{&typedUpdates, &dynUpdates} {
		k.mu.Lock()
		for _, rv := range []string{keptRV, droppedRV} {
			if !slices.ContainsFunc(k.seen, func(s [2]string) bool { return s[1] == rv }) {
				lost++
			}
		}
		k.mu.Unlock()
	}
	check("after the updates")
	t.Logf("lost=%d; an update of a dropped field only arrives as an update whose objects differ only in resourceVersion (%s); %d objects decoded cut from protobuf",
		lost, droppedRV, listwatch.StrippedObjects()-before)
	if lost != 0 {
		t.Errorf("lost=%d", lost)
	}
	if listwatch.StrippedObjects() == before {
		t.Error("the typed informer decoded nothing cut from protobuf")
	}
}

func hasCondition(obj any, typ string) bool {
	switch o := obj.(type) {
	case *corev1.Pod:
		return slices.ContainsFunc(o.Status.Conditions, func(c corev1.PodCondition) bool { return string(c.Type) == typ })
	case *unstructured.Unstructured:
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		return slices.ContainsFunc(conds, func(c any) bool { return c.(map[string]any)["type"] == typ })
	}
	return false
}

// equalButVersion reports whether old and cur are equal apart from their
// resourceVersion.
func equalButVersion(old, cur any) bool {
	o, n := old.(runtime.Object).DeepCopyObject(), cur.(runtime.Object).DeepCopyObject()
	o.(metav1.Object).SetResourceVersion("")
	n.(metav1.Object).SetResourceVersion("")
	return apiequality.Semantic.DeepEqual(o, n)
}

// TestKeepFieldsEveryResource: for every built-in resource the server
// serves, a factory whose informers keep only metadata.annotations (every
// other field cut from the protobuf before decoding) caches what a
// factory without the option caches, projected field by field.
func TestKeepFieldsEveryResource(t *testing.T) {
	c := setup(t)
	served := servedListWatchGVRs(t, discovery.NewDiscoveryClientForConfigOrDie(c.cfg))
	keep := []string{"metadata.annotations"}
	var opts []informers.SharedInformerOption
	for gvr := range served {
		if slices.Contains(informers.SupportedResources(), gvr) {
			opts = append(opts, informers.WithResourceOptions(gvr, informers.ResourceOptions{KeepFields: keep}))
		}
	}
	client := kubernetes.NewForConfigOrDie(c.cfg)
	full, err := informers.New(client, 0)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := informers.New(client, 0, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(full.Shutdown)
	t.Cleanup(kept.Shutdown)
	pairs := map[schema.GroupVersionResource][2]cache.SharedIndexInformer{}
	for gvr := range served {
		a, err := full.ForResource(gvr)
		if err != nil {
			continue // not built in
		}
		b, err := kept.ForResource(gvr)
		if err != nil {
			t.Fatal(err)
		}
		pairs[gvr] = [2]cache.SharedIndexInformer{a.Informer(), b.Informer()}
	}
	ctx, cancel := context.WithCancel(c.ctx)
	t.Cleanup(cancel)
	for _, f := range []informers.Factory{full, kept} {
		f.Start(ctx.Done())
		wctx, wcancel := context.WithTimeout(ctx, 120*time.Second)
		err := f.WaitForCacheSyncWithContext(wctx).AsError()
		wcancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	objects, differ := 0, 0
	for gvr, p := range pairs {
		// The server changes a few objects on its own (leases): compare
		// until the two caches agree, for up to a minute.
		var diff string
		var compared int
		eventually(time.Minute, 100*time.Millisecond, func() bool {
			diff, compared = compareProjected(p[0], p[1], keep, 0)
			return diff == ""
		})
		objects += compared
		if diff != "" {
			differ++
			t.Errorf("%v: %s", gvr, diff)
		}
	}
	t.Logf("%d built-in resources, %d objects, each cached projected on %q equal to the full cache's projected; differ=%d", len(pairs), objects, keep, differ)
}

// compareProjected compares kept's objects to full's, projected on keep;
// it adds the objects compared to n.
func compareProjected(full, kept cache.SharedIndexInformer, keep []string, n int) (string, int) {
	fullObjs := full.GetStore().List()
	if len(fullObjs) != len(kept.GetStore().ListKeys()) {
		return fmt.Sprintf("%d objects, %d kept", len(fullObjs), len(kept.GetStore().ListKeys())), n
	}
	for _, o := range fullObjs {
		want := o.(runtime.Object).DeepCopyObject()
		p, err := projection.New(keep, reflect.TypeOf(want))
		if err != nil {
			return err.Error(), n
		}
		p.Object(want)
		key, _ := cache.MetaNamespaceKeyFunc(o)
		got, ok, _ := kept.GetStore().GetByKey(key)
		if !ok {
			return key + " not kept", n
		}
		if !apiequality.Semantic.DeepEqual(got, want) {
			return fmt.Sprintf("%s:\nkept %+v\nwant %+v", key, got, want), n
		}
		n++
	}
	return "", n
}
