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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
)

var (
	widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	gadgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	podsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

func widget(ns, name, kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetResourceVersion("1")
	_ = unstructured.SetNestedField(u.Object, "large", "spec", "size")
	return u
}

func podMeta(ns, name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"},
	}
}

func newDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		widgetsGVR: "WidgetList", gadgetsGVR: "GadgetList",
	}, objs...)
}

func newMetadata(objs ...runtime.Object) *metadatafake.FakeMetadataClient {
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		panic(err)
	}
	return metadatafake.NewSimpleMetadataClient(scheme, objs...)
}

// newFactory is New with the three fake clients, failing the test on error.
func newFactory(t *testing.T, opts ...informers.SharedInformerOption) informers.Factory {
	t.Helper()
	all := append([]informers.SharedInformerOption{
		informers.WithDynamicClient(newDynamic(widget("a", "w1", "Widget"), widget("b", "w2", "Widget"), widget("a", "g1", "Gadget"))),
		informers.WithMetadataClient(newMetadata(podMeta("a", "p1"), podMeta("b", "p2"))),
	}, opts...)
	f, err := informers.New(fake.NewClientset(pod("a", "p1"), pod("b", "p2")), 0, all...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f
}

func storeKeys(store cache.Store) []string {
	k := store.ListKeys()
	slices.Sort(k)
	return k
}

// TestOneFactoryThreeForms: typed, dynamic and metadata informers come from
// one factory, share one Start and WaitForCacheSync, and hold what their
// form says.
func TestOneFactoryThreeForms(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(syncCtx(t))
	f := newFactory(t)

	typed := f.Core().V1().Pods().Informer()
	widgets, err := f.ForResource(widgetsGVR)
	if err != nil {
		t.Fatalf("ForResource(%v): %v", widgetsGVR, err)
	}
	meta, err := f.ForMetadata(podsGVR)
	if err != nil {
		t.Fatalf("ForMetadata(pods): %v", err)
	}
	if meta.Informer() == typed {
		t.Fatal("ForMetadata(pods) returned the typed pods informer")
	}
	again, _ := f.ForResource(widgetsGVR)
	if again.Informer() != widgets.Informer() {
		t.Fatal("ForResource(widgets) twice gave two informers")
	}
	f.StartWithContext(ctx)
	mustSync(t, ctx, f)

	if got, want := storeKeys(widgets.Informer().GetStore()), []string{"a/w1", "b/w2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("dynamic widgets cache = %v, want %v", got, want)
	}
	objs, err := widgets.Lister().ByNamespace("a").List(everything())
	if err != nil || len(objs) != 1 {
		t.Errorf("dynamic lister in namespace a = %v, %v; want 1 object", objs, err)
	}
	if _, ok := objs[0].(*unstructured.Unstructured); !ok {
		t.Errorf("dynamic lister returned %T, want *unstructured.Unstructured", objs[0])
	}
	for _, obj := range meta.Informer().GetStore().List() {
		if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
			t.Errorf("metadata informer cached %T, want *metav1.PartialObjectMetadata", obj)
		}
	}
	if got, want := storeKeys(meta.Informer().GetStore()), []string{"a/p1", "b/p2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("metadata pods cache = %v, want %v", got, want)
	}
	status := f.SyncStatus()
	for _, id := range []informers.InformerID{
		{Form: informers.FormTyped, Resource: podsGVR, Type: reflect.TypeFor[*corev1.Pod]()},
		{Form: informers.FormDynamic, Resource: widgetsGVR, Type: reflect.TypeFor[*unstructured.Unstructured]()},
		{Form: informers.FormMetadata, Resource: podsGVR, Type: reflect.TypeFor[*metav1.PartialObjectMetadata]()},
	} {
		if synced, ok := status[id]; !ok || !synced {
			t.Errorf("SyncStatus()[%v] = %v, %v; want true, true (status: %v)", id, synced, ok, status)
		}
	}
	if err := f.Ready(); err != nil {
		t.Errorf("Ready() after sync = %v", err)
	}
	cancel()
	f.Shutdown()
}

// TestSyncStatusTellsCustomResourcesApart: two custom resources share one
// Go type, so WaitForCacheSync's map has one entry; SyncStatus has two.
func TestSyncStatusTellsCustomResourcesApart(t *testing.T) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	defer cancel()
	f := newFactory(t)
	defer f.Shutdown()
	defer cancel()
	for _, gvr := range []schema.GroupVersionResource{widgetsGVR, gadgetsGVR} {
		if _, err := f.ForResource(gvr); err != nil {
			t.Fatal(err)
		}
	}
	f.StartWithContext(ctx)
	res := f.WaitForCacheSyncWithContext(ctx)
	if len(res.Synced) != 1 || res.Err != nil {
		t.Fatalf("WaitForCacheSync = %v, %v; want one *Unstructured entry", res.Synced, res.Err)
	}
	status := f.SyncStatus()
	if len(status) != 2 {
		t.Fatalf("SyncStatus() = %v, want widgets and gadgets", status)
	}
}

// TestForResourceWithoutDynamicClient: a custom resource without a dynamic
// client is ErrUnknownResource, saying what would serve it.
func TestForResourceWithoutDynamicClient(t *testing.T) {
	f, err := informers.New(fake.NewClientset(), 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.ForResource(widgetsGVR)
	if !errors.Is(err, informers.ErrUnknownResource) || !strings.Contains(err.Error(), "dynamic client") || !strings.Contains(err.Error(), "widgets") {
		t.Errorf("ForResource(widgets) without a dynamic client = %v; want ErrUnknownResource naming widgets and the dynamic client", err)
	}
	_, err = f.ForMetadata(podsGVR)
	if err == nil || !strings.Contains(err.Error(), "metadata client") || !strings.Contains(err.Error(), "pods") {
		t.Errorf("ForMetadata(pods) without a metadata client = %v; want an error naming pods and the metadata client", err)
	}
}

// TestBadResources: malformed resources are errors that say what is wrong,
// even with every client present.
func TestBadResources(t *testing.T) {
	f := newFactory(t)
	for _, tc := range []struct {
		gvr  schema.GroupVersionResource
		want string
	}{
		{schema.GroupVersionResource{}, "the version is empty"},
		{schema.GroupVersionResource{Group: "example.com", Resource: "widgets"}, "the version is empty"},
		{schema.GroupVersionResource{Group: "example.com", Version: "v1"}, "the resource is empty"},
		{schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "Widgets"}, "not lower case"},
		{schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets/status"}, "subresource"},
		{schema.GroupVersionResource{Group: "Example_com", Version: "v1", Resource: "widgets"}, "the group"},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployment"}, `did you mean "deployments"`},
	} {
		_, err := f.ForResource(tc.gvr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ForResource(%#v) = %v; want an error containing %q", tc.gvr, err, tc.want)
		}
		if tc.want == `did you mean "deployments"` {
			continue // a metadata informer may serve any well-formed resource
		}
		_, err = f.ForMetadata(tc.gvr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ForMetadata(%#v) = %v; want an error containing %q", tc.gvr, err, tc.want)
		}
	}
}

// TestNewForConfigBadInput: a nil config and a host that does not parse
// are errors, not panics.
func TestNewForConfigBadInput(t *testing.T) {
	if _, err := informers.NewForConfig(nil, 0); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("NewForConfig(nil) = %v; want an error about the nil config", err)
	}
	_, err := informers.NewForConfig(&rest.Config{Host: "http://[::1"}, 0)
	if err == nil || !strings.Contains(err.Error(), "[::1") {
		t.Errorf("NewForConfig(bad host) = %v; want an error naming the host", err)
	}
	if _, err := informers.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"}, -time.Second); err == nil {
		t.Error("NewForConfig with a negative resync returned no error")
	}
	f, err := informers.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"}, 0)
	if err != nil {
		t.Fatalf("NewForConfig(good config) = %v", err)
	}
	if _, err := f.ForMetadata(podsGVR); err != nil {
		t.Errorf("NewForConfig's factory has no metadata client: %v", err)
	}
	if _, err := f.ForResource(widgetsGVR); err != nil {
		t.Errorf("NewForConfig's factory has no dynamic client: %v", err)
	}
	if _, err := informers.New(fake.NewClientset(), 0, informers.WithDynamicClient(nil), informers.WithMetadataClient(nil)); err == nil ||
		!strings.Contains(err.Error(), "WithDynamicClient") || !strings.Contains(err.Error(), "WithMetadataClient") {
		t.Errorf("New with nil dynamic and metadata clients = %v; want both named", err)
	}
}

// TestRemoveInformer: removing pods stops its typed and metadata
// informers, leaves the others running and synced, and a new request
// builds a fresh informer that the next Start runs.
func TestRemoveInformer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(syncCtx(t))
	client := fake.NewClientset(pod("a", "p1"))
	f, err := informers.New(client, 0, informers.WithMetadataClient(newMetadata(podMeta("a", "p1"))))
	if err != nil {
		t.Fatal(err)
	}
	pods := f.Core().V1().Pods().Informer()
	podLister := f.Core().V1().Pods().Lister()
	meta, _ := f.ForMetadata(podsGVR)
	cms := f.Core().V1().ConfigMaps().Informer()
	f.StartWithContext(ctx)
	mustSync(t, ctx, f)

	if !f.RemoveInformer(podsGVR) {
		t.Fatal("RemoveInformer(pods) = false for a running informer")
	}
	if !pods.IsStopped() || !meta.Informer().IsStopped() {
		t.Fatalf("after RemoveInformer: typed stopped=%v, metadata stopped=%v; want both stopped", pods.IsStopped(), meta.Informer().IsStopped())
	}
	if n := len(pods.GetStore().List()); n != 0 {
		t.Errorf("the removed informer still caches %d objects", n)
	}
	if f.RemoveInformer(podsGVR) {
		t.Error("RemoveInformer(pods) twice = true")
	}
	if cms.IsStopped() || !cms.HasSynced() {
		t.Fatal("removing pods stopped the configmaps informer")
	}
	// The configmaps informer still gets events.
	if _, err := client.CoreV1().ConfigMaps("a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	settle(t, ctx, f)
	if _, ok, _ := cms.GetStore().GetByKey("a/c"); !ok {
		t.Fatal("the configmaps informer did not get a/c")
	}

	fresh := f.Core().V1().Pods().Informer()
	if fresh == pods {
		t.Fatal("after RemoveInformer the accessor still returns the removed informer")
	}
	if f.Core().V1().Pods().Lister() == podLister {
		t.Error("after RemoveInformer the accessor still returns the removed informer's lister")
	}
	if fresh.HasSynced() {
		t.Fatal("the fresh informer synced before Start")
	}
	if err := f.Ready(); err != nil {
		t.Errorf("Ready() with an unstarted fresh informer = %v; only started informers count", err)
	}
	f.StartWithContext(ctx)
	mustSync(t, ctx, f)
	if _, ok, _ := fresh.GetStore().GetByKey("a/p1"); !ok {
		t.Error("the fresh pods informer does not hold a/p1 after sync")
	}
	if _, err := f.Core().V1().Pods().Lister().Pods("a").Get("p1"); err != nil {
		t.Errorf("the fresh lister: %v", err)
	}
	if f.RemoveInformer(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}) {
		t.Error("RemoveInformer of a resource never requested = true")
	}
	cancel()
	f.Shutdown()
}

// TestRemoveInformerRaces: RemoveInformer during Start, during Shutdown,
// twice at once and while other goroutines call Lister(): no race (run
// with -race), no deadlock, no goroutine left behind.
func TestRemoveInformerRaces(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(syncCtx(t))
	f, err := informers.New(fake.NewClientset(pod("a", "p1")), 0, informers.WithMetadataClient(newMetadata(podMeta("a", "p1"))))
	if err != nil {
		t.Fatal(err)
	}
	f.Core().V1().Pods().Informer()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := f.Core().V1().Pods().Lister().List(everything()); err != nil {
					t.Error(err)
					return
				}
				_, _ = f.ForMetadata(podsGVR)
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 50 {
				f.StartWithContext(ctx)
				f.RemoveInformer(podsGVR)
				_ = f.Ready()
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	f.StartWithContext(ctx)
	cancel()
	var sd sync.WaitGroup
	sd.Go(f.Shutdown)
	sd.Go(func() { f.RemoveInformer(podsGVR) })
	sd.Wait()
}

// TestReadyNamesForbidden: an informer whose list is forbidden is named by
// Ready and by WaitForCacheSync's error, with the server's message.
func TestReadyNamesForbidden(t *testing.T) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	client := fake.NewClientset(pod("a", "p1"))
	client.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New(`User "x" cannot list resource "secrets"`))
	})
	dyn := newDynamic()
	dyn.PrependReactor("list", "widgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "")
	})
	f, err := informers.New(client, 0, informers.WithDynamicClient(dyn))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	defer cancel()
	f.Core().V1().Pods().Informer()
	f.Core().V1().Secrets().Informer()
	if _, err := f.ForResource(widgetsGVR); err != nil {
		t.Fatal(err)
	}
	if err := f.Ready(); err != nil {
		t.Errorf("Ready() before Start = %v; want nil (nothing started)", err)
	}
	f.StartWithContext(ctx)
	waitFor(t, ctx, func() bool {
		err := f.Ready()
		return err != nil && strings.Contains(err.Error(), "forbidden") && strings.Contains(err.Error(), "not found")
	})
	err = f.Ready()
	for _, want := range []string{"secrets (v1): not synced", `User "x" cannot list resource "secrets"`, "widgets.example.com/v1 [dynamic]: not synced"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Ready() = %q; want it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "pods") {
		t.Errorf("Ready() = %q names pods, which synced", err)
	}
	short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	res := f.WaitForCacheSyncWithContext(short)
	if !errors.Is(res.Err, context.DeadlineExceeded) || !strings.Contains(res.Err.Error(), "secrets (v1)") || !strings.Contains(res.Err.Error(), "forbidden") {
		t.Errorf("SyncResult.Err = %v; want DeadlineExceeded naming secrets and the 403", res.Err)
	}
	if res.Synced[reflect.TypeFor[*corev1.Pod]()] != true || res.Synced[reflect.TypeFor[*corev1.Secret]()] != false {
		t.Errorf("Synced = %v; want pods true, secrets false", res.Synced)
	}
}

// TestReadyAfterFailingRelist: a synced informer whose later list and
// watch fail (a deleted CRD) is not ready, though HasSynced stays true.
func TestReadyAfterFailingRelist(t *testing.T) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	dyn := newDynamic(widget("a", "w1", "Widget"))
	var mu sync.Mutex
	gone := false
	var current *watch.FakeWatcher
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "")
	dyn.PrependReactor("list", "widgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if gone {
			return true, nil, notFound
		}
		return false, nil, nil
	})
	dyn.PrependWatchReactor("widgets", func(k8stesting.Action) (bool, watch.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		if gone {
			return true, nil, notFound
		}
		current = watch.NewFake()
		return true, current, nil
	})
	f, err := informers.New(fake.NewClientset(), 0, informers.WithDynamicClient(dyn))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Shutdown()
	defer cancel()
	w, _ := f.ForResource(widgetsGVR)
	f.StartWithContext(ctx)
	mustSync(t, ctx, f)
	if err := f.Ready(); err != nil {
		t.Fatalf("Ready() after sync = %v", err)
	}
	waitFor(t, ctx, func() bool { mu.Lock(); defer mu.Unlock(); return current != nil })
	// The CRD goes: the server ends the watch, and lists and watches 404.
	mu.Lock()
	gone = true
	current.Stop()
	mu.Unlock()
	waitFor(t, ctx, func() bool {
		err := f.Ready()
		return err != nil && strings.Contains(err.Error(), "widgets.example.com/v1 [dynamic]: failing") && strings.Contains(err.Error(), "not found")
	})
	if !w.Informer().HasSynced() {
		t.Fatal("HasSynced went back to false")
	}
	if !f.RemoveInformer(widgetsGVR) {
		t.Fatal("RemoveInformer(widgets) = false")
	}
	if err := f.Ready(); err != nil {
		t.Errorf("Ready() after removing the failing informer = %v", err)
	}
}

func everything() labels.Selector { return labels.Everything() }
