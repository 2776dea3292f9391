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

	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
)

// This file tests Factory.SetNamespaces over fakes: what handlers and
// listers see as namespaces come and go, that a kept namespace makes no new
// request, bad input, and races with the factory's life cycle.

// nsRequestCounter counts the fake's list and watch requests of pods per
// namespace.
type nsRequestCounter struct {
	mu     sync.Mutex
	counts map[string]int // "list a", "watch a"
}

func countNSRequests(client *fake.Clientset) *nsRequestCounter {
	rc := &nsRequestCounter{counts: map[string]int{}}
	client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		rc.add("list " + a.GetNamespace())
		return false, nil, nil
	})
	client.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		rc.add("watch " + a.GetNamespace())
		return false, nil, nil
	})
	return rc
}

func (rc *nsRequestCounter) add(k string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.counts[k]++
}

func (rc *nsRequestCounter) of(ns string) (lists, watches int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.counts["list "+ns], rc.counts["watch "+ns]
}

// nsView is a handler's picture of the cache: the keys it was told of, and
// the tombstones it got.
type nsView struct {
	mu         sync.Mutex
	keys       map[string]bool
	tombstones map[string]bool
}

func newNSView() *nsView { return &nsView{keys: map[string]bool{}, tombstones: map[string]bool{}} }

func (v *nsView) OnAdd(obj any, _ bool) { v.set(obj, true) }
func (v *nsView) OnUpdate(_, obj any)   { v.set(obj, true) }
func (v *nsView) OnDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		v.mu.Lock()
		v.tombstones[t.Key] = true
		v.mu.Unlock()
	}
	v.set(obj, false)
}

func (v *nsView) set(obj any, present bool) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		panic(err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if present {
		v.keys[key] = true
	} else {
		delete(v.keys, key)
	}
}

func (v *nsView) sorted() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Sorted(maps.Keys(v.keys))
}

func nsStoreKeys(store cache.Store) []string {
	return slices.Sorted(slices.Values(store.ListKeys()))
}

// podsIn returns the keys of the fake's pods in namespaces, sorted.
func nsPods(namespaces ...string) []string {
	var out []string
	for _, ns := range namespaces {
		for _, name := range []string{"p1", "p2"} {
			out = append(out, ns+"/"+name)
		}
	}
	slices.Sort(out)
	return out
}

// TestSetNamespaces walks the set of the issue, {a,b} → {a,b,c} → {b,c,d}
// → {a}, on typed, dynamic and metadata informers of a factory built with
// WithNamespaces, and of one built with New and WithNamespace: handlers
// and listers follow the set, a removed namespace's objects leave as
// tombstones, and a kept namespace makes no new request.
func TestSetNamespaces(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, tc := range []struct {
		name  string
		opt   informers.SharedInformerOption
		first []string
	}{
		{"WithNamespaces", informers.WithNamespaces("a", "b"), []string{"a", "b"}},
		{"WithNamespace", informers.WithNamespace("a"), []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, ns := range []string{"a", "b", "c", "d", "e"} {
				objs = append(objs, pod(ns, "p1"), pod(ns, "p2"))
			}
			client := fake.NewClientset(objs...)
			rc := countNSRequests(client)
			factory, err := informers.New(client, 0, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			inf := factory.Core().V1().Pods().Informer()
			v := newNSView()
			if _, err := inf.AddEventHandler(v); err != nil {
				t.Fatal(err)
			}
			// Cluster-scoped informers are untouched.
			nodes := factory.Core().V1().Nodes().Informer()
			factory.Start(ctx.Done())
			defer factory.Shutdown()
			defer cancel()
			if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, nodes.HasSynced) {
				t.Fatal("not synced")
			}
			settle(t, ctx, factory)
			if got, want := v.sorted(), nsPods(tc.first...); !slices.Equal(got, want) {
				t.Fatalf("handler before SetNamespaces = %v, want %v", got, want)
			}

			for _, set := range [][]string{{"a", "b", "c"}, {"b", "c", "d"}, {"a"}, {"a", "e"}} {
				before := map[string][2]int{}
				for _, ns := range set {
					l, w := rc.of(ns)
					before[ns] = [2]int{l, w}
				}
				prev := slices.Clone(v.sorted())
				start := time.Now()
				if err := factory.SetNamespaces(set...); err != nil {
					t.Fatalf("SetNamespaces(%v): %v", set, err)
				}
				// At return: nothing of a removed namespace in the lister
				// or the handler.
				for _, k := range nsStoreKeys(inf.GetStore()) {
					if !slices.Contains(set, strings.Split(k, "/")[0]) {
						t.Errorf("after SetNamespaces(%v) the store still holds %s", set, k)
					}
				}
				for _, k := range v.sorted() {
					if !slices.Contains(set, strings.Split(k, "/")[0]) {
						t.Errorf("after SetNamespaces(%v) the handler still holds %s", set, k)
					}
				}
				want := nsPods(set...)
				waitFor(t, ctx, func() bool { return slices.Equal(v.sorted(), want) && slices.Equal(nsStoreKeys(inf.GetStore()), want) })
				t.Logf("SetNamespaces(%v): handler and lister complete after %v", set, time.Since(start))
				settle(t, ctx, factory)
				v.mu.Lock()
				tombstones := maps.Clone(v.tombstones)
				v.mu.Unlock()
				for _, k := range prev {
					if !slices.Contains(set, strings.Split(k, "/")[0]) && !tombstones[k] {
						t.Errorf("no tombstone for %s of a removed namespace", k)
					}
				}
				for _, ns := range set {
					l, w := rc.of(ns)
					if b, kept := before[ns]; kept && slices.Contains(prevNamespaces(prev), ns) && (l != b[0] || w != b[1]) {
						t.Errorf("kept namespace %s: lists %d→%d, watches %d→%d; want no new request", ns, b[0], l, b[1], w)
					}
				}
				lister := factory.Core().V1().Pods().Lister()
				for _, ns := range set {
					pods, err := lister.Pods(ns).List(everything())
					if err != nil || len(pods) != 2 {
						t.Errorf("lister in %s: %d pods, %v", ns, len(pods), err)
					}
				}
			}
			if l, w := rc.of(""); l != 0 || w != 0 {
				t.Errorf("%d lists and %d watches of all namespaces, want none", l, w)
			}
			// Informers built later use the current set.
			dyn, err := factory.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
			if err != nil {
				t.Fatal(err)
			}
			_ = dyn
			cancel()
		})
	}
}

func prevNamespaces(keys []string) []string {
	var out []string
	for _, k := range keys {
		ns := strings.Split(k, "/")[0]
		if !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// TestSetNamespacesBuiltLater: an informer built after SetNamespaces
// watches the new set; one with namespaces of its own (ResourceOptions)
// keeps them.
func TestSetNamespacesBuiltLater(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	client := fake.NewClientset(pod("a", "p1"), pod("b", "p1"), pod("c", "p1"), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "cm"}})
	factory, err := informers.New(client, 0, informers.WithNamespaces("a"),
		informers.WithResourceOptions(corev1.SchemeGroupVersion.WithResource("configmaps"), informers.ResourceOptions{Namespaces: []string{"x"}}))
	if err != nil {
		t.Fatal(err)
	}
	cms := factory.Core().V1().ConfigMaps().Informer()
	if err := factory.SetNamespaces("b", "c"); err != nil {
		t.Fatal(err)
	}
	pods := factory.Core().V1().Pods().Informer()
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, cms.HasSynced) {
		t.Fatal("not synced")
	}
	if got, want := nsStoreKeys(pods.GetStore()), []string{"b/p1", "c/p1"}; !slices.Equal(got, want) {
		t.Errorf("pods built after SetNamespaces = %v, want %v", got, want)
	}
	if got, want := nsStoreKeys(cms.GetStore()), []string{"x/cm"}; !slices.Equal(got, want) {
		t.Errorf("configmaps of ResourceOptions.Namespaces = %v, want %v", got, want)
	}
}

// TestSetNamespacesRejects: bad input is an error that changes nothing.
func TestSetNamespacesRejects(t *testing.T) {
	client := fake.NewClientset(pod("a", "p1"), pod("b", "p1"))
	for _, tc := range []struct {
		name    string
		factory func() informers.Factory
		set     []string
		want    string
	}{
		{"empty", withNS("a"), nil, "no namespace given"},
		{"invalid name", withNS("a"), []string{"a", "B!"}, "not a valid namespace name"},
		{"duplicate", withNS("a"), []string{"a", "a"}, "given twice"},
		{"all namespaces", func() informers.Factory {
			f, _ := informers.New(client, 0)
			return f
		}, []string{"a"}, "watches all namespaces"},
		{"client-go constructor", func() informers.Factory {
			return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("a")).(informers.Factory)
		}, []string{"b"}, "client-go compatible constructor"},
		{"shut down", func() informers.Factory {
			f := withNS("a")()
			f.Shutdown()
			return f
		}, []string{"b"}, "shut down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.factory()
			inf := f.Core().V1().Pods().Informer()
			err := f.SetNamespaces(tc.set...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("SetNamespaces(%q) = %v, want an error with %q", tc.set, err, tc.want)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f.Start(ctx.Done())
			if tc.name == "shut down" || tc.name == "all namespaces" {
				return
			}
			if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				t.Fatal("not synced")
			}
			if got := nsStoreKeys(inf.GetStore()); !slices.Equal(got, []string{"a/p1"}) {
				t.Errorf("after a refused SetNamespaces the informer holds %v, want a/p1", got)
			}
			cancel()
			f.Shutdown()
		})
	}
}

func withNS(ns ...string) func() informers.Factory {
	return func() informers.Factory {
		f, err := informers.New(fake.NewClientset(pod("a", "p1"), pod("b", "p1")), 0, informers.WithNamespaces(ns...))
		if err != nil {
			panic(err)
		}
		return f
	}
}

// TestSetNamespacesRaces races SetNamespaces with itself, Start,
// RemoveInformer, handler registration, the accessors and Shutdown; -race
// and goleak judge, and at the end the informer holds exactly the last set.
func TestSetNamespacesRaces(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var objs []runtime.Object
	for _, ns := range []string{"a", "b", "c", "d"} {
		objs = append(objs, pod(ns, "p1"), pod(ns, "p2"))
	}
	client := fake.NewClientset(objs...)
	factory, err := informers.New(client, 0, informers.WithNamespaces("a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sets := [][]string{{"a", "b"}, {"a", "b", "c"}, {"b", "c", "d"}, {"a"}, {"d"}}
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			for j := range 15 {
				switch (i + j) % 6 {
				case 0, 1:
					if err := factory.SetNamespaces(sets[(i+j)%len(sets)]...); err != nil {
						t.Error(err)
					}
				case 2:
					factory.StartWithContext(ctx)
				case 3:
					if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(newNSView()); err != nil && !strings.Contains(err.Error(), "stopped") {
						t.Error(err)
					}
				case 4:
					if j%5 == 4 {
						factory.RemoveInformer(pods)
					}
				case 5:
					factory.Core().V1().Pods().Lister()
					if _, err := factory.ForMetadata(pods); err != nil && !strings.Contains(err.Error(), "metadata client") {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := factory.SetNamespaces("c", "d"); err != nil {
		t.Fatal(err)
	}
	inf := factory.Core().V1().Pods().Informer()
	factory.StartWithContext(ctx)
	waitFor(t, ctx, func() bool { return slices.Equal(nsStoreKeys(inf.GetStore()), nsPods("c", "d")) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, set := range sets {
			_ = factory.SetNamespaces(set...)
		}
	}()
	cancel()
	factory.Shutdown()
	<-done
	if err := factory.SetNamespaces("a"); err == nil {
		t.Error("SetNamespaces after Shutdown = nil, want an error")
	}
}
