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

package codegen

import (
	"context"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	gadgetsv1 "github.com/kubeinformers/informers/examples/crd/apis/gadgets/v1"
	gadgetsv1alpha1 "github.com/kubeinformers/informers/examples/crd/apis/gadgets/v1alpha1"
	"github.com/kubeinformers/informers/examples/crd/client/clientset/versioned"
	"github.com/kubeinformers/informers/examples/crd/client/clientset/versioned/fake"
	"github.com/kubeinformers/informers/examples/crd/client/informers/externalversions"
	informersv1 "github.com/kubeinformers/informers/examples/crd/client/informers/externalversions/gadgets/v1"
	listersv1 "github.com/kubeinformers/informers/examples/crd/client/listers/gadgets/v1"
)

// These tests run the informers kubeinformers-gen generated for
// examples/crd (hack/update-examples-crd.sh) the way informer-gen's users
// call them: the constructors that build their own factory with
// informer-gen's options, the standalone informers and the adapters. The
// shared factory (New(factory, client)) is tested with the library
// (test/conformance) and on a real server (test/e2e).

func gadget(ns, name string) *gadgetsv1.Gadget {
	return &gadgetsv1.Gadget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": ns}},
		Spec:       gadgetsv1.GadgetSpec{ClassName: "small", Replicas: 1},
	}
}

func syncAll(t *testing.T, f interface {
	StartWithContext(context.Context)
	WaitForCacheSyncWithContext(context.Context) cache.SyncResult
}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	f.StartWithContext(ctx)
	if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatal(err)
	}
}

func names[T metav1.Object](objs []T) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetNamespace()+"/"+o.GetName())
	}
	return out
}

// TestOwnFactoryOptions: NewSharedInformerFactoryWithOptions builds its own
// kubeinformers factory with informer-gen's options translated.
func TestOwnFactoryOptions(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	client := fake.NewSimpleClientset(gadget("a", "one"), gadget("a", "two"), gadget("b", "three"),
		&gadgetsv1.GadgetClass{ObjectMeta: metav1.ObjectMeta{Name: "small", Labels: map[string]string{"team": "a"}}},
		&gadgetsv1.GadgetClass{ObjectMeta: metav1.ObjectMeta{Name: "large"}})
	// Both informers run the transform, each in its own goroutine.
	var transformed atomic.Int32
	f := externalversions.NewSharedInformerFactoryWithOptions(client, 0,
		externalversions.WithNamespace("a"),
		externalversions.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "team=a" }),
		externalversions.WithTransform(func(obj any) (any, error) { transformed.Add(1); return obj, nil }),
		externalversions.WithCustomResyncConfig(map[metav1.Object]time.Duration{&gadgetsv1.Gadget{}: time.Hour}),
	)
	defer f.Shutdown()
	gadgets := f.Gadgets().V1().Gadgets()
	classes := f.Gadgets().V1().GadgetClasses()
	_, _ = gadgets.Informer(), classes.Informer()
	syncAll(t, f)

	list, err := gadgets.Lister().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(list), []string{"a/one", "a/two"}; !sameSet(got, want) {
		t.Errorf("gadgets in namespace a = %v, want %v", got, want)
	}
	if transformed.Load() == 0 {
		t.Error("WithTransform was not applied")
	}
	// The cluster-scoped kind ignores the namespace, not the tweak.
	if got := classes.Informer().GetStore().ListKeys(); !sameSet(got, []string{"small"}) {
		t.Errorf("GadgetClasses with team=a = %v, want [small]", got)
	}

	// ForResource: the typed informer, and one informer per resource.
	g, err := f.ForResource(gadgetsv1.SchemeGroupVersion.WithResource("gadgets"))
	if err != nil {
		t.Fatal(err)
	}
	if g.Informer() != gadgets.Informer() {
		t.Error("ForResource(gadgets) is not the accessor's informer")
	}
	if _, err := f.ForResource(schema.GroupVersionResource{Group: "gadgets.example.com", Version: "v1", Resource: "gizmos"}); err == nil || !strings.Contains(err.Error(), "gizmos") {
		t.Errorf("ForResource(gizmos) error %v, want one naming it", err)
	}
	synced := f.WaitForCacheSync(t.Context().Done())
	for _, typ := range []reflect.Type{reflect.TypeFor[*gadgetsv1.Gadget](), reflect.TypeFor[*gadgetsv1.GadgetClass]()} {
		if !synced[typ] {
			t.Errorf("WaitForCacheSync: %v not synced in %v", typ, synced)
		}
	}
}

// TestFilteredFactory: the deprecated NewFilteredSharedInformerFactory is
// WithNamespace and WithTweakListOptions.
func TestFilteredFactory(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	client := fake.NewSimpleClientset(gadget("a", "one"), gadget("b", "two"))
	f := externalversions.NewFilteredSharedInformerFactory(client, 0, "b", nil) //nolint:staticcheck // the deprecated constructor is what this test covers
	defer f.Shutdown()
	gadgets := f.Gadgets().V1alpha1().Gadgets()
	_ = gadgets.Informer()
	syncAll(t, f)
	list, err := gadgets.Lister().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		// The fake clientset's objects are v1; v1alpha1 lists nothing.
		t.Errorf("v1alpha1 gadgets: %v", list)
	}
	if _, ok := any(gadgets.TypedInformer()).(cache.TypedSharedIndexInformer[*gadgetsv1alpha1.Gadget]); !ok {
		t.Error("TypedInformer is not typed")
	}
}

// TestNilClient: a nil clientset is an error from New naming the
// resources, not a panic at Start; the own-factory constructors report it
// and their informers do not run.
func TestNilClient(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	factory, err := informers.New(kubefake.NewSimpleClientset(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer factory.Shutdown()
	view, err := externalversions.New(factory, nil)
	if err == nil || view != nil {
		t.Fatalf("New with a nil client: %v, %v; want an error and no view", view, err)
	}
	for _, want := range []string{"gadgets.example.com/v1, Resource=gadgets", "gadgetclasses", "nil"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %q: %v", want, err)
		}
	}
	if _, err := externalversions.New(nil, fake.NewSimpleClientset()); err == nil {
		t.Error("New with a nil factory: no error")
	}
}

// TestStandaloneInformers: New…Informer builds an informer no factory
// shares, through the clientset, for one namespace or all.
func TestStandaloneInformers(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var client versioned.Interface = fake.NewSimpleClientset(gadget("a", "one"), gadget("b", "two"),
		&gadgetsv1.GadgetClass{ObjectMeta: metav1.ObjectMeta{Name: "small"}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	namespaced := informersv1.NewGadgetInformer(client, "a", 0, cache.Indexers{})
	filtered := informersv1.NewTypedFilteredGadgetInformer(client, metav1.NamespaceAll, 0, nil, func(o *metav1.ListOptions) { o.LabelSelector = "team=b" })
	cluster := informersv1.NewGadgetClassInformer(client, 0, cache.Indexers{})
	for _, i := range []cache.SharedIndexInformer{namespaced, filtered, cluster} {
		go i.RunWithContext(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), namespaced.HasSynced, filtered.HasSynced, cluster.HasSynced) {
		t.Fatal("not synced")
	}
	if got := namespaced.GetStore().ListKeys(); !sameSet(got, []string{"a/one"}) {
		t.Errorf("namespace a: %v", got)
	}
	if got := filtered.GetStore().ListKeys(); !sameSet(got, []string{"b/two"}) {
		t.Errorf("team=b: %v", got)
	}
	if got := cluster.GetStore().ListKeys(); !sameSet(got, []string{"small"}) {
		t.Errorf("classes: %v", got)
	}
	typed := informersv1.ToGadgetIndexInformer(namespaced)
	if _, ok := any(typed).(cache.TypedSharedIndexInformer[*gadgetsv1.Gadget]); !ok {
		t.Error("ToGadgetIndexInformer is not typed")
	}
	adapted := informersv1.ToTypedGadgetInformer(untyped{namespaced})
	if adapted.TypedInformer().GetStore() != namespaced.GetStore() {
		t.Error("ToTypedGadgetInformer's TypedInformer is not the informer's")
	}
	cancel()
}

// untyped is a GadgetInformer without TypedInformer.
type untyped struct{ cache.SharedIndexInformer }

func (u untyped) Informer() cache.SharedIndexInformer { return u.SharedIndexInformer }
func (u untyped) Lister() listersv1.GadgetLister      { return nil }

func sameSet(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	seen := map[string]bool{}
	for _, g := range got {
		seen[g] = true
	}
	for _, w := range want {
		if !seen[w] {
			return false
		}
	}
	return true
}

// TestHotPathAllocatesNothing: once built, the accessors of the bound view
// and their Informer() and Lister() allocate nothing, as for built-ins.
func TestHotPathAllocatesNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	factory, err := informers.New(kubefake.NewSimpleClientset(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer factory.Shutdown()
	view, err := externalversions.New(factory, fake.NewSimpleClientset())
	if err != nil {
		t.Fatal(err)
	}
	_ = view.Gadgets().V1().Gadgets().Lister()
	_ = view.Gadgets().V1alpha1().GadgetClasses().Informer()
	for name, f := range map[string]func(){
		"Gadgets().V1().Gadgets().Lister()":               func() { _ = view.Gadgets().V1().Gadgets().Lister() },
		"Gadgets().V1alpha1().GadgetClasses().Informer()": func() { _ = view.Gadgets().V1alpha1().GadgetClasses().Informer() },
	} {
		if allocs := testing.AllocsPerRun(100, f); allocs != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, allocs)
		}
	}
}
