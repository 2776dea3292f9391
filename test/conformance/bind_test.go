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

package conformance

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	gadgetsv1 "github.com/kubeinformers/informers/examples/crd/apis/gadgets/v1"
	"github.com/kubeinformers/informers/examples/crd/client/clientset/versioned"
	crdfake "github.com/kubeinformers/informers/examples/crd/client/clientset/versioned/fake"
	"github.com/kubeinformers/informers/examples/crd/client/informers/externalversions"
	"github.com/kubeinformers/informers/sharding"
)

// These tests run the informers kubeinformers-gen generates for the
// example API (examples/crd, gadgets.example.com) bound to one factory
// with the built-in ones, on fake clientsets: the generated
// externalversions.New(factory, client) calls gensupport.Bind.

var (
	boundGadgetsGVR = schema.GroupVersionResource{Group: "gadgets.example.com", Version: "v1", Resource: "gadgets"}
	boundClassesGVR = schema.GroupVersionResource{Group: "gadgets.example.com", Version: "v1", Resource: "gadgetclasses"}
	gadgetType      = reflect.TypeFor[*gadgetsv1.Gadget]()
	gadgetClassType = reflect.TypeFor[*gadgetsv1.GadgetClass]()
)

func gadget(ns, name string, lbls map[string]string) *gadgetsv1.Gadget {
	return &gadgetsv1.Gadget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls, UID: uidOf(ns + "/" + name)},
		Spec:       gadgetsv1.GadgetSpec{ClassName: "standard", Replicas: 1},
	}
}

func gadgetClass(name string) *gadgetsv1.GadgetClass {
	return &gadgetsv1.GadgetClass{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uidOf(name)}, Spec: gadgetsv1.GadgetClassSpec{Driver: "d"}}
}

// uidOf returns a stable, well-spread UID for a key, for the shard hash.
func uidOf(key string) types.UID {
	var h uint64 = 14695981039346656037
	for i := range len(key) {
		h = (h ^ uint64(key[i])) * 1099511628211
	}
	return types.UID(fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(h>>32), uint16(h>>16), uint16(h)&0xfff, uint16(h>>4)&0xfff, h&0xffffffffffff))
}

// boundFactory returns a factory of ours over kube with the example group
// bound through crd, and its generated view.
func boundFactory(t *testing.T, kube *fake.Clientset, crd *crdfake.Clientset, opts ...informers.SharedInformerOption) (informers.Factory, externalversions.SharedInformerFactory) {
	t.Helper()
	factory, err := informers.New(kube, 0, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	view, err := externalversions.New(factory, crd)
	if err != nil {
		t.Fatalf("externalversions.New: %v", err)
	}
	return factory, view
}

func gadgetKeys(t testing.TB, l interface {
	List(labels.Selector) ([]*gadgetsv1.Gadget, error)
}) []string {
	t.Helper()
	list, err := l.List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range list {
		out = append(out, g.Namespace+"/"+g.Name)
	}
	slices.Sort(out)
	return out
}

// boundRequestLog records the namespace and selectors of every list and watch
// of a resource through a fake clientset.
type boundRequestLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *boundRequestLog) install(c *k8stesting.Fake, resource string) {
	record := func(a k8stesting.Action) {
		var o metav1.ListOptions
		switch a := a.(type) {
		case k8stesting.ListActionImpl:
			o = a.ListOptions
		case k8stesting.WatchActionImpl:
			o = a.ListOptions
		}
		l.mu.Lock()
		l.seen = append(l.seen, fmt.Sprintf("%s ns=%s labels=%s", a.GetVerb(), a.GetNamespace(), o.LabelSelector))
		l.mu.Unlock()
	}
	c.PrependReactor("list", resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		record(a)
		return false, nil, nil
	})
	c.PrependWatchReactor(resource, func(a k8stesting.Action) (bool, watch.Interface, error) {
		record(a)
		return false, nil, nil
	})
}

func (l *boundRequestLog) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

// TestBoundLifecycle: one Start runs the built-in and the bound typed
// informers, one WaitForCacheSync covers them (by Go type, and SyncStatus
// by resource), events reach handlers after the sync, and one Shutdown
// stops all of them.
func TestBoundLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := syncCtx(t)
	kube := fake.NewClientset(pod("a", "p1"))
	crd := crdfake.NewSimpleClientset(gadget("a", "g1", nil), gadgetClass("c1"))
	factory, view := boundFactory(t, kube, crd)

	pods := factory.Core().V1().Pods().Lister()
	gadgets := view.Gadgets().V1().Gadgets()
	classes := view.Gadgets().V1().GadgetClasses()
	var mu sync.Mutex
	var events []string
	if _, err := gadgets.TypedInformer().AddTypedEventHandler(externalversionsGadgetHandler(func(ev string) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	})); err != nil {
		t.Fatal(err)
	}
	classes.Informer()

	stop := make(chan struct{})
	view.Start(stop) // the view's Start is the factory's
	res := factory.WaitForCacheSyncWithContext(ctx)
	if err := res.AsError(); err != nil {
		t.Fatalf("WaitForCacheSyncWithContext: %v", err)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[*corev1.Pod](), gadgetType, gadgetClassType} {
		if !res.Synced[typ] {
			t.Errorf("Synced[%v] = false, want true (all: %v)", typ, res.Synced)
		}
	}
	status := factory.SyncStatus()
	for _, id := range []informers.InformerID{
		{Form: informers.FormTyped, Resource: boundGadgetsGVR, Type: gadgetType},
		{Form: informers.FormTyped, Resource: boundClassesGVR, Type: gadgetClassType},
	} {
		if !status[id] {
			t.Errorf("SyncStatus()[%v] = false, want true (all: %v)", id, status)
		}
	}
	if err := factory.Ready(); err != nil {
		t.Errorf("Ready: %v", err)
	}
	if got, err := pods.List(labels.Everything()); err != nil || len(got) != 1 {
		t.Errorf("pods lister: %v, %v", got, err)
	}
	if got, err := classes.Lister().Get("c1"); err != nil || got.Spec.Driver != "d" {
		t.Errorf("gadgetclasses lister Get(c1) = %v, %v", got, err)
	}

	if _, err := crd.GadgetsV1().Gadgets("a").Create(ctx, gadget("a", "g2", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	updated := gadget("a", "g1", nil)
	updated.Spec.Replicas = 3
	if _, err := crd.GadgetsV1().Gadgets("a").Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := crd.GadgetsV1().Gadgets("a").Delete(ctx, "g2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"add a/g1", "add a/g2", "update a/g1 replicas=3", "delete a/g2"}
	settle(t, ctx, factory)
	mu.Lock()
	got := slices.Clone(events)
	mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	if keys := gadgetKeys(t, gadgets.Lister()); !slices.Equal(keys, []string{"a/g1"}) {
		t.Errorf("gadgets lister = %q, want [a/g1]", keys)
	}

	close(stop)
	view.Shutdown() // the factory's: waits for every informer, built-in and bound
}

// externalversionsGadgetHandler reports typed events as short strings.
func externalversionsGadgetHandler(report func(string)) cache.TypedResourceEventHandler[*gadgetsv1.Gadget] {
	return cache.TypedResourceEventHandlerFuncs[*gadgetsv1.Gadget]{
		AddFunc: func(g *gadgetsv1.Gadget) { report("add " + g.Namespace + "/" + g.Name) },
		UpdateFunc: func(_, g *gadgetsv1.Gadget) {
			report(fmt.Sprintf("update %s/%s replicas=%d", g.Namespace, g.Name, g.Spec.Replicas))
		},
		DeleteFunc: func(d cache.DeletedObject[*gadgetsv1.Gadget]) {
			report("delete " + d.GetKey())
		},
	}
}

// TestBoundForResource: once the group is bound, ForResource on the
// factory (and on the view) returns the typed informer the accessor
// shares, also when the factory has a dynamic client; and the factory's
// InformerFor with an object of the type returns it too.
func TestBoundForResource(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		boundGadgetsGVR: "GadgetList", boundClassesGVR: "GadgetClassList",
	})
	factory, err := informers.New(fake.NewClientset(), 0, informers.WithDynamicClient(dyn))
	if err != nil {
		t.Fatal(err)
	}
	// Before the binding, a custom resource is served dynamically.
	before, err := factory.ForResource(boundClassesGVR)
	if err != nil {
		t.Fatal(err)
	}
	if _, typed := before.Informer().(cache.TypedSharedIndexInformer[*gadgetsv1.GadgetClass]); typed {
		t.Fatal("ForResource before the binding returned a typed informer")
	}
	crd := crdfake.NewSimpleClientset(gadget("a", "g1", nil))
	view, err := externalversions.New(factory, crd)
	if err != nil {
		t.Fatal(err)
	}
	accessor := view.Gadgets().V1().Gadgets().Informer()
	for name, get := range map[string]func() (informers.GenericInformer, error){
		"factory": func() (informers.GenericInformer, error) { return factory.ForResource(boundGadgetsGVR) },
		"view":    func() (informers.GenericInformer, error) { return view.ForResource(boundGadgetsGVR) },
	} {
		gi, err := get()
		if err != nil {
			t.Fatalf("%s.ForResource: %v", name, err)
		}
		if gi.Informer() != accessor {
			t.Errorf("%s.ForResource(%v).Informer() is not the accessor's informer", name, boundGadgetsGVR)
		}
	}
	if got := factory.InformerFor(&gadgetsv1.Gadget{}, nil); got != accessor {
		t.Errorf("factory.InformerFor(&Gadget{}) is not the accessor's informer")
	}
	if _, typed := accessor.(cache.TypedSharedIndexInformer[*gadgetsv1.Gadget]); !typed {
		t.Errorf("the bound informer %T is not typed", accessor)
	}
	// Built-in resources through the view are the factory's.
	if gi, err := view.ForResource(podsGVR); err != nil || gi.Informer() != factory.Core().V1().Pods().Informer() {
		t.Errorf("view.ForResource(pods) = %v, %v; want the factory's pods informer", gi, err)
	}

	ctx := syncCtx(t)
	stop := start(ctx, factory)
	mustSync(t, ctx, factory)
	gi, _ := factory.ForResource(boundGadgetsGVR)
	obj, err := gi.Lister().ByNamespace("a").Get("g1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := obj.(*gadgetsv1.Gadget); !ok {
		t.Errorf("ForResource's lister returned %T, want *v1.Gadget", obj)
	}
	stop()
}

// TestBoundOptions: per-resource options given before the binding apply
// to the bound informers, without a dynamic client; WithNamespaces
// applies to the namespaced type and not to the cluster-scoped one;
// WithLeanMemory strips managed fields.
func TestBoundOptions(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := syncCtx(t)
	crd := crdfake.NewSimpleClientset(
		gadget("a", "gold", map[string]string{"tier": "gold"}),
		gadget("a", "tin", map[string]string{"tier": "tin"}),
		gadget("b", "gold", map[string]string{"tier": "gold"}),
		gadget("c", "gold", map[string]string{"tier": "gold"}),
		gadgetClass("c1"),
	)
	var gadgetReqs, classReqs boundRequestLog
	gadgetReqs.install(&crd.Fake, "gadgets")
	classReqs.install(&crd.Fake, "gadgetclasses")
	var transformed sync.Map
	factory, view := boundFactory(t, fake.NewClientset(), crd,
		informers.WithNamespaces("a", "b", "c"),
		informers.WithLeanMemory(),
		informers.WithResourceOptions(boundGadgetsGVR, informers.ResourceOptions{
			Namespaces:    []string{"a", "b"},
			LabelSelector: "tier=gold",
			Transform: func(obj any) (any, error) {
				if g, ok := obj.(*gadgetsv1.Gadget); ok {
					transformed.Store(g.Namespace+"/"+g.Name, true)
				}
				return obj, nil
			},
			Indexers: cache.Indexers{"byClass": func(obj any) ([]string, error) {
				return []string{obj.(*gadgetsv1.Gadget).Spec.ClassName}, nil
			}},
		}),
	)
	gadgets := view.Gadgets().V1().Gadgets()
	classes := view.Gadgets().V1().GadgetClasses()
	gadgets.Informer()
	classes.Informer()
	stop := start(ctx, factory)
	mustSync(t, ctx, factory)

	if keys := gadgetKeys(t, gadgets.Lister()); !slices.Equal(keys, []string{"a/gold", "b/gold"}) {
		t.Errorf("gadgets = %q, want [a/gold b/gold] (namespaces a, b and tier=gold)", keys)
	}
	if _, ok := transformed.Load("a/gold"); !ok {
		t.Error("the resource's Transform did not run")
	}
	if got, err := gadgets.Informer().GetIndexer().ByIndex("byClass", "standard"); err != nil || len(got) != 2 {
		t.Errorf("byClass index = %d objects, %v; want 2", len(got), err)
	}
	for _, r := range gadgetReqs.requests() {
		if !strings.Contains(r, "labels=tier=gold") || strings.Contains(r, "ns=c") || strings.Contains(r, "ns= ") {
			t.Errorf("gadgets request %q: want tier=gold in namespace a or b only", r)
		}
	}
	for _, r := range classReqs.requests() {
		if !strings.Contains(r, "ns= ") {
			t.Errorf("gadgetclasses request %q: want cluster-wide (the type is cluster-scoped)", r)
		}
	}
	if len(classReqs.requests()) == 0 {
		t.Error("no request for gadgetclasses")
	}
	if c, err := classes.Lister().Get("c1"); err != nil {
		t.Errorf("gadgetclasses lister: %v", err)
	} else if c.ManagedFields != nil {
		t.Error("WithLeanMemory did not strip managed fields")
	}
	stop()
}

// TestBoundScopeAndClientErrors: checks that need the type's scope run at
// the binding and are errors from New(factory, client) naming the
// resource; so is a nil clientset, without a panic at Start. The
// informers they concern never run (fail closed) and Ready names them.
func TestBoundScopeAndClientErrors(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, tc := range []struct {
		name     string
		opts     []informers.SharedInformerOption
		nilCrd   bool
		resource schema.GroupVersionResource
		want     []string
	}{
		{"namespaces on a cluster-scoped type", []informers.SharedInformerOption{informers.WithResourceOptions(boundClassesGVR, informers.ResourceOptions{Namespaces: []string{"a"}})},
			false, boundClassesGVR, []string{"gadgets.example.com/v1, Resource=gadgetclasses", `namespaces ["a"] set on a cluster-scoped resource`}},
		{"namespace shard on a cluster-scoped type", []informers.SharedInformerOption{informers.WithResourceOptions(boundClassesGVR, informers.ResourceOptions{ShardSelector: mustNamespaceShard(t)})},
			false, boundClassesGVR, []string{"gadgets.example.com/v1, Resource=gadgetclasses", "cannot be sharded by namespace"}},
		{"nil clientset", nil, true, boundGadgetsGVR, []string{"gadgets.example.com/v1, Resource=gadgets", "the clientset (versioned.Interface) is nil"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := syncCtx(t)
			factory, err := informers.New(fake.NewClientset(), 0, tc.opts...)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			crd := crdfake.NewSimpleClientset()
			var client versioned.Interface = crd
			if tc.nilCrd {
				client = nil
			}
			_, err = externalversions.New(factory, client)
			if err == nil {
				t.Fatal("externalversions.New returned no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New: %v\nwant it to contain %q", err, w)
				}
			}
			// The resource is bound refused: the typed informer never
			// runs, whoever asks for it.
			gi, err := factory.ForResource(tc.resource)
			if err != nil {
				t.Fatalf("ForResource: %v", err)
			}
			stop := start(ctx, factory)
			res := factory.WaitForCacheSyncWithContext(ctx)
			if res.Err == nil || !strings.Contains(res.Err.Error(), tc.resource.Resource) {
				t.Errorf("WaitForCacheSync: %v; want it to name %s", res.Err, tc.resource.Resource)
			}
			if err := factory.Ready(); err == nil || !strings.Contains(err.Error(), tc.resource.Resource+"."+tc.resource.Group) {
				t.Errorf("Ready: %v; want it to name %v", err, tc.resource)
			}
			if gi.Informer().HasSynced() {
				t.Error("the refused informer synced")
			}
			if n := len(crd.Actions()); n != 0 {
				t.Errorf("%d requests through the clientset, want none: %v", n, crd.Actions())
			}
			stop()
		})
	}
}

// start runs f's informers until the returned stop, which also waits for
// them (Shutdown).
func start(ctx context.Context, f interface {
	StartWithContext(context.Context)
	Shutdown()
}) (stop func()) {
	run, cancel := context.WithCancel(ctx)
	f.StartWithContext(run)
	return func() {
		cancel()
		f.Shutdown()
	}
}

func mustNamespaceShard(t *testing.T) apisharding.Selector {
	t.Helper()
	sel, err := sharding.ForShard(sharding.FieldNamespace, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	return sel.APISelector()
}

// TestBoundSharding: a bound typed custom resource is sharded like the
// built-in ones: three replicas' listers partition the objects.
func TestBoundSharding(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := syncCtx(t)
	var objs []runtime.Object
	var all []string
	for i := range 30 {
		g := gadget("ns", fmt.Sprintf("g%02d", i), nil)
		objs = append(objs, g)
		all = append(all, "ns/"+g.Name)
	}
	var union []string
	for i := range 3 {
		crd := crdfake.NewSimpleClientset(objs...)
		factory, view := boundFactory(t, fake.NewClientset(), crd, informers.WithShard(sharding.FieldUID, i, 3))
		lister := view.Gadgets().V1().Gadgets().Lister()
		stop := start(ctx, factory)
		mustSync(t, ctx, factory)
		keys := gadgetKeys(t, lister)
		if len(keys) == 0 || len(keys) == len(all) {
			t.Errorf("replica %d of 3 caches %d of %d gadgets", i, len(keys), len(all))
		}
		union = append(union, keys...)
		stop()
	}
	slices.Sort(union)
	if !slices.Equal(union, all) {
		t.Errorf("the replicas' gadgets together = %q, want each of %q exactly once", union, all)
	}
}

// TestBoundRemoveInformer: RemoveInformer stops the bound informer alone;
// the accessor then resolves a fresh one, which the next Start runs.
func TestBoundRemoveInformer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := syncCtx(t)
	crd := crdfake.NewSimpleClientset(gadget("a", "g1", nil))
	factory, view := boundFactory(t, fake.NewClientset(pod("a", "p1")), crd)
	gadgets := view.Gadgets().V1().Gadgets()
	old := gadgets.Informer()
	pods := factory.Core().V1().Pods().Informer()
	run, cancel := context.WithCancel(ctx)
	factory.StartWithContext(run)
	mustSync(t, ctx, factory)

	if !factory.RemoveInformer(boundGadgetsGVR) {
		t.Fatal("RemoveInformer(gadgets) = false")
	}
	if !old.IsStopped() {
		t.Error("the removed informer still runs")
	}
	if pods.IsStopped() {
		t.Error("RemoveInformer(gadgets) stopped the pods informer")
	}
	if _, ok := factory.SyncStatus()[informers.InformerID{Form: informers.FormTyped, Resource: boundGadgetsGVR, Type: gadgetType}]; ok {
		t.Error("SyncStatus still names the removed informer")
	}
	fresh := gadgets.Informer()
	if fresh == old {
		t.Fatal("the accessor returned the removed informer")
	}
	factory.StartWithContext(run)
	mustSync(t, ctx, factory)
	if keys := gadgetKeys(t, gadgets.Lister()); !slices.Equal(keys, []string{"a/g1"}) {
		t.Errorf("fresh lister = %q, want [a/g1]", keys)
	}
	cancel()
	factory.Shutdown()
}

// TestBoundResourceNotServed: a CRD that is not installed (the server
// answers 404): Ready names the bound informer by resource, and
// RemoveInformer stops it, after which it makes no request.
func TestBoundResourceNotServed(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := syncCtx(t)
	crd := crdfake.NewSimpleClientset()
	var mu sync.Mutex
	requests := 0
	crd.PrependReactor("list", "gadgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		requests++
		mu.Unlock()
		return true, nil, apierrors.NewNotFound(boundGadgetsGVR.GroupResource(), "")
	})
	factory, view := boundFactory(t, fake.NewClientset(), crd)
	view.Gadgets().V1().Gadgets().Informer()
	classes := view.Gadgets().V1().GadgetClasses().Informer()
	stop := start(ctx, factory)
	waitFor(t, ctx, func() bool {
		err := factory.Ready()
		return err != nil && strings.Contains(err.Error(), "gadgets.gadgets.example.com/v1") && strings.Contains(err.Error(), "not found") && classes.HasSynced()
	})
	if !factory.RemoveInformer(boundGadgetsGVR) {
		t.Fatal("RemoveInformer = false")
	}
	mu.Lock()
	after := requests
	mu.Unlock()
	if err := factory.Ready(); err != nil {
		t.Errorf("Ready after RemoveInformer: %v", err)
	}
	// Nothing is left that could list gadgets: Shutdown waits for every
	// goroutine, and the count has not moved.
	stop()
	mu.Lock()
	defer mu.Unlock()
	if requests != after {
		t.Errorf("%d list requests after RemoveInformer", requests-after)
	}
}

// TestBoundStandaloneFactory: the generated NewSharedInformerFactory…
// constructors build their own factory of ours; its options apply, and a
// nil clientset is logged, not a panic.
func TestBoundStandaloneFactory(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := syncCtx(t)
	crd := crdfake.NewSimpleClientset(gadget("a", "g1", nil), gadget("b", "g2", nil))
	f := externalversions.NewSharedInformerFactoryWithOptions(crd, 0, externalversions.WithNamespace("a"))
	lister := f.Gadgets().V1().Gadgets().Lister()
	run, cancel := context.WithCancel(ctx)
	f.Start(run.Done())
	mustSync(t, ctx, f)
	if keys := gadgetKeys(t, lister); !slices.Equal(keys, []string{"a/g1"}) {
		t.Errorf("gadgets = %q, want [a/g1]", keys)
	}
	cancel()
	f.Shutdown()

	broken := externalversions.NewSharedInformerFactory(nil, 0)
	broken.Gadgets().V1().Gadgets().Informer()
	brokenRun, brokenCancel := context.WithCancel(ctx)
	broken.Start(brokenRun.Done())
	// Refused informers are reported at once, without waiting.
	if res := broken.WaitForCacheSyncWithContext(ctx); res.Err == nil || !strings.Contains(res.Err.Error(), "clientset") {
		t.Errorf("WaitForCacheSync with a nil clientset: %v; want it to name the clientset", res.Err)
	}
	brokenCancel()
	broken.Shutdown()
}

// TestBoundShardMembership: a bound typed custom resource follows the
// factory's Lease membership as the built-in ones do: alone a replica
// caches every gadget, with a second member its half, and everything
// again once that member leaves.
func TestBoundShardMembership(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := syncCtx(t)
	var objs []runtime.Object
	var gadgets []*gadgetsv1.Gadget
	for i := range 40 {
		g := gadget("ns", fmt.Sprintf("g%02d", i), nil)
		objs, gadgets = append(objs, g), append(gadgets, g)
	}
	kube := fake.NewClientset() // serves the Leases
	member := func(id string) *sharding.Membership {
		m, err := sharding.NewMembership(sharding.MembershipConfig{
			Client: kube, Namespace: "leases", Controller: "gadgets", Identity: id,
			LeaseDuration: time.Hour, RenewInterval: 20 * time.Minute,
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := member("a"), member("b")
	factory, view := boundFactory(t, kube, crdfake.NewSimpleClientset(objs...), informers.WithShardMembership(a, sharding.FieldUID))
	lister := view.Gadgets().V1().Gadgets().Lister()
	mctx, cancel := context.WithCancel(ctx)
	if err := a.Start(mctx); err != nil {
		t.Fatal(err)
	}
	factory.StartWithContext(mctx)
	defer func() { cancel(); factory.Shutdown(); _ = a.Stop(context.Background()) }()

	expect := func(r sharding.Range) []string {
		var out []string
		for _, g := range gadgets {
			if r.Contains(sharding.Hash(string(g.UID))) {
				out = append(out, g.Namespace+"/"+g.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	all := expect(sharding.Full)
	waitFor(t, ctx, func() bool { return slices.Equal(gadgetKeys(t, lister), all) })
	if err := b.Start(mctx); err != nil {
		t.Fatal(err)
	}
	half := expect(sharding.Assign([]string{"a", "b"})["a"])
	if len(half) == 0 || len(half) == len(all) {
		t.Fatalf("degenerate split: %d of %d", len(half), len(all))
	}
	waitFor(t, ctx, func() bool { return slices.Equal(gadgetKeys(t, lister), half) })
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool { return slices.Equal(gadgetKeys(t, lister), all) })
}

// TestBoundInvalidOptionFailsClosed: under the client-go compatible
// constructor, an invalid per-resource option for a bound resource keeps
// its informer from running (it would list more than asked), and Ready
// names it with the option's error.
func TestBoundInvalidOptionFailsClosed(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := syncCtx(t)
	opt := informers.WithResourceOptions(boundGadgetsGVR, informers.ResourceOptions{LabelSelector: "tier in (gold"})
	if _, err := informers.New(fake.NewClientset(), 0, opt); err == nil || !strings.Contains(err.Error(), "gadgets.example.com/v1, Resource=gadgets") {
		t.Errorf("New with an invalid selector for gadgets = %v, want an error naming the resource", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(fake.NewClientset(), 0, opt).(informers.Factory)
	crd := crdfake.NewSimpleClientset(gadget("a", "g1", nil))
	view, err := externalversions.New(factory, crd)
	if err != nil {
		t.Fatal(err)
	}
	view.Gadgets().V1().Gadgets().Informer()
	classes := view.Gadgets().V1().GadgetClasses().Informer()
	stop := start(ctx, factory)
	defer stop()
	res := factory.WaitForCacheSyncWithContext(ctx)
	if res.Synced[gadgetType] || !res.Synced[gadgetClassType] {
		t.Errorf("Synced = %v, want gadgets refused and gadgetclasses synced", res.Synced)
	}
	if err := factory.Ready(); err == nil || !strings.Contains(err.Error(), `LabelSelector "tier in (gold"`) {
		t.Errorf("Ready() = %v, want it to name the invalid selector", err)
	}
	if !classes.HasSynced() {
		t.Error("gadgetclasses did not sync")
	}
	for _, a := range crd.Actions() {
		if a.GetResource().Resource == "gadgets" {
			t.Errorf("a request for the refused gadgets: %v", a)
		}
	}
}
