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
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	informers "github.com/kubeinformers/informers"
	gadgetsv1 "github.com/kubeinformers/informers/examples/crd/apis/gadgets/v1"
	"github.com/kubeinformers/informers/examples/crd/client/clientset/versioned"
	"github.com/kubeinformers/informers/examples/crd/client/informers/externalversions"
	"github.com/kubeinformers/informers/sharding"
)

var (
	exampleGadgetsGVR = schema.GroupVersionResource{Group: "gadgets.example.com", Version: "v1", Resource: "gadgets"}
	exampleClassesGVR = schema.GroupVersionResource{Group: "gadgets.example.com", Version: "v1", Resource: "gadgetclasses"}
)

// installExampleCRDs creates the CRDs of examples/crd from their manifests
// and waits until the server serves both resources.
func installExampleCRDs(t *testing.T, c *tcx) {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(c.cfg)
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "crd", "manifests", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the example CRD manifests: %v (found %d)", err, len(files))
	}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			var obj unstructured.Unstructured
			if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if obj.Object == nil {
				continue
			}
			if _, err := dyn.Resource(crdGVR).Create(c.ctx, &obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("create the CRD of %s: %v", file, err)
			}
		}
		_ = f.Close()
	}
	t.Cleanup(func() {
		for _, gvr := range []schema.GroupVersionResource{exampleGadgetsGVR, exampleClassesGVR} {
			deleteCRD(t, c, gvr)
		}
	})
	client := versioned.NewForConfigOrDie(c.cfg)
	if !eventually(60*time.Second, 100*time.Millisecond, func() bool {
		_, err1 := client.GadgetsV1().Gadgets(c.ns).List(c.ctx, metav1.ListOptions{Limit: 1})
		_, err2 := client.GadgetsV1().GadgetClasses().List(c.ctx, metav1.ListOptions{Limit: 1})
		return err1 == nil && err2 == nil
	}) {
		t.Fatal("the example CRDs are not served after 60s")
	}
}

func newGadget(ns, name string, lbls map[string]string) *gadgetsv1.Gadget {
	return &gadgetsv1.Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec: gadgetsv1.GadgetSpec{ClassName: "kitchen", Replicas: 1}}
}

// boundForConfig is a factory of ours for cfg with the example group
// bound: the generated externalversions.New(factory, client).
func boundForConfig(t *testing.T, cfg *rest.Config, opts ...informers.SharedInformerOption) (informers.Factory, externalversions.SharedInformerFactory) {
	t.Helper()
	f, err := informers.NewForConfig(cfg, 0, opts...)
	if err != nil {
		t.Fatal(err)
	}
	view, err := externalversions.New(f, versioned.NewForConfigOrDie(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return f, view
}

// TestGeneratedTypedInformers: the typed informers kubeinformers-gen
// generates for the example API (examples/crd), on the real API server,
// in one factory with the built-in ones.
//
//   - with per-resource options: events arrive in order, the lister
//     equals the server's list, the options reach the requests, and
//     ForResource serves the typed informer;
//   - three replicas with WithShard(field, i, 3) partition a typed custom
//     resource;
//   - deleting the CRD under the running informer: Ready names it,
//     RemoveInformer stops it, and no request for it follows.
func TestGeneratedTypedInformers(t *testing.T) {
	c := setup(t)
	installExampleCRDs(t, c)
	client := versioned.NewForConfigOrDie(c.cfg)
	dyn := dynamic.NewForConfigOrDie(c.cfg)
	before := goleak.IgnoreCurrent()

	// One factory: pods and the generated Gadget and GadgetClass
	// informers, with options for the custom resources given before the
	// binding.
	rec := &recorder{label: "admin"}
	classLabel := "e2e-" + randSuffix()
	f, view := boundForConfig(t, rec.wrap(env.AdminConfig()),
		informers.WithNamespace(c.ns),
		informers.WithResourceOptions(exampleGadgetsGVR, informers.ResourceOptions{LabelSelector: "e2e=yes"}),
		informers.WithResourceOptions(exampleClassesGVR, informers.ResourceOptions{LabelSelector: "suite=" + classLabel}),
	)
	ctx, cancel := context.WithCancel(c.ctx)
	shutdown := func() { cancel(); f.Shutdown() }
	defer func() { shutdown() }()
	gadgets := view.Gadgets().V1().Gadgets()
	classes := view.Gadgets().V1().GadgetClasses()
	log := &eventLog{}
	if _, err := gadgets.Informer().AddEventHandler(log.handler()); err != nil {
		t.Fatal(err)
	}
	classes.Informer()
	pods := f.Core().V1().Pods().Informer()
	view.Start(ctx.Done()) // the view's Start and WaitForCacheSync are the factory's
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	if err := view.WaitForCacheSyncWithContext(wctx).AsError(); err != nil {
		t.Fatalf("WaitForCacheSyncWithContext: %v", err)
	}
	wcancel()
	if !pods.HasSynced() {
		t.Fatal("the pods informer did not sync with the custom resources")
	}
	if gi, err := f.ForResource(exampleGadgetsGVR); err != nil || gi.Informer() != gadgets.Informer() {
		t.Fatalf("ForResource(%v) = %v, %v; want the generated accessor's typed informer", exampleGadgetsGVR, gi, err)
	}

	const n = 5
	wantRVs := map[string][]string{}
	for i := range n {
		name := fmt.Sprintf("g%d", i)
		created, err := client.GadgetsV1().Gadgets(c.ns).Create(ctx, newGadget(c.ns, name, map[string]string{"e2e": "yes"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Spec.Replicas = int32(i + 2)
		updated, err := client.GadgetsV1().Gadgets(c.ns).Update(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		updated.Status.Phase = "Ready"
		status, err := client.GadgetsV1().Gadgets(c.ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantRVs[c.ns+"/"+name] = []string{created.ResourceVersion, updated.ResourceVersion, status.ResourceVersion}
	}
	// Outside the label selector: never cached.
	if _, err := client.GadgetsV1().Gadgets(c.ns).Create(ctx, newGadget(c.ns, "other", map[string]string{"e2e": "no"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	class := &gadgetsv1.GadgetClass{ObjectMeta: metav1.ObjectMeta{Name: classLabel, Labels: map[string]string{"suite": classLabel}}, Spec: gadgetsv1.GadgetClassSpec{Driver: "d"}}
	if _, err := client.GadgetsV1().GadgetClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.GadgetsV1().GadgetClasses().Delete(context.Background(), classLabel, metav1.DeleteOptions{})
	})
	if err := client.GadgetsV1().Gadgets(c.ns).Delete(ctx, "g0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !eventually(30*time.Second, 20*time.Millisecond, func() bool {
		evs := log.forName(c.ns + "/g0")
		_, err := classes.Lister().Get(classLabel)
		return len(evs) > 0 && evs[len(evs)-1].Type == "delete" && len(log.forName(fmt.Sprintf("%s/g%d", c.ns, n-1))) >= 3 && err == nil
	}) {
		t.Fatalf("events did not arrive: %v", log.all())
	}
	for name, rvs := range wantRVs {
		var got []string
		for _, e := range log.forName(name) {
			got = append(got, e.Type+"@"+e.RV)
		}
		want := []string{"add@" + rvs[0], "update@" + rvs[1], "update@" + rvs[2]}
		if name == c.ns+"/g0" {
			got = got[:len(got)-1] // the delete, checked above
		}
		if !slices.Equal(got, want) {
			t.Errorf("events of %s = %v, want %v", name, got, want)
		}
	}
	if evs := log.forName(c.ns + "/other"); len(evs) != 0 {
		t.Errorf("events for a gadget outside the label selector: %v", evs)
	}
	server, err := client.GadgetsV1().Gadgets(c.ns).List(ctx, metav1.ListOptions{LabelSelector: "e2e=yes"})
	if err != nil {
		t.Fatal(err)
	}
	var serverKeys, listerKeys []string
	for _, g := range server.Items {
		serverKeys = append(serverKeys, g.Namespace+"/"+g.Name+"@"+g.ResourceVersion)
	}
	cached, err := gadgets.Lister().Gadgets(c.ns).List(everything())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range cached {
		listerKeys = append(listerKeys, g.Namespace+"/"+g.Name+"@"+g.ResourceVersion)
	}
	slices.Sort(serverKeys)
	slices.Sort(listerKeys)
	if !slices.Equal(serverKeys, listerKeys) {
		t.Errorf("lister %v != server %v", listerKeys, serverKeys)
	}
	// The options reached the requests: gadgets in the namespace with
	// their selector, gadget classes cluster-wide (cluster-scoped) with
	// theirs.
	for _, q := range rec.snapshot() {
		switch {
		case strings.HasSuffix(q.Path, "/gadgets"):
			if q.Path != "/apis/gadgets.example.com/v1/namespaces/"+c.ns+"/gadgets" || q.Query.Get("labelSelector") != "e2e=yes" {
				t.Errorf("gadgets request %s?%s: want namespace %s and labelSelector e2e=yes", q.Path, q.Query.Encode(), c.ns)
			}
		case strings.HasSuffix(q.Path, "/gadgetclasses"):
			if q.Path != "/apis/gadgets.example.com/v1/gadgetclasses" || q.Query.Get("labelSelector") != "suite="+classLabel {
				t.Errorf("gadgetclasses request %s?%s: want cluster-wide with labelSelector suite=%s", q.Path, q.Query.Encode(), classLabel)
			}
		}
	}
	t.Logf("typed: %d events in order for %d gadgets (create, update, status update, delete); lister == server (%d objects); options in every request",
		len(log.all()), n, len(listerKeys))

	// Three replicas, each a factory with WithShard(field, i, 3), partition the
	// gadgets of a second namespace.
	shardNS := c.newNamespace("e2e-gadget-shards")
	const nShard, replicas = 60, 3
	for i := range nShard {
		if _, err := client.GadgetsV1().Gadgets(shardNS).Create(ctx, newGadget(shardNS, fmt.Sprintf("s-%02d", i), nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var shards []map[string]string
	var sels []sharding.Selector
	for i := range replicas {
		srec := &recorder{label: fmt.Sprintf("replica-%d", i)}
		rf, rview := boundForConfig(t, srec.wrap(env.AdminConfig()), informers.WithNamespace(shardNS), informers.WithShard(sharding.FieldUID, i, replicas))
		inf := rview.Gadgets().V1().Gadgets().Informer()
		rctx, rcancel := context.WithCancel(ctx)
		syncFactory(t, rctx, rf)
		sel, err := sharding.ForShard(sharding.FieldUID, i, replicas)
		if err != nil {
			t.Fatal(err)
		}
		shards, sels = append(shards, storeUIDs(inf)), append(sels, sel)
		for _, q := range srec.filter(func(r request) bool { return strings.HasSuffix(r.Path, "/gadgets") }) {
			if got := q.Query.Get("shardSelector"); got != sel.String() {
				t.Errorf("replica %d: %s?%s: shardSelector %q, want %q", i, q.Path, q.Query.Encode(), got, sel.String())
			}
		}
		rcancel()
		rf.Shutdown()
	}
	sizes := checkPartition(t, "gadgets", serverUIDs(t, ctx, dyn, exampleGadgetsGVR, shardNS), shards, sels)
	t.Logf("sharding: %d gadgets over %d replicas: %v", nShard, replicas, sizes)

	// Delete the CRD under the running informer: Ready names it, and
	// RemoveInformer stops it for good.
	deleteCRD(t, c, exampleGadgetsGVR)
	var readyErr error
	if !eventually(60*time.Second, 50*time.Millisecond, func() bool {
		readyErr = f.Ready()
		return readyErr != nil && strings.Contains(readyErr.Error(), "gadgets.gadgets.example.com/v1")
	}) {
		t.Fatalf("Ready() did not name the gadgets informer after its CRD was deleted: %v", readyErr)
	}
	t.Logf("CRD deleted: Ready() = %v", readyErr)
	gadgetInformer := gadgets.Informer()
	if !f.RemoveInformer(exampleGadgetsGVR) {
		t.Fatal("RemoveInformer(gadgets) = false")
	}
	if !gadgetInformer.IsStopped() {
		t.Error("the removed informer is not stopped")
	}
	isGadgets := func(r request) bool { return strings.HasSuffix(r.Path, "/gadgets") }
	afterRemove := len(rec.filter(isGadgets))
	// The other informers keep running, and a relist would have come by
	// now (the reflector backs off from about a second).
	time.Sleep(2 * time.Second)
	if reqs := rec.filter(isGadgets); len(reqs) != afterRemove {
		t.Errorf("%d gadgets requests after RemoveInformer, want none: %v", len(reqs)-afterRemove, reqs[afterRemove:])
	}
	if err := f.Ready(); err != nil {
		t.Errorf("Ready() after RemoveInformer = %v, want nil", err)
	}
	if !classes.Informer().HasSynced() || classes.Informer().IsStopped() {
		t.Error("the gadgetclasses informer stopped with the gadgets one")
	}
	shutdown()
	shutdown = func() {}
	goleak.VerifyNone(t, before)
}
