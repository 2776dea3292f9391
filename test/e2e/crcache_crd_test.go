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
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/crcache"
	"github.com/kubeinformers/informers/test/e2e/testenv"
)

// Gadget is a kubebuilder-style custom resource: Go types registered in a
// scheme, with the deep-copy functions controller-gen would write, here
// by hand. Its group is made per test run, so its CRD is new to the
// server.
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GadgetSpec `json:"spec,omitempty"`
}

// GadgetSpec is a Gadget's spec.
type GadgetSpec struct {
	Size int64 `json:"size,omitempty"`
}

// GadgetList is a list of Gadgets.
type GadgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gadget `json:"items"`
}

func (in *Gadget) DeepCopyInto(out *Gadget) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = in.Spec
}

func (in *Gadget) DeepCopy() *Gadget {
	if in == nil {
		return nil
	}
	out := new(Gadget)
	in.DeepCopyInto(out)
	return out
}

func (in *Gadget) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

func (in *GadgetList) DeepCopyInto(out *GadgetList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Gadget, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

func (in *GadgetList) DeepCopy() *GadgetList {
	if in == nil {
		return nil
	}
	out := new(GadgetList)
	in.DeepCopyInto(out)
	return out
}

func (in *GadgetList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// TestCRCacheManagerCRDComesAndGoes runs a controller-runtime manager on
// crcache.NewCache(informers.WithAPIDiscovery()) with two controllers of a
// kind whose CRD is not installed: one of its Go type (Gadget, in the
// scheme) and one of unstructured.Unstructured with its GVK. The manager
// keeps running past the controllers' CacheSyncTimeout. Once the CRD is
// created, both reconcile objects within 10 s of the resource being
// served; once it is deleted, the cache (its List, in both forms) empties
// by delete events within 10 s; created again, it is followed again. While
// the kind is absent, the lines about it from klog and from
// controller-runtime's logger are at most one per change and informer.
func TestCRCacheManagerCRDComesAndGoes(t *testing.T) {
	c := setup(t)
	checkLeaks(t)
	logs := captureManagerLogs(t)
	group := "crcache-" + randSuffix() + ".e2e.kubeinformers.io"
	gv := schema.GroupVersion{Group: group, Version: "v1"}
	gvk := gv.WithKind("Gadget")
	gvr := gv.WithResource("gadgets")
	t.Cleanup(func() { deleteCRD(t, c, gvr) })

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	scheme.AddKnownTypes(gv, &Gadget{}, &GadgetList{})
	metav1.AddToGroupVersion(scheme, gv)

	const cacheSyncTimeout = 3 * time.Second
	mgr := newManager(t, c.cfg, manager.Options{
		Scheme:     scheme,
		NewCache:   crcache.NewCache(informers.WithAPIDiscovery()),
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{c.ns: {}}},
		Controller: config.Controller{CacheSyncTimeout: cacheSyncTimeout},
	})
	crc := crCache(t, mgr)
	typed, untyped := newReconciles(), newReconciles()
	newUnstructured := func() client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u
	}
	// The Go type reads through the manager's client (its cache reader);
	// the manager's client reads unstructured objects from the server, so
	// that controller reads the cache itself.
	if err := ctrl.NewControllerManagedBy(mgr).Named("gadget-typed").For(&Gadget{}).
		Complete(typed.reconciler(mgr.GetClient(), func() client.Object { return &Gadget{} })); err != nil {
		t.Fatal(err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("gadget-unstructured").For(newUnstructured()).
		Complete(untyped.reconciler(mgr.GetCache(), newUnstructured)); err != nil {
		t.Fatal(err)
	}

	started := time.Now()
	stop, exited := runManager(t, c.ctx, mgr)

	// Absent: the manager keeps running past CacheSyncTimeout, its
	// controllers' workers started, and the cache says it waits.
	select {
	case err := <-exited:
		t.Fatalf("the manager exited %v after its start with the CRD absent: %v", time.Since(started).Round(time.Millisecond), err)
	case <-time.After(cacheSyncTimeout + time.Second):
	}
	workers := logs.between(started, time.Now(), func(l logLine) bool { return strings.Contains(l.text, "Starting workers") })
	if len(workers) != 2 {
		t.Errorf("%d controllers started their workers %v after the manager's start, want 2", len(workers), cacheSyncTimeout+time.Second)
	}
	waits := func() bool {
		return slices.ContainsFunc(crc.Notices(), func(n string) bool { return strings.Contains(n, group) && strings.Contains(n, "waits") })
	}
	if !waits() || crc.Ready() != nil {
		t.Errorf("with the CRD absent: Notices %q, Ready %v; want the kind waiting and ready", crc.Notices(), crc.Ready())
	}
	t.Logf("CRD absent: the manager runs %v after its start (CacheSyncTimeout %v), %d controllers' workers started; notices %q",
		time.Since(started).Round(time.Millisecond), cacheSyncTimeout, len(workers), crc.Notices())

	// Handlers of the cache's informers, in both forms, count deletes.
	typedDeletes, untypedDeletes := &deletes{}, &deletes{}
	for obj, d := range map[client.Object]*deletes{&Gadget{}: typedDeletes, newUnstructured(): untypedDeletes} {
		inf, err := crc.GetInformer(c.ctx, obj)
		if err != nil {
			t.Fatalf("GetInformer(%T): %v", obj, err)
		}
		if _, err := inf.AddEventHandler(d.handler()); err != nil {
			t.Fatal(err)
		}
	}

	dyn := dynamic.NewForConfigOrDie(c.cfg)
	const limit = 10 * time.Second
	// install creates the CRD, waits until the server serves it (the
	// test's own list succeeds), creates n Gadgets and waits until both
	// controllers have reconciled them. It returns when the resource was
	// served and how long after that each controller had reconciled all.
	install := func(round, n int) (served time.Time, toTyped, toUntyped time.Duration) {
		if _, err := dyn.Resource(crdGVR).Create(c.ctx, testenv.CRD(group, "gadgets", "Gadget"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create the CRD: %v", err)
		}
		if !eventually(60*time.Second, 10*time.Millisecond, func() bool {
			_, err := dyn.Resource(gvr).Namespace(c.ns).List(c.ctx, metav1.ListOptions{Limit: 1})
			return err == nil
		}) {
			t.Fatal("the CRD was not served within 60 s")
		}
		served = time.Now()
		var keys []string
		for i := range n {
			u := customObject(gvr, "Gadget", c.ns, fmt.Sprintf("g%d-%d", round, i), int64(i))
			if _, err := dyn.Resource(gvr).Namespace(c.ns).Create(c.ctx, u, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create a Gadget: %v", err)
			}
			keys = append(keys, c.ns+"/"+u.GetName())
		}
		for _, r := range []struct {
			name string
			rec  *reconciles
			to   *time.Duration
		}{{"Go type", typed, &toTyped}, {"unstructured", untyped, &toUntyped}} {
			if !eventually(3*limit, 5*time.Millisecond, func() bool { got, _ := r.rec.seen(keys...); return got == n }) {
				got, _ := r.rec.seen(keys...)
				t.Fatalf("round %d: the %s controller reconciled %d of %d Gadgets %v after the CRD was served; notices %q, ready %v",
					round, r.name, got, n, 3*limit, crc.Notices(), crc.Ready())
			}
			_, last := r.rec.seen(keys...)
			*r.to = last.Sub(served)
		}
		return served, toTyped, toUntyped
	}
	// remove deletes the CRD and waits until the cache's List in both
	// forms is empty and each handler had a delete per object, then until
	// the cache says it waits for the kind. It returns when the CRD was
	// deleted and how long the cache took to empty and to wait.
	remove := func(n int) (deleted time.Time, toEmpty, toWaiting time.Duration) {
		d0, u0 := typedDeletes.in(c.ns), untypedDeletes.in(c.ns)
		deleted = time.Now()
		deleteCRD(t, c, gvr)
		empty := func() bool {
			var gl GadgetList
			ul := &unstructured.UnstructuredList{}
			ul.SetGroupVersionKind(gv.WithKind("GadgetList"))
			if err := crc.List(c.ctx, &gl, client.InNamespace(c.ns)); err != nil {
				t.Fatalf("List Gadgets: %v", err)
			}
			if err := crc.List(c.ctx, ul, client.InNamespace(c.ns)); err != nil {
				t.Fatalf("List unstructured Gadgets: %v", err)
			}
			return len(gl.Items) == 0 && len(ul.Items) == 0 &&
				typedDeletes.in(c.ns)-d0 >= n && untypedDeletes.in(c.ns)-u0 >= n
		}
		if !eventually(3*limit, 5*time.Millisecond, empty) {
			t.Fatalf("the cache did not empty %v after the CRD's delete: deletes %d and %d of %d", 3*limit,
				typedDeletes.in(c.ns)-d0, untypedDeletes.in(c.ns)-u0, n)
		}
		toEmpty = time.Since(deleted)
		if d, u := typedDeletes.in(c.ns)-d0, untypedDeletes.in(c.ns)-u0; d != n || u != n {
			t.Errorf("%d and %d delete events for %d objects", d, u, n)
		}
		if !eventually(3*limit, 5*time.Millisecond, waits) {
			t.Fatalf("the cache does not wait for the kind %v after the CRD's delete: notices %q", 3*limit, crc.Notices())
		}
		toWaiting = time.Since(deleted)
		if err := crc.Ready(); err != nil {
			t.Errorf("Ready() = %v while the kind is absent", err)
		}
		// Gone from the server too before it is created again.
		if !eventually(60*time.Second, 20*time.Millisecond, func() bool {
			_, err := dyn.Resource(crdGVR).Get(c.ctx, gvr.Resource+"."+group, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}) {
			t.Fatal("the CRD was not deleted within 60 s")
		}
		return deleted, toEmpty, toWaiting
	}

	served1, typed1, untyped1 := install(1, 3)
	deleted, toEmpty, toWaiting := remove(3)
	served2, typed2, untyped2 := install(2, 2)
	select {
	case err := <-exited:
		t.Fatalf("the manager exited: %v", err)
	default:
	}
	if err := crc.Ready(); err != nil {
		t.Errorf("Ready() = %v with the CRD served", err)
	}
	stop()

	t.Logf("CRD created → served %v after the manager's start; served → reconciled: Go type %v, unstructured %v (3 Gadgets)",
		served1.Sub(started).Round(time.Millisecond), typed1.Round(time.Millisecond), untyped1.Round(time.Millisecond))
	t.Logf("CRD deleted → cache emptied (List empty in both forms, 3 delete events each): %v; → the cache waits for the kind: %v",
		toEmpty.Round(time.Millisecond), toWaiting.Round(time.Millisecond))
	t.Logf("CRD created again: served → reconciled: Go type %v, unstructured %v (2 Gadgets)", typed2.Round(time.Millisecond), untyped2.Round(time.Millisecond))
	for _, d := range []time.Duration{typed1, untyped1, toEmpty, toWaiting, typed2, untyped2} {
		if d > limit {
			t.Errorf("over %v: %v", limit, d)
		}
	}

	// The lines about the kind while it was absent: from the manager's
	// start until it was served, and from its delete until it was served
	// again. controller-runtime's lines of a controller's start (its
	// source, the controller, its workers) are counted apart: it logs
	// them for every controller, whether its kind is served or not.
	about := func(l logLine) bool {
		s := strings.ToLower(l.text)
		return strings.Contains(s, group) || strings.Contains(s, "gadget")
	}
	lifecycle := func(l logLine) bool {
		return strings.Contains(l.text, "Starting EventSource") || strings.Contains(l.text, "Starting Controller") || strings.Contains(l.text, "Starting workers")
	}
	absentStart := logs.between(started, served1, func(l logLine) bool { return about(l) && !lifecycle(l) })
	absentDeleted := logs.between(deleted, served2, func(l logLine) bool { return about(l) && !lifecycle(l) })
	starts := logs.between(started, served1, func(l logLine) bool { return about(l) && lifecycle(l) })
	all := logs.between(started, time.Now(), about)
	report := func(lines []logLine) string {
		var b strings.Builder
		for _, l := range lines {
			fmt.Fprintf(&b, "\n  +%v %s: %s", l.at.Sub(started).Round(time.Millisecond), l.from, l.text)
		}
		return b.String()
	}
	t.Logf("log lines about the kind while absent: %d from the start until served (plus %d of the controllers' start), %d from the delete until served again; %d in all over %v:%s",
		len(absentStart), len(starts), len(absentDeleted), len(all), time.Since(started).Round(time.Second), report(all))
	// Each informer (the Go type's and the unstructured one) says once
	// that it waits: at the start, and when the CRD is deleted.
	const informersOfTheKind = 2
	if len(absentStart) > informersOfTheKind || len(absentDeleted) > informersOfTheKind {
		t.Errorf("%d and %d lines while the kind was absent, want at most %d each (one per change and informer):%s%s",
			len(absentStart), len(absentDeleted), informersOfTheKind, report(absentStart), report(absentDeleted))
	}
}
