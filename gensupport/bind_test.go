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

package gensupport_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	gadgetsv1 "github.com/kubeinformers/informers/examples/crd/apis/gadgets/v1"
	"github.com/kubeinformers/informers/examples/crd/client/clientset/versioned"
	crdfake "github.com/kubeinformers/informers/examples/crd/client/clientset/versioned/fake"
	"github.com/kubeinformers/informers/examples/crd/client/informers/externalversions"
	listersv1 "github.com/kubeinformers/informers/examples/crd/client/listers/gadgets/v1"
	"github.com/kubeinformers/informers/gensupport"
	"github.com/kubeinformers/informers/internalinterfaces"
)

var (
	gadgetsGVR = schema.GroupVersionResource{Group: "gadgets.example.com", Version: "v1", Resource: "gadgets"}
	classesGVR = schema.GroupVersionResource{Group: "gadgets.example.com", Version: "v1", Resource: "gadgetclasses"}
)

func gadgetsResource() *gensupport.TypedResource[*gadgetsv1.Gadget, versioned.Interface] {
	return gensupport.NewTypedResource(gadgetsGVR, true, &gadgetsv1.Gadget{},
		func(c versioned.Interface, namespace string) gensupport.Requests {
			return gensupport.RequestsOf(c.GadgetsV1().Gadgets(namespace))
		})
}

func classesResource() *gensupport.TypedResource[*gadgetsv1.GadgetClass, versioned.Interface] {
	return gensupport.NewTypedResource(classesGVR, false, &gadgetsv1.GadgetClass{},
		func(c versioned.Interface, _ string) gensupport.Requests {
			return gensupport.RequestsOf(c.GadgetsV1().GadgetClasses())
		})
}

// sink keeps the compiler from optimizing the calls away.
var sink any

// TestBindHotPathAllocatesNothing: the generated accessors of a bound
// group (factory, group, version, kind) allocate nothing once created, as
// the built-in ones (TestHotPathAllocatesNothing).
func TestBindHotPathAllocatesNothing(t *testing.T) {
	factory, err := informers.New(fake.NewClientset(), 0)
	if err != nil {
		t.Fatal(err)
	}
	view, err := externalversions.New(factory, crdfake.NewSimpleClientset())
	if err != nil {
		t.Fatal(err)
	}
	view.Gadgets().V1().Gadgets().Lister()
	for name, f := range map[string]func(){
		"Informer":      func() { sink = view.Gadgets().V1().Gadgets().Informer() },
		"TypedInformer": func() { sink = view.Gadgets().V1().Gadgets().TypedInformer() },
		"Lister":        func() { sink = view.Gadgets().V1().Gadgets().Lister() },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("view.Gadgets().V1().Gadgets().%s() allocates %v times per call", name, n)
		}
	}
	if view.Gadgets().V1().Gadgets().Informer() != view.Gadgets().V1().Gadgets().TypedInformer() {
		t.Error("Informer() and TypedInformer() are not one value")
	}
}

// TestBindBadInput: what Bind cannot take is an error naming the resource
// and the problem.
func TestBindBadInput(t *testing.T) {
	client := crdfake.NewSimpleClientset()
	newFactory := func(t *testing.T) informers.Factory {
		f, err := informers.New(fake.NewClientset(), 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	requests := func(c versioned.Interface, ns string) gensupport.Requests {
		return gensupport.RequestsOf(c.GadgetsV1().Gadgets(ns))
	}
	for _, tc := range []struct {
		name      string
		resources []gensupport.BindableResource[versioned.Interface]
		want      []string
	}{
		{"built-in resource", []gensupport.BindableResource[versioned.Interface]{gensupport.NewTypedResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, true, &gadgetsv1.Gadget{}, requests)},
			[]string{"Resource=pods", "built-in resource"}},
		{"invalid resource", []gensupport.BindableResource[versioned.Interface]{gensupport.NewTypedResource(schema.GroupVersionResource{Group: "gadgets.example.com", Version: "v1", Resource: "Gadgets"}, true, &gadgetsv1.Gadget{}, requests)},
			[]string{"Resource=Gadgets", "not lower case"}},
		{"nil example", []gensupport.BindableResource[versioned.Interface]{gensupport.NewTypedResource(gadgetsGVR, true, (*gadgetsv1.Gadget)(nil), requests)},
			[]string{"Resource=gadgets", "example object"}},
		{"nil requests", []gensupport.BindableResource[versioned.Interface]{gensupport.NewTypedResource[*gadgetsv1.Gadget, versioned.Interface](gadgetsGVR, true, &gadgetsv1.Gadget{}, nil)},
			[]string{"Resource=gadgets", "requests function is nil"}},
		{"nil resource", []gensupport.BindableResource[versioned.Interface]{nil}, []string{"resource 0 is nil"}},
		{"one type, two resources", []gensupport.BindableResource[versioned.Interface]{gadgetsResource(), gensupport.NewTypedResource(
			schema.GroupVersionResource{Group: "gadgets.example.com", Version: "v1", Resource: "widgets"}, true, &gadgetsv1.Gadget{}, requests)},
			[]string{"Resource=widgets", "is already bound to gadgets.example.com/v1, Resource=gadgets"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gensupport.Bind(newFactory(t), versioned.Interface(client), tc.resources...)
			if err == nil {
				t.Fatal("Bind returned no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Bind: %v\nwant it to contain %q", err, w)
				}
			}
		})
	}

	t.Run("not our factory", func(t *testing.T) {
		if _, err := gensupport.Bind[versioned.Interface](nil, client, gadgetsResource()); err == nil || !strings.Contains(err.Error(), "not one of package informers'") {
			t.Errorf("Bind(nil factory) = %v", err)
		}
	})
	t.Run("bound again to another scope", func(t *testing.T) {
		f := newFactory(t)
		if _, err := gensupport.Bind(f, versioned.Interface(client), gadgetsResource()); err != nil {
			t.Fatal(err)
		}
		other := gensupport.NewTypedResource(gadgetsGVR, false, &gadgetsv1.Gadget{}, requests)
		if _, err := gensupport.Bind(f, versioned.Interface(client), other); err == nil || !strings.Contains(err.Error(), "already bound to *v1.Gadget (namespaced); cannot bind it to *v1.Gadget (cluster-scoped)") {
			t.Errorf("Bind of another scope: %v", err)
		}
	})
	t.Run("InformerFor before Bind", func(t *testing.T) {
		f := newFactory(t)
		f.InformerFor(&gadgetsv1.Gadget{}, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
			return cache.NewSharedIndexInformer(&cache.ListWatch{}, &gadgetsv1.Gadget{}, 0, cache.Indexers{})
		})
		if _, err := gensupport.Bind(f, versioned.Interface(client), gadgetsResource()); err == nil || !strings.Contains(err.Error(), "built by InformerFor before the binding") {
			t.Errorf("Bind after InformerFor: %v", err)
		}
	})
}

// TestBindTwiceShares: binding the same resources again (a generated New
// called twice) shares the informers.
func TestBindTwiceShares(t *testing.T) {
	factory, err := informers.New(fake.NewClientset(), 0)
	if err != nil {
		t.Fatal(err)
	}
	client := crdfake.NewSimpleClientset()
	first, err := externalversions.New(factory, client)
	if err != nil {
		t.Fatal(err)
	}
	second, err := externalversions.New(factory, client)
	if err != nil {
		t.Fatal(err)
	}
	if first.Gadgets().V1().Gadgets().Informer() != second.Gadgets().V1().Gadgets().Informer() {
		t.Error("two views of one factory hold two gadgets informers")
	}
	b, err := gensupport.Bind(factory, versioned.Interface(client), gadgetsResource(), classesResource())
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Resources(); len(got) != 2 || got[0] != classesGVR || got[1] != gadgetsGVR {
		t.Errorf("Resources() = %v", got)
	}
	if b.Factory() != factory {
		t.Error("Factory() is not the factory bound to")
	}
	if got := b.InformerFor(&gadgetsv1.Gadget{}, nil); got != first.Gadgets().V1().Gadgets().Informer() {
		t.Error("Binding.InformerFor(&Gadget{}) is not the bound informer")
	}
}

// TestBindNotices: options for a resource nothing serves are a notice
// until it is bound.
func TestBindNotices(t *testing.T) {
	factory, err := informers.New(fake.NewClientset(), 0, informers.WithResourceOptions(gadgetsGVR, informers.ResourceOptions{LabelSelector: "a=b"}))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if n := factory.Notices(); len(n) != 1 || !strings.Contains(n[0], "gadgets.example.com/v1, Resource=gadgets") {
		t.Errorf("Notices() before the binding = %q, want one naming gadgets", n)
	}
	if _, err := externalversions.New(factory, crdfake.NewSimpleClientset()); err != nil {
		t.Fatal(err)
	}
	if n := factory.Notices(); len(n) != 0 {
		t.Errorf("Notices() after the binding = %q, want none", n)
	}
}

// TestTypedResourceNewInformer: the standalone informer lists and watches
// through the clientset; a nil one is an error naming the resource, not a
// panic.
func TestTypedResourceNewInformer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := crdfake.NewSimpleClientset(&gadgetsv1.Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "g1"}},
		&gadgetsv1.Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "g2"}})
	informer := gadgetsResource().NewInformer(client, "a", internalinterfaces.InformerOptions{
		Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	run, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		informer.RunWithContext(run)
	}()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("the standalone informer did not sync")
	}
	if got := listersv1.NewGadgetLister(informer.GetIndexer()); got != nil {
		list, err := got.List(labels.Everything())
		if err != nil || len(list) != 1 || list[0].Name != "g1" {
			t.Errorf("lister = %v, %v; want [a/g1]", list, err)
		}
	}
	stop()
	<-done

	// A cluster-scoped resource ignores the namespace.
	if classesResource().Namespaced() || !gadgetsResource().Namespaced() {
		t.Error("Namespaced() does not report the scopes given")
	}
	classes := classesResource().NewInformer(crdfake.NewSimpleClientset(&gadgetsv1.GadgetClass{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}), "a", internalinterfaces.InformerOptions{})
	run, stop = context.WithCancel(ctx)
	done = make(chan struct{})
	go func() {
		defer close(done)
		classes.RunWithContext(run)
	}()
	if !cache.WaitForCacheSync(ctx.Done(), classes.HasSynced) {
		t.Fatal("the standalone gadgetclasses informer did not sync")
	}
	if keys := classes.GetStore().ListKeys(); len(keys) != 1 || keys[0] != "c1" {
		t.Errorf("gadgetclasses = %q, want [c1]", keys)
	}
	stop()
	<-done

	var nilClient versioned.Interface
	lw := gadgetsResource().NewInformer(nilClient, "", internalinterfaces.InformerOptions{})
	errs := make(chan error, 1)
	if err := lw.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		select {
		case errs <- err:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	run, stop = context.WithCancel(ctx)
	done = make(chan struct{})
	go func() {
		defer close(done)
		lw.RunWithContext(run)
	}()
	var listErr error
	select {
	case listErr = <-errs:
	case <-ctx.Done():
	}
	stop()
	<-done
	if listErr == nil || !strings.Contains(listErr.Error(), "gadgets.example.com/v1, Resource=gadgets") || !strings.Contains(listErr.Error(), "is nil") {
		t.Errorf("list error with a nil clientset = %v", listErr)
	}
}

// TestKindFallback: a generated accessor over a factory that is not ours
// (not a Binder) resolves through the factory's InformerFor, once.
func TestKindFallback(t *testing.T) {
	calls := 0
	shared := cache.NewSharedIndexInformer(&cache.ListWatch{}, &gadgetsv1.Gadget{}, 0, cache.Indexers{})
	var k gensupport.Kind[*gadgetsv1.Gadget, listersv1.GadgetLister]
	k.Init(struct{}{}, gadgetsGVR, &gadgetsv1.Gadget{}, func() cache.SharedIndexInformer {
		calls++
		return shared
	}, listersv1.NewGadgetLister)
	if k.Informer() != shared || k.Typed() == nil || k.Lister() == nil {
		t.Error("the accessor does not serve the fallback's informer")
	}
	k.Informer()
	if calls != 1 {
		t.Errorf("fallback called %d times, want 1", calls)
	}
}

// TestLazy: Get builds once.
func TestLazy(t *testing.T) {
	var l gensupport.Lazy[*corev1.Pod]
	builds := 0
	build := func() *corev1.Pod { builds++; return &corev1.Pod{} }
	first, second := l.Get(build), l.Get(build)
	if first != second || builds != 1 {
		t.Errorf("Lazy built %d times", builds)
	}
	if n := testing.AllocsPerRun(100, func() { sink = l.Get(build) }); n != 0 {
		t.Errorf("Lazy.Get allocates %v times once built", n)
	}
}
