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
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	updyn "k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	upmeta "k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/dynamicinformer"
	"github.com/kubeinformers/informers/metadatainformer"
)

// This file runs the scenarios of client-go's own unit tests of
// dynamic/dynamicinformer and metadata/metadatainformer (v0.37.2's
// informer_test.go of each) against both client-go's factories and ours,
// through the same fake clients, and compares what each delivers: the
// WaitForCacheSync result, every event with its object, the cache, the
// lister and the requests. A scenario's trigger is followed by a barrier
// object that the informer sees; the fakes deliver in order, so once the
// barrier has arrived, an event the trigger caused has arrived too, and an
// event that did not arrive never will: no sleep, no timeout decides.

var deploymentsV1beta1 = schema.GroupVersionResource{Group: "extensions", Version: "v1beta1", Resource: "deployments"}
var deploymentsV1 = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// gvrImpl is one implementation of a dynamic or metadata factory, as the
// tests drive it.
type gvrImpl struct {
	name        string
	start       func(stopCh <-chan struct{})
	wait        func(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool
	shutdown    func()
	forResource func(schema.GroupVersionResource) (cache.SharedIndexInformer, cache.GenericLister)
}

func ourDynamic(f dynamicinformer.DynamicSharedInformerFactory) gvrImpl {
	return gvrImpl{"ours", f.Start, f.WaitForCacheSync, f.Shutdown, func(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, cache.GenericLister) {
		gi := f.ForResource(gvr)
		return gi.Informer(), gi.Lister()
	}}
}

func upDynamic(f updyn.DynamicSharedInformerFactory) gvrImpl {
	return gvrImpl{"client-go", f.Start, f.WaitForCacheSync, f.Shutdown, func(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, cache.GenericLister) {
		gi := f.ForResource(gvr)
		return gi.Informer(), gi.Lister()
	}}
}

func ourMetadata(f metadatainformer.SharedInformerFactory) gvrImpl {
	return gvrImpl{"ours", f.Start, f.WaitForCacheSync, f.Shutdown, func(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, cache.GenericLister) {
		gi := f.ForResource(gvr)
		return gi.Informer(), gi.Lister()
	}}
}

func upMetadata(f upmeta.SharedInformerFactory) gvrImpl {
	return gvrImpl{"client-go", f.Start, f.WaitForCacheSync, f.Shutdown, func(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, cache.GenericLister) {
		gi := f.ForResource(gvr)
		return gi.Informer(), gi.Lister()
	}}
}

// event is one handler call.
type event struct {
	Type string
	Obj  any
}

// recorded collects the events of one informer.
type recorded struct {
	mu     sync.Mutex
	events []event
}

func (r *recorded) add(typ string, obj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{typ, obj})
}

func (r *recorded) snapshot() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorded) saw(typ, key string) bool {
	for _, e := range r.snapshot() {
		if k, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(e.Obj); e.Type == typ && k == key {
			return true
		}
	}
	return false
}

// outcome is everything a scenario compares.
type outcome struct {
	synced   map[schema.GroupVersionResource]bool
	events   []event
	cache    []any
	lister   []string
	requests []string
}

// scenario is one of client-go's, with a barrier: an object the informer
// sees, created after the trigger.
type scenario struct {
	name      string
	gvr       schema.GroupVersionResource
	informNS  string
	tweak     func(*metav1.ListOptions)
	existing  runtime.Object
	trigger   func(t *testing.T, gvr schema.GroupVersionResource, create func(runtime.Object) error, update func(runtime.Object) error, del func(ns, name string) error, existing runtime.Object)
	barrier   runtime.Object
	wantEvent string // the event the trigger must cause, "" for none
}

// runScenario runs s against impl, whose fake client is c; create, update
// and del act through that client.
func runScenario(t *testing.T, s scenario, impl gvrImpl, c recorder, create, update func(runtime.Object) error, del func(ns, name string) error) outcome {
	t.Helper()
	ctx, cancel := context.WithCancel(syncCtx(t))
	defer func() {
		cancel()
		impl.shutdown()
	}()
	informer, lister := impl.forResource(s.gvr)
	rec := &recorded{}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { rec.add("add", obj) },
		UpdateFunc: func(_, obj any) { rec.add("update", obj) },
		DeleteFunc: func(obj any) { rec.add("delete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	impl.start(ctx.Done())
	synced := impl.wait(ctx.Done())
	if !synced[s.gvr] {
		t.Fatalf("%s: %v has not synced: %v", impl.name, s.gvr, synced)
	}
	// A cache syncs on its LIST; its WATCH may start later. The fake
	// tracker delivers a change only to the watches open when it is made,
	// so the trigger waits for the watch: the fake records the action
	// under the lock it holds while the watch reactor registers it.
	waitFor(t, ctx, func() bool {
		return slices.ContainsFunc(c.Actions(), func(a k8stesting.Action) bool { return a.GetVerb() == "watch" })
	})
	s.trigger(t, s.gvr, create, update, del, s.existing)
	if err := create(s.barrier); err != nil {
		t.Fatal(err)
	}
	barrierKey, _ := cache.MetaNamespaceKeyFunc(s.barrier)
	waitFor(t, ctx, func() bool { return rec.saw("add", barrierKey) })

	out := outcome{synced: synced, events: rec.snapshot(), cache: informer.GetStore().List(), requests: requests(c)}
	sortByKey(out.cache)
	objs, err := lister.List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		k, _ := cache.MetaNamespaceKeyFunc(o)
		out.lister = append(out.lister, fmt.Sprintf("%s %T", k, o))
	}
	sort.Strings(out.lister)
	return out
}

func compareOutcomes(t *testing.T, s scenario, ours, up outcome) {
	t.Helper()
	if !equality.Semantic.DeepEqual(ours.synced, up.synced) {
		t.Errorf("WaitForCacheSync: ours %v, client-go %v", ours.synced, up.synced)
	}
	if !equality.Semantic.DeepEqual(ours.events, up.events) {
		t.Errorf("events:\n ours      %v\n client-go %v", ours.events, up.events)
	}
	if !equality.Semantic.DeepEqual(ours.cache, up.cache) {
		t.Errorf("caches:\n ours      %v\n client-go %v", ours.cache, up.cache)
	}
	if !slices.Equal(ours.lister, up.lister) {
		t.Errorf("listers:\n ours      %q\n client-go %q", ours.lister, up.lister)
	}
	if !slices.Equal(ours.requests, up.requests) {
		t.Errorf("requests:\n ours      %q\n client-go %q", ours.requests, up.requests)
	}
	// The scenario's own assertion, as client-go's test makes it.
	saw := false
	for _, e := range ours.events {
		if k, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(e.Obj); e.Type == s.wantEvent && k == "ns-foo/name-foo" {
			saw = true
		}
	}
	if want := s.wantEvent != ""; saw != want {
		t.Errorf("the trigger's %q event of ns-foo/name-foo delivered: %v, want %v (events %v)", s.wantEvent, saw, want, ours.events)
	}
}

func deployment(apiVersion, ns, name string, lbls map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind("Deployment")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(lbls)
	return u
}

func dynamicClientFor(gvr schema.GroupVersionResource, objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	// As in client-go's test: the scheme does not know the list kind.
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "DeploymentList"}, objs...)
}

// TestDifferentialDynamicInformerScenarios runs client-go's
// TestFilteredDynamicSharedInformerFactory and
// TestDynamicSharedInformerFactory scenarios against both factories. The
// tweak scenarios pass their tweak to the factory (client-go's test builds
// it but passes nil).
func TestDifferentialDynamicInformerScenarios(t *testing.T) {
	test := map[string]string{"environment": "test"}
	createFoo := func(t *testing.T, gvr schema.GroupVersionResource, create, _ func(runtime.Object) error, _ func(string, string) error, _ runtime.Object) {
		if err := create(deployment(gvr.GroupVersion().String(), "ns-foo", "name-foo", test)); err != nil {
			t.Error(err)
		}
	}
	field := func(sel string) func(*metav1.ListOptions) {
		return func(o *metav1.ListOptions) { o.FieldSelector = sel }
	}
	label := func(sel string) func(*metav1.ListOptions) {
		return func(o *metav1.ListOptions) { o.LabelSelector = sel }
	}
	barrier := func(gvr schema.GroupVersionResource, ns string, lbls map[string]string) *unstructured.Unstructured {
		return deployment(gvr.GroupVersion().String(), ns, "name-bar", lbls)
	}
	scenarios := []scenario{
		{name: "adding an object in another namespace does not trigger AddFunc", gvr: deploymentsV1, informNS: "ns-bar", trigger: createFoo, barrier: barrier(deploymentsV1, "ns-bar", nil)},
		{name: "adding an object triggers AddFunc", gvr: deploymentsV1, informNS: "ns-foo", trigger: createFoo, barrier: barrier(deploymentsV1, "ns-foo", nil), wantEvent: "add"},
		{name: "tweak: an object not matching the field selector", gvr: deploymentsV1, informNS: "ns-foo", tweak: field("metadata.name=name-bar"), trigger: createFoo, barrier: barrier(deploymentsV1, "ns-foo", nil)},
		{name: "tweak: an object matching the field selector", gvr: deploymentsV1, informNS: "ns-foo", tweak: field("metadata.namespace=ns-foo"), trigger: createFoo, barrier: barrier(deploymentsV1, "ns-foo", nil), wantEvent: "add"},
		{name: "tweak: an object not matching the label selector", gvr: deploymentsV1, informNS: "ns-foo", tweak: label("environment=production"), trigger: createFoo, barrier: barrier(deploymentsV1, "ns-foo", map[string]string{"environment": "production"})},
		{name: "tweak: an object matching the label selector", gvr: deploymentsV1, informNS: "ns-foo", tweak: label("environment=test"), trigger: createFoo, barrier: barrier(deploymentsV1, "ns-foo", test), wantEvent: "add"},
		{name: "all namespaces: adding an object triggers AddFunc", gvr: deploymentsV1beta1, trigger: createFoo, barrier: barrier(deploymentsV1beta1, "ns-foo", nil), wantEvent: "add"},
		{
			name: "all namespaces: updating an object triggers UpdateFunc", gvr: deploymentsV1beta1,
			existing: deployment("extensions/v1beta1", "ns-foo", "name-foo", nil),
			trigger: func(t *testing.T, _ schema.GroupVersionResource, _, update func(runtime.Object) error, _ func(string, string) error, existing runtime.Object) {
				u := existing.DeepCopyObject().(*unstructured.Unstructured)
				u.Object["spec"] = "updatedName"
				if err := update(u); err != nil {
					t.Error(err)
				}
			},
			barrier: barrier(deploymentsV1beta1, "ns-foo", nil), wantEvent: "update",
		},
		{
			name: "all namespaces: deleting an object triggers DeleteFunc", gvr: deploymentsV1beta1,
			existing: deployment("extensions/v1beta1", "ns-foo", "name-foo", nil),
			trigger: func(t *testing.T, _ schema.GroupVersionResource, _, _ func(runtime.Object) error, del func(string, string) error, _ runtime.Object) {
				if err := del("ns-foo", "name-foo"); err != nil {
					t.Error(err)
				}
			},
			barrier: barrier(deploymentsV1beta1, "ns-foo", nil), wantEvent: "delete",
		},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			run := func(newFactory func(dynamic.Interface) gvrImpl) outcome {
				var objs []runtime.Object
				if s.existing != nil {
					objs = append(objs, s.existing.DeepCopyObject())
				}
				c := dynamicClientFor(s.gvr, objs...)
				res := func(ns string) dynamic.ResourceInterface { return c.Resource(s.gvr).Namespace(ns) }
				create := func(o runtime.Object) error {
					u := o.(*unstructured.Unstructured)
					_, err := res(u.GetNamespace()).Create(context.Background(), u, metav1.CreateOptions{})
					return err
				}
				update := func(o runtime.Object) error {
					u := o.(*unstructured.Unstructured)
					_, err := res(u.GetNamespace()).Update(context.Background(), u, metav1.UpdateOptions{})
					return err
				}
				del := func(ns, name string) error { return res(ns).Delete(context.Background(), name, metav1.DeleteOptions{}) }
				return runScenario(t, s, newFactory(c), c, create, update, del)
			}
			up := run(func(c dynamic.Interface) gvrImpl {
				return upDynamic(updyn.NewFilteredDynamicSharedInformerFactory(c, 0, s.informNS, s.tweak))
			})
			ours := run(func(c dynamic.Interface) gvrImpl {
				return ourDynamic(dynamicinformer.NewFilteredDynamicSharedInformerFactory(c, 0, s.informNS, s.tweak))
			})
			compareOutcomes(t, s, ours, up)
			for _, o := range ours.cache {
				if _, ok := o.(*unstructured.Unstructured); !ok {
					t.Errorf("ours cached %T for the built-in %v, want *unstructured.Unstructured", o, s.gvr)
				}
			}
		})
	}
}

func partial(apiVersion, ns, name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiVersion, Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
	}
}

// TestDifferentialMetadataInformerScenarios runs client-go's
// TestMetadataSharedInformerFactory scenarios against both factories.
func TestDifferentialMetadataInformerScenarios(t *testing.T) {
	barrier := partial("extensions/v1beta1", "ns-foo", "name-bar")
	scenarios := []scenario{
		{
			name: "adding an object triggers AddFunc", gvr: deploymentsV1beta1,
			trigger: func(t *testing.T, _ schema.GroupVersionResource, create, _ func(runtime.Object) error, _ func(string, string) error, _ runtime.Object) {
				if err := create(partial("extensions/v1beta1", "ns-foo", "name-foo")); err != nil {
					t.Error(err)
				}
			},
			barrier: barrier, wantEvent: "add",
		},
		{
			name: "updating an object triggers UpdateFunc", gvr: deploymentsV1beta1,
			existing: partial("extensions/v1beta1", "ns-foo", "name-foo"),
			trigger: func(t *testing.T, _ schema.GroupVersionResource, _, update func(runtime.Object) error, _ func(string, string) error, existing runtime.Object) {
				p := existing.DeepCopyObject().(*metav1.PartialObjectMetadata)
				p.Annotations = map[string]string{"test": "updatedName"}
				if err := update(p); err != nil {
					t.Error(err)
				}
			},
			barrier: barrier, wantEvent: "update",
		},
		{
			name: "deleting an object triggers DeleteFunc", gvr: deploymentsV1beta1,
			existing: partial("extensions/v1beta1", "ns-foo", "name-foo"),
			trigger: func(t *testing.T, _ schema.GroupVersionResource, _, _ func(runtime.Object) error, del func(string, string) error, _ runtime.Object) {
				if err := del("ns-foo", "name-foo"); err != nil {
					t.Error(err)
				}
			},
			barrier: barrier, wantEvent: "delete",
		},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			run := func(newFactory func(metadata.Interface) gvrImpl) outcome {
				var objs []runtime.Object
				if s.existing != nil {
					objs = append(objs, s.existing.DeepCopyObject())
				}
				c := newMetadata(objs...)
				res := func(ns string) metadatafake.MetadataClient {
					return c.Resource(s.gvr).Namespace(ns).(metadatafake.MetadataClient)
				}
				create := func(o runtime.Object) error {
					p := o.(*metav1.PartialObjectMetadata)
					_, err := res(p.Namespace).CreateFake(p, metav1.CreateOptions{})
					return err
				}
				update := func(o runtime.Object) error {
					p := o.(*metav1.PartialObjectMetadata)
					_, err := res(p.Namespace).UpdateFake(p, metav1.UpdateOptions{})
					return err
				}
				del := func(ns, name string) error {
					return c.Resource(s.gvr).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
				}
				return runScenario(t, s, newFactory(c), c, create, update, del)
			}
			up := run(func(c metadata.Interface) gvrImpl { return upMetadata(upmeta.NewSharedInformerFactory(c, 0)) })
			ours := run(func(c metadata.Interface) gvrImpl {
				return ourMetadata(metadatainformer.NewSharedInformerFactory(c, 0))
			})
			compareOutcomes(t, s, ours, up)
		})
	}
}

// watchListServer answers only watch requests, with the bookmark that ends
// a watch-list stream's initial events, as in client-go's
// TestWatchListSemanticsSimple; it records every request.
func watchListServer(t *testing.T, apiVersion, kind string) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		q.Del("timeoutSeconds") // random per request
		q.Del("timeout")
		mu.Lock()
		seen = append(seen, req.Method+" "+req.URL.Path+"?"+q.Encode())
		mu.Unlock()
		if _, ok := req.URL.Query()["watch"]; !ok {
			http.Error(w, "unexpected request", http.StatusInternalServerError)
			return
		}
		obj := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{
			"annotations": map[string]string{metav1.InitialEventsAnnotationKey: "true"},
		}}
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Error(err)
			return
		}
		ev, err := json.Marshal(&metav1.WatchEvent{Type: string(watch.Bookmark), Object: runtime.RawExtension{Raw: raw}})
		if err != nil {
			t.Error(err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(ev)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		// The first request is the stream; what follows (the next watch
		// after the server closed it) is timing.
		return slices.Clone(seen[:min(1, len(seen))])
	}
}

// TestDifferentialWatchListSemantics runs client-go's
// TestWatchListSemanticsSimple (a real client against a server that only
// streams) and TestUnSupportWatchListSemantics (the fake, which cannot
// stream) for both forms, against both factories: each syncs, and the
// server sees the same first request.
func TestDifferentialWatchListSemantics(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, true)
	type factory interface {
		Start(<-chan struct{})
		Shutdown()
	}
	check := func(t *testing.T, f factory, informer cache.SharedIndexInformer) {
		t.Helper()
		ctx, cancel := context.WithCancel(syncCtx(t))
		defer func() {
			cancel()
			f.Shutdown()
		}()
		f.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
			t.Fatal("failed to wait for caches to sync")
		}
	}
	t.Run("dynamic", func(t *testing.T) {
		var first [2][]string
		for i, newF := range []func(dynamic.Interface) (factory, cache.SharedIndexInformer){
			func(c dynamic.Interface) (factory, cache.SharedIndexInformer) {
				f := updyn.NewFilteredDynamicSharedInformerFactory(c, 0, "ns", nil)
				return f, f.ForResource(deploymentsV1).Informer()
			},
			func(c dynamic.Interface) (factory, cache.SharedIndexInformer) {
				f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c, 0, "ns", nil)
				return f, f.ForResource(deploymentsV1).Informer()
			},
		} {
			srv, seen := watchListServer(t, "apps/v1", "Deployment")
			c, err := dynamic.NewForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			f, informer := newF(c)
			check(t, f, informer)
			first[i] = seen()
			f, informer = newF(dynamicClientFor(deploymentsV1))
			check(t, f, informer)
		}
		if !slices.Equal(first[0], first[1]) || len(first[0]) != 1 || !strings.Contains(first[0][0], "sendInitialEvents=true") {
			t.Errorf("first request: client-go %q, ours %q (want one watch-list stream)", first[0], first[1])
		}
	})
	t.Run("metadata", func(t *testing.T) {
		var first [2][]string
		for i, newF := range []func(metadata.Interface) (factory, cache.SharedIndexInformer){
			func(c metadata.Interface) (factory, cache.SharedIndexInformer) {
				f := upmeta.NewFilteredSharedInformerFactory(c, 0, "ns", nil)
				return f, f.ForResource(deploymentsV1).Informer()
			},
			func(c metadata.Interface) (factory, cache.SharedIndexInformer) {
				f := metadatainformer.NewFilteredSharedInformerFactory(c, 0, "ns", nil)
				return f, f.ForResource(deploymentsV1).Informer()
			},
		} {
			srv, seen := watchListServer(t, "meta.k8s.io/v1", "PartialObjectMetadata")
			c, err := metadata.NewForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			f, informer := newF(c)
			check(t, f, informer)
			first[i] = seen()
			f, informer = newF(newMetadata())
			check(t, f, informer)
		}
		if !slices.Equal(first[0], first[1]) || len(first[0]) != 1 || !strings.Contains(first[0][0], "sendInitialEvents=true") {
			t.Errorf("first request: client-go %q, ours %q (want one watch-list stream)", first[0], first[1])
		}
	})
}
