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
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	updyn "k8s.io/client-go/dynamic/dynamicinformer"
	upmeta "k8s.io/client-go/metadata/metadatainformer"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/dynamicinformer"
	"github.com/kubeinformers/informers/metadatainformer"
	"github.com/kubeinformers/informers/sharding"
)

// This file checks what the dynamicinformer and metadatainformer drop-ins
// add to client-go's factories: RemoveInformer, Ready and SyncStatus,
// the module's options with fail-closed bad input, and that a change made
// right after WaitForCacheSync reaches the handlers.

// TestGVRFactoryNoEventLostAfterSync creates an object right after
// WaitForCacheSync, many times over, with client-go's fake clients (which
// cannot replay a change made between the list and the watch): the handler
// gets it every time.
func TestGVRFactoryNoEventLostAfterSync(t *testing.T) {
	const rounds = 25
	for i := range rounds {
		ctx, cancel := context.WithCancel(syncCtx(t))
		dc := newDynamic()
		mc := newMetadata()
		df := dynamicinformer.NewDynamicSharedInformerFactory(dc, 0)
		mf := metadatainformer.NewSharedInformerFactory(mc, 0)
		dynAdds, metaAdds := make(chan string, 1), make(chan string, 1)
		_, _ = df.ForResource(widgetsGVR).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) { dynAdds <- obj.(*unstructured.Unstructured).GetName() }})
		_, _ = mf.ForResource(podsGVR).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) { metaAdds <- obj.(*metav1.PartialObjectMetadata).GetName() }})
		df.Start(ctx.Done())
		mf.Start(ctx.Done())
		if !df.WaitForCacheSync(ctx.Done())[widgetsGVR] || !mf.WaitForCacheSync(ctx.Done())[podsGVR] {
			t.Fatal("not synced")
		}
		name := fmt.Sprintf("w%d", i)
		if _, err := dc.Resource(widgetsGVR).Namespace("a").Create(ctx, widget("a", name, "Widget"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := mc.Resource(podsGVR).Namespace("a").(interface {
			CreateFake(*metav1.PartialObjectMetadata, metav1.CreateOptions, ...string) (*metav1.PartialObjectMetadata, error)
		}).CreateFake(podMeta("a", name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for what, ch := range map[string]chan string{"dynamic": dynAdds, "metadata": metaAdds} {
			select {
			case got := <-ch:
				if got != name {
					t.Errorf("round %d: %s add of %q, want %q", i, what, got, name)
				}
			case <-ctx.Done():
				t.Fatalf("round %d: the %s add made right after the sync was lost", i, what)
			}
		}
		cancel()
		df.Shutdown()
		mf.Shutdown()
	}
}

// TestGVRFactoryStandaloneInformers runs NewFilteredDynamicInformer and
// NewFilteredMetadataInformer without a factory, next to client-go's: the
// same cache, the same requests, the same indexers.
func TestGVRFactoryStandaloneInformers(t *testing.T) {
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, "byName": func(obj any) ([]string, error) {
		m, err := nsOf(obj)
		return []string{m}, err
	}}
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = "app!=none" }
	type pair struct {
		what       string
		ours, up   cache.SharedIndexInformer
		oursC, upC recorder
	}
	odc, udc := newDynamic(widget("a", "w1", "Widget"), widget("b", "w2", "Widget")), newDynamic(widget("a", "w1", "Widget"), widget("b", "w2", "Widget"))
	omc, umc := newMetadata(podMeta("a", "p1"), podMeta("b", "p2")), newMetadata(podMeta("a", "p1"), podMeta("b", "p2"))
	pairs := []pair{
		{"dynamic", dynamicinformer.NewFilteredDynamicInformer(odc, widgetsGVR, "a", 0, indexers, tweak).Informer(), updyn.NewFilteredDynamicInformer(udc, widgetsGVR, "a", 0, indexers, tweak).Informer(), odc, udc},
		{"metadata", metadatainformer.NewFilteredMetadataInformer(omc, podsGVR, "a", 0, indexers, tweak).Informer(), upmeta.NewFilteredMetadataInformer(umc, podsGVR, "a", 0, indexers, tweak).Informer(), omc, umc},
	}
	ctx, cancel := context.WithCancel(syncCtx(t))
	done := make(chan struct{})
	defer func() {
		cancel()
		for range 2 * len(pairs) {
			<-done
		}
	}()
	for _, p := range pairs {
		for _, inf := range []cache.SharedIndexInformer{p.ours, p.up} {
			go func() {
				inf.Run(ctx.Done())
				done <- struct{}{}
			}()
		}
	}
	for _, p := range pairs {
		if !cache.WaitForCacheSync(ctx.Done(), p.ours.HasSynced, p.up.HasSynced) {
			t.Fatalf("%s: not synced", p.what)
		}
		waitFor(t, ctx, func() bool { return len(p.oursC.Actions()) >= 2 && len(p.upC.Actions()) >= 2 })
		if got, want := requests(p.oursC), requests(p.upC); !slices.Equal(got, want) {
			t.Errorf("%s requests:\n ours     %q\n upstream %q", p.what, got, want)
		}
		got, want := p.ours.GetStore().List(), p.up.GetStore().List()
		sortByKey(got)
		sortByKey(want)
		if len(got) != 1 || !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s caches:\n ours     %v\n upstream %v", p.what, got, want)
		}
		if got, want := slices.Sorted(mapKeys(p.ours.GetIndexer().GetIndexers())), slices.Sorted(mapKeys(p.up.GetIndexer().GetIndexers())); !slices.Equal(got, want) {
			t.Errorf("%s indexers: ours %q, upstream %q", p.what, got, want)
		}
		if byName, err := p.ours.GetIndexer().ByIndex("byName", "a"); err != nil || len(byName) != 1 {
			t.Errorf("%s: ByIndex(byName) = %v, %v", p.what, byName, err)
		}
	}
}

func nsOf(obj any) (string, error) {
	m, err := metaAccessor(obj)
	if err != nil {
		return "", err
	}
	return m.GetNamespace(), nil
}

func metaAccessor(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// gvrFactory is what both packages' Factory offers.
type gvrFactory interface {
	Start(stopCh <-chan struct{})
	StartWithContext(ctx context.Context)
	WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool
	Shutdown()
	RemoveInformer(schema.GroupVersionResource) bool
	Ready() error
	SyncStatus() map[informers.InformerID]bool
	Notices() []string
}

// TestGVRFactoryRemoveInformer removes one of two informers of a dynamic
// and a metadata factory made by the client-go constructors: the factory
// is a Factory by type assertion; the removed informer's goroutines end and
// it sends no further request; the other keeps running; asking again
// builds a fresh one. No goroutine is left after RemoveInformer and
// Shutdown.
func TestGVRFactoryRemoveInformer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dc := newDynamic(widget("a", "w1", "Widget"))
	mc := newMetadata(podMeta("a", "p1"))
	for _, tc := range []struct {
		what   string
		f      any
		c      recorder
		remove schema.GroupVersionResource
		keep   schema.GroupVersionResource
	}{
		{"dynamic", dynamicinformer.NewDynamicSharedInformerFactory(dc, 0), dc, widgetsGVR, gadgetsGVR},
		{"metadata", metadatainformer.NewSharedInformerFactory(mc, 0), mc, podsGVR, deploymentsV1},
	} {
		t.Run(tc.what, func(t *testing.T) {
			f, ok := tc.f.(gvrFactory)
			if !ok {
				t.Fatalf("%T is not a Factory", tc.f)
			}
			// Both packages' Factory interfaces have the same methods; each
			// ForResource returns this module's GenericInformer.
			forResource := func(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
				return tc.f.(interface {
					ForResource(schema.GroupVersionResource) informers.GenericInformer
				}).ForResource(gvr).Informer()
			}
			ctx, cancel := context.WithCancel(syncCtx(t))
			defer cancel()
			removed := forResource(tc.remove)
			forResource(tc.keep)
			f.StartWithContext(ctx)
			if synced := f.WaitForCacheSync(ctx.Done()); !synced[tc.remove] || !synced[tc.keep] || len(synced) != 2 {
				t.Fatalf("WaitForCacheSync = %v", synced)
			}
			if err := f.Ready(); err != nil {
				t.Fatalf("Ready: %v", err)
			}
			before := len(tc.c.Actions())
			if !f.RemoveInformer(tc.remove) {
				t.Fatal("RemoveInformer reported no informer")
			}
			if f.RemoveInformer(tc.remove) {
				t.Error("a second RemoveInformer reported an informer")
			}
			if n := len(removed.GetStore().List()); n != 0 {
				t.Errorf("the removed informer's store holds %d objects", n)
			}
			if after := len(tc.c.Actions()); after != before {
				t.Errorf("%d requests after RemoveInformer", after-before)
			}
			if synced := f.WaitForCacheSync(ctx.Done()); len(synced) != 1 || !synced[tc.keep] {
				t.Errorf("after removal WaitForCacheSync = %v, want only %v", synced, tc.keep)
			}
			for id := range f.SyncStatus() {
				if id.Resource == tc.remove {
					t.Errorf("SyncStatus still has %v", id)
				}
			}
			fresh := forResource(tc.remove)
			if fresh == removed {
				t.Error("ForResource after removal returned the removed informer")
			}
			f.Start(ctx.Done())
			if synced := f.WaitForCacheSync(ctx.Done()); !synced[tc.remove] {
				t.Errorf("the fresh informer has not synced: %v", synced)
			}
			cancel()
			f.Shutdown()
		})
	}
}

// TestGVRFactoryForbiddenNamedByReady: a resource the server forbids is
// named by Ready with the server's message, and WaitForCacheSync reports it
// as not synced without waiting for the context.
func TestGVRFactoryForbiddenNamedByReady(t *testing.T) {
	dc := newDynamic()
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "", errors.New(`User "x" cannot list resource "widgets"`))
	dc.PrependReactor("list", "widgets", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, forbidden })
	dc.PrependWatchReactor("widgets", func(k8stesting.Action) (bool, watch.Interface, error) { return true, nil, forbidden })
	f, err := dynamicinformer.New(dc, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(syncCtx(t))
	defer func() {
		cancel()
		f.Shutdown()
	}()
	f.ForResource(widgetsGVR)
	f.ForResource(gadgetsGVR)
	f.Start(ctx.Done())
	gadgets := informers.InformerID{Form: informers.FormDynamic, Resource: gadgetsGVR, Type: reflect.TypeFor[*unstructured.Unstructured]()}
	waitFor(t, ctx, func() bool {
		err := f.Ready()
		return f.SyncStatus()[gadgets] && err != nil && strings.Contains(err.Error(), "forbidden")
	})
	err = f.Ready()
	if !strings.Contains(err.Error(), "widgets.example.com/v1 [dynamic]") || strings.Contains(err.Error(), "gadgets") {
		t.Errorf("Ready() = %v, want widgets named as forbidden and gadgets not", err)
	}
}

// TestGVRFactoryBadInput: New returns every bad input as an error naming
// it; the client-go constructors fail closed: an invalid narrowing option
// keeps its informers from running (no request at all), WaitForCacheSync
// reports them as not synced at once, and Ready names the option.
func TestGVRFactoryBadInput(t *testing.T) {
	badNamespaces := informers.WithNamespaces("Not_A_Namespace")
	badSelector := informers.WithResourceOptions(widgetsGVR, informers.ResourceOptions{LabelSelector: "app in (("})
	badShard := informers.WithShard(sharding.FieldUID, 3, 2)
	for _, tc := range []struct {
		name    string
		dynOpts []dynamicinformer.DynamicSharedInformerOption
		metaOpt []metadatainformer.SharedInformerOption
		want    string
	}{
		{"namespaces", []dynamicinformer.DynamicSharedInformerOption{dynamicinformer.WithFactoryOptions(badNamespaces)}, []metadatainformer.SharedInformerOption{metadatainformer.WithFactoryOptions(badNamespaces)}, "Not_A_Namespace"},
		{"resource options", []dynamicinformer.DynamicSharedInformerOption{dynamicinformer.WithFactoryOptions(badSelector)}, []metadatainformer.SharedInformerOption{metadatainformer.WithFactoryOptions(badSelector)}, "app in (("},
		{"shard", []dynamicinformer.DynamicSharedInformerOption{dynamicinformer.WithFactoryOptions(badShard)}, []metadatainformer.SharedInformerOption{metadatainformer.WithFactoryOptions(badShard)}, "WithShard(sharding.FieldUID, 3, 2)"},
		{"nil option", []dynamicinformer.DynamicSharedInformerOption{nil}, []metadatainformer.SharedInformerOption{nil}, "option 0 is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := dynamicinformer.New(newDynamic(), 0, tc.dynOpts...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("dynamicinformer.New: %v, want an error naming %q", err, tc.want)
			}
			if _, err := metadatainformer.New(newMetadata(), 0, tc.metaOpt...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("metadatainformer.New: %v, want an error naming %q", err, tc.want)
			}
			if tc.name == "nil option" {
				return
			}
			// Fail closed under the client-go constructors.
			dc, mc := newDynamic(widget("a", "w1", "Widget")), newMetadata()
			df := dynamicinformer.NewDynamicSharedInformerFactoryWithOptions(dc, 0, tc.dynOpts...).(gvrFactory)
			mf := metadatainformer.NewSharedInformerFactoryWithOptions(mc, 0, tc.metaOpt...).(gvrFactory)
			ctx, cancel := context.WithCancel(syncCtx(t))
			defer func() {
				cancel()
				df.Shutdown()
				mf.Shutdown()
			}()
			df.(dynamicinformer.Factory).ForResource(widgetsGVR)
			mf.(metadatainformer.Factory).ForResource(widgetsGVR)
			for what, f := range map[string]gvrFactory{"dynamic": df, "metadata": mf} {
				f.Start(ctx.Done())
				if synced := f.WaitForCacheSync(ctx.Done()); synced[widgetsGVR] {
					t.Errorf("%s: an informer an invalid option was meant for synced", what)
				}
				if ctx.Err() != nil {
					t.Errorf("%s: WaitForCacheSync waited for the context", what)
				}
				if err := f.Ready(); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: Ready() = %v, want it to name %q", what, err, tc.want)
				}
			}
			if n := len(dc.Actions()) + len(mc.Actions()); n != 0 {
				t.Errorf("%d requests from informers that must not run: %q %q", n, requests(dc), requests(mc))
			}
		})
	}
	t.Run("client and resync", func(t *testing.T) {
		if _, err := dynamicinformer.New(nil, -time.Second); err == nil || !strings.Contains(err.Error(), "dynamic.Interface is nil") || !strings.Contains(err.Error(), "-1s is negative") {
			t.Errorf("dynamicinformer.New(nil, -1s): %v", err)
		}
		if _, err := metadatainformer.New(nil, -time.Second); err == nil || !strings.Contains(err.Error(), "metadata.Interface is nil") || !strings.Contains(err.Error(), "-1s is negative") {
			t.Errorf("metadatainformer.New(nil, -1s): %v", err)
		}
	})
}

// TestGVRFactoryInvalidResource: an invalid GroupVersionResource gets an
// informer that never runs and sends no request; WaitForCacheSync reports
// it as not synced without waiting, and Ready names it; RemoveInformer
// drops it.
func TestGVRFactoryInvalidResource(t *testing.T) {
	bad := schema.GroupVersionResource{Group: "example.com", Resource: "widgets"} // no version
	dc := newDynamic()
	f, err := dynamicinformer.New(dc, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(syncCtx(t))
	defer func() {
		cancel()
		f.Shutdown()
	}()
	gi := f.ForResource(bad)
	if gi == nil || gi.Informer() == nil || gi.Informer() != f.ForResource(bad).Informer() {
		t.Fatal("ForResource of an invalid resource: no informer, or a new one each time")
	}
	f.Start(ctx.Done())
	if synced := f.WaitForCacheSync(ctx.Done()); synced[bad] || len(synced) != 1 || ctx.Err() != nil {
		t.Errorf("WaitForCacheSync = %v (context: %v)", synced, ctx.Err())
	}
	if err := f.Ready(); err == nil || !strings.Contains(err.Error(), "the version is empty") {
		t.Errorf("Ready() = %v, want the invalid resource named", err)
	}
	if n := len(dc.Actions()); n != 0 {
		t.Errorf("%d requests for an invalid resource", n)
	}
	if !f.RemoveInformer(bad) || f.Ready() != nil {
		t.Errorf("after RemoveInformer: Ready() = %v", f.Ready())
	}
}

// TestGVRFactoryOptions: the module's options reach the informers of both
// drop-ins: namespaces (one request per namespace), per-resource selectors,
// WithShardSelector and WithTransform.
func TestGVRFactoryOptions(t *testing.T) {
	objs := []runtime.Object{widget("a", "w1", "Widget"), widget("b", "w2", "Widget"), widget("c", "w3", "Widget")}
	dc := newDynamic(objs...)
	f, err := dynamicinformer.New(dc, 0, dynamicinformer.WithFactoryOptions(
		informers.WithNamespaces("a", "b"),
		informers.WithResourceOptions(widgetsGVR, informers.ResourceOptions{LabelSelector: "app!=none"}),
	))
	if err != nil {
		t.Fatal(err)
	}
	mc := newMetadata(podMeta("a", "p1"), podMeta("b", "p2"))
	transformed := 0
	mf, err := metadatainformer.New(mc, 0, metadatainformer.WithTransform(func(obj any) (any, error) {
		transformed++
		return obj, nil
	}), metadatainformer.WithFactoryOptions(informers.WithNamespace("b")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(syncCtx(t))
	defer func() {
		cancel()
		f.Shutdown()
		mf.Shutdown()
	}()
	w := f.ForResource(widgetsGVR)
	p := mf.ForResource(podsGVR)
	f.Start(ctx.Done())
	mf.Start(ctx.Done())
	if !f.WaitForCacheSync(ctx.Done())[widgetsGVR] || !mf.WaitForCacheSync(ctx.Done())[podsGVR] {
		t.Fatal("not synced")
	}
	if got := keysOf(w.Informer().GetStore().List()); !slices.Equal(got, []string{"a/w1", "b/w2"}) {
		t.Errorf("dynamic cache %q, want a/w1 b/w2", got)
	}
	if got := requests(dc); !slices.Contains(got, `list example.com/v1, Resource=widgets ns="a" labels="app!=none" fields=""`) || slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, `ns="c"`) || strings.Contains(s, `ns=""`) }) {
		t.Errorf("dynamic requests %q", got)
	}
	if got := keysOf(p.Informer().GetStore().List()); !slices.Equal(got, []string{"b/p2"}) || transformed == 0 {
		t.Errorf("metadata cache %q (transformed %d), want b/p2", got, transformed)
	}
	if l, err := w.Lister().ByNamespace("a").Get("w1"); err != nil || l.(*unstructured.Unstructured).GetName() != "w1" {
		t.Errorf("Lister().ByNamespace(a).Get(w1) = %v, %v", l, err)
	}
	if _, err := w.Lister().ByNamespace("c").Get("w3"); err == nil {
		t.Error("the lister sees a namespace the factory does not watch")
	} else if !strings.Contains(err.Error(), "not found") {
		t.Errorf("Get of an unwatched object: %v", err)
	}
	var notFound interface{ Status() metav1.Status }
	if _, err := w.Lister().Get("x"); !errors.As(err, &notFound) {
		t.Errorf("Lister().Get(x): %v, want a NotFound status error", err)
	}
}

func keysOf(objs []any) []string {
	var out []string
	for _, o := range objs {
		k, _ := cache.MetaNamespaceKeyFunc(o)
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestGVRFactoryShardSelector: client-go v0.38's WithShardSelector on both
// drop-ins. Two factories take the two halves of the UID hash space; the
// fakes ignore the selector, as a server without the gate does, so each
// filters on the client and says so in Notices: disjoint, and together
// complete.
func TestGVRFactoryShardSelector(t *testing.T) {
	objs := widgetsWithUID(40, "a")
	var metas []runtime.Object
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		p := podMeta("a", u.GetName())
		p.UID = u.GetUID()
		metas = append(metas, p)
	}
	ctx, cancel := context.WithCancel(syncCtx(t))
	var factories []gvrFactory
	defer func() {
		cancel()
		for _, f := range factories {
			f.Shutdown()
		}
	}()
	var dynKeys, metaKeys [2][]string
	for i := range 2 {
		sel, err := sharding.ForShard(sharding.FieldUID, i, 2)
		if err != nil {
			t.Fatal(err)
		}
		df := dynamicinformer.NewDynamicSharedInformerFactoryWithOptions(newDynamic(objs...), 0, dynamicinformer.WithShardSelector(sel.APISelector())).(dynamicinformer.Factory)
		mf := metadatainformer.NewSharedInformerFactoryWithOptions(newMetadata(metas...), 0, metadatainformer.WithShardSelector(sel.APISelector())).(metadatainformer.Factory)
		factories = append(factories, df, mf)
		di, mi := df.ForResource(widgetsGVR).Informer(), mf.ForResource(podsGVR).Informer()
		df.Start(ctx.Done())
		mf.Start(ctx.Done())
		if !df.WaitForCacheSync(ctx.Done())[widgetsGVR] || !mf.WaitForCacheSync(ctx.Done())[podsGVR] {
			t.Fatal("not synced")
		}
		dynKeys[i], metaKeys[i] = keysOf(di.GetStore().List()), keysOf(mi.GetStore().List())
		for what, f := range map[string]gvrFactory{"dynamic": df, "metadata": mf} {
			if n := f.Notices(); len(n) == 0 || !strings.Contains(strings.Join(n, "\n"), "shard") {
				t.Errorf("%s shard %d: Notices() = %q, want the ignored selector named", what, i, n)
			}
		}
	}
	for what, halves := range map[string][2][]string{"dynamic": dynKeys, "metadata": metaKeys} {
		all := append(slices.Clone(halves[0]), halves[1]...)
		slices.Sort(all)
		if len(halves[0]) == 0 || len(halves[1]) == 0 || len(slices.Compact(all)) != 40 || len(all) != 40 {
			t.Errorf("%s: halves of %d and %d objects, %d distinct; want a split of 40, disjoint and complete", what, len(halves[0]), len(halves[1]), len(slices.Compact(all)))
		}
	}
}

// TestGVRFactoryInvalidResources: several invalid resources are named in
// order, SyncStatus reports them, and a nil module option is an error that
// names its position.
func TestGVRFactoryInvalidResources(t *testing.T) {
	mc := newMetadata()
	f, err := metadatainformer.New(mc, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(syncCtx(t))
	defer func() {
		cancel()
		f.Shutdown()
	}()
	badZ := schema.GroupVersionResource{Version: "v1", Resource: "Zs"}
	badA := schema.GroupVersionResource{Version: "v1", Resource: "pods/status"}
	f.ForResource(badZ)
	f.ForResource(badA)
	f.Start(ctx.Done())
	err = f.Ready()
	if err == nil || strings.Index(err.Error(), "Zs") > strings.Index(err.Error(), "pods/status") || !strings.Contains(err.Error(), "subresource") {
		t.Errorf("Ready() = %v, want both named, in byte order", err)
	}
	status := f.SyncStatus()
	for _, gvr := range []schema.GroupVersionResource{badZ, badA} {
		id := informers.InformerID{Form: informers.FormMetadata, Resource: gvr, Type: reflect.TypeFor[*metav1.PartialObjectMetadata]()}
		if synced, ok := status[id]; !ok || synced {
			t.Errorf("SyncStatus()[%v] = %v, %v; want false, true", id, synced, ok)
		}
	}
	if _, err := metadatainformer.New(mc, 0, metadatainformer.WithFactoryOptions(nil)); err == nil || !strings.Contains(err.Error(), "is nil") {
		t.Errorf("a nil module option: %v", err)
	}
	// The never-started informer, run by hand, fails its list with the
	// reason and does not sync.
	inf := f.ForResource(badA).Informer()
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		inf.RunWithContext(rctx)
		close(done)
	}()
	time.Sleep(50 * time.Millisecond)
	synced := inf.HasSynced()
	stop()
	<-done
	if synced {
		t.Error("the informer of an invalid resource synced")
	}
}

// TestGVRFactoryLeanAndListMode: WithLeanMemory and WithListMode reach the
// drop-ins' informers: managedFields are dropped from the cache, and an
// invalid list mode is an error from New and fails closed under the
// client-go constructor.
func TestGVRFactoryLeanAndListMode(t *testing.T) {
	w := widget("a", "w1", "Widget")
	w.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}})
	p := podMeta("a", "p1")
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	df, err := dynamicinformer.New(newDynamic(w), 0, dynamicinformer.WithFactoryOptions(informers.WithLeanMemory(), informers.WithListMode(informers.ListModeList)))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := metadatainformer.New(newMetadata(p), 0, metadatainformer.WithFactoryOptions(informers.WithLeanMemory(), informers.WithListMode(informers.ListModeConsistentList)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(syncCtx(t))
	defer func() {
		cancel()
		df.Shutdown()
		mf.Shutdown()
	}()
	di, mi := df.ForResource(widgetsGVR).Informer(), mf.ForResource(podsGVR).Informer()
	df.Start(ctx.Done())
	mf.Start(ctx.Done())
	if !df.WaitForCacheSync(ctx.Done())[widgetsGVR] || !mf.WaitForCacheSync(ctx.Done())[podsGVR] {
		t.Fatal("not synced")
	}
	for what, objs := range map[string][]any{"dynamic": di.GetStore().List(), "metadata": mi.GetStore().List()} {
		if len(objs) != 1 {
			t.Fatalf("%s: %d objects cached", what, len(objs))
		}
		if m := objs[0].(metav1.Object); m.GetManagedFields() != nil {
			t.Errorf("%s: managedFields kept under WithLeanMemory: %v", what, m.GetManagedFields())
		}
	}
	bad := informers.WithListMode("Sometimes")
	if _, err := dynamicinformer.New(newDynamic(), 0, dynamicinformer.WithFactoryOptions(bad)); err == nil || !strings.Contains(err.Error(), "Sometimes") {
		t.Errorf("an invalid list mode: %v", err)
	}
}

// TestGVRFactoryNoGoroutineAfterRemoveInformer: once RemoveInformer has
// returned, no goroutine of the removed informer is left, before Shutdown
// and with the factory's context still live.
func TestGVRFactoryNoGoroutineAfterRemoveInformer(t *testing.T) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	defer cancel()
	before := goleak.IgnoreCurrent()
	df := dynamicinformer.NewDynamicSharedInformerFactory(newDynamic(widget("a", "w1", "Widget")), 0).(dynamicinformer.Factory)
	mf := metadatainformer.NewSharedInformerFactory(newMetadata(podMeta("a", "p1")), 0).(metadatainformer.Factory)
	df.ForResource(widgetsGVR)
	mf.ForResource(podsGVR)
	df.Start(ctx.Done())
	mf.Start(ctx.Done())
	if !df.WaitForCacheSync(ctx.Done())[widgetsGVR] || !mf.WaitForCacheSync(ctx.Done())[podsGVR] {
		t.Fatal("not synced")
	}
	if !df.RemoveInformer(widgetsGVR) || !mf.RemoveInformer(podsGVR) {
		t.Fatal("RemoveInformer reported no informer")
	}
	if err := goleak.Find(before); err != nil {
		t.Errorf("goroutines left after RemoveInformer, before Shutdown: %v", err)
	}
	df.Shutdown()
	mf.Shutdown()
}
