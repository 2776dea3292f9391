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

package informers_test

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
)

var (
	gadgets   = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	gadgetsID = informers.InformerID{Form: informers.FormDynamic, Resource: gadgets, Type: reflect.TypeFor[*unstructured.Unstructured]()}
)

// comingAndGoing is a fake server on which gadgets are served or not: its
// discovery and its dynamic client's list and watch of gadgets agree.
type comingAndGoing struct {
	mu      sync.Mutex
	served  bool
	objects []unstructured.Unstructured
	watcher *watch.RaceFreeFakeWatcher
	rv      int
	// since is the first resource version of the resource since it was
	// last served: a watch from an older one is answered 410 Gone, as a
	// real server's fresh watch cache does.
	since int

	lists, discoveries atomic.Int32
}

func (s *comingAndGoing) set(served bool, names ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.served = served
	s.objects = nil
	s.since = s.rv + 1
	for _, name := range names {
		s.rv++
		u := unstructured.Unstructured{}
		u.SetAPIVersion("example.com/v1")
		u.SetKind("Gadget")
		u.SetNamespace("default")
		u.SetName(name)
		u.SetResourceVersion(fmt.Sprint(s.rv))
		s.objects = append(s.objects, u)
	}
	if !served && s.watcher != nil {
		// The server ends the watches of a resource it stops serving.
		s.watcher.Stop()
		s.watcher = nil
	}
}

func (s *comingAndGoing) notFound() error {
	return apierrors.NewNotFound(schema.GroupResource{Group: gadgets.Group, Resource: gadgets.Resource}, "")
}

func (s *comingAndGoing) dynamicClient() *dynamicfake.FakeDynamicClient {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gadgets: "GadgetList"})
	dyn.PrependReactor("list", "gadgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		s.lists.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.served {
			return true, nil, s.notFound()
		}
		list := &unstructured.UnstructuredList{Items: append([]unstructured.Unstructured(nil), s.objects...)}
		list.SetAPIVersion("example.com/v1")
		list.SetKind("GadgetList")
		list.SetResourceVersion(fmt.Sprint(s.rv))
		return true, list, nil
	})
	dyn.PrependWatchReactor("gadgets", func(action k8stesting.Action) (bool, watch.Interface, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.served {
			return true, nil, s.notFound()
		}
		rv := action.(k8stesting.WatchActionImpl).WatchRestrictions.ResourceVersion
		if n, err := strconv.Atoi(rv); err == nil && n < s.since {
			return true, nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", n, s.since))
		}
		s.watcher = watch.NewRaceFreeFake()
		if rv == "" {
			// A watch from no version starts with the objects, as added.
			for i := range s.objects {
				s.watcher.Add(s.objects[i].DeepCopy())
			}
		}
		return true, s.watcher, nil
	})
	return dyn
}

// ServerResourcesForGroupVersion answers discovery for example.com/v1.
func (s *comingAndGoing) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	s.discoveries.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if gv != gadgets.GroupVersion().String() || !s.served {
		return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
	}
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{{Name: "gadgets", Namespaced: true, Kind: "Gadget"}}}, nil
}

// withDiscovery is a fake clientset whose discovery client is s.
type withDiscovery struct {
	*fake.Clientset
	s *comingAndGoing
}

func (c withDiscovery) Discovery() discovery.DiscoveryInterfaces {
	return discoveryOf{DiscoveryInterfaces: c.Clientset.Discovery(), s: c.s}
}

type discoveryOf struct {
	discovery.DiscoveryInterfaces
	s *comingAndGoing
}

func (d discoveryOf) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return d.s.ServerResourcesForGroupVersion(gv)
}

// waitUntil waits for cond, checked on every tick of a fake clock-free
// loop bounded by the test's deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting until %s", what)
		case <-tick.C:
		}
	}
}

// TestAPIDiscovery follows a resource that comes, goes and comes back on a
// fake server: the informer waits without retrying its list, syncs when the
// resource is served, empties its cache with delete events when it is not,
// and Ready, SyncStatus, Notices and WaitForCacheSync say so.
func TestAPIDiscovery(t *testing.T) {
	s := &comingAndGoing{}
	f, err := informers.New(withDiscovery{fake.NewClientset(), s}, 0, informers.WithDynamicClient(s.dynamicClient()), informers.WithAPIDiscovery())
	if err != nil {
		t.Fatal(err)
	}
	g, err := f.ForResource(gadgets)
	if err != nil {
		t.Fatal(err)
	}
	var adds, deletes atomic.Int32
	if _, err := g.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { adds.Add(1) },
		DeleteFunc: func(any) { deletes.Add(1) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	f.StartWithContext(ctx)
	defer f.Shutdown()
	defer cancel()

	// Not served: WaitForCacheSync returns without waiting for it.
	syncCtx, syncCancel := context.WithTimeout(ctx, 20*time.Second)
	res := f.WaitForCacheSyncWithContext(syncCtx)
	waited := syncCtx.Err() != nil
	syncCancel()
	if waited {
		t.Fatalf("WaitForCacheSync waited for an informer whose resource is not served: %v", res.Err)
	}
	if res.Err == nil || !strings.Contains(res.Err.Error(), "waits for its resource") {
		t.Fatalf("WaitForCacheSync error = %v, want one saying the informer waits for its resource", res.Err)
	}
	checkWaiting(t, f, true)
	// It does not retry its list: while discovery is asked three more
	// times, no list is made.
	lists, asked := s.lists.Load(), s.discoveries.Load()
	waitUntil(t, "discovery was asked three more times", func() bool { return s.discoveries.Load() >= asked+3 })
	if n := s.lists.Load(); n != lists {
		t.Errorf("%d lists while the resource was not served, want none", n-lists)
	}

	// Served: it lists and syncs.
	s.set(true, "a", "b")
	waitUntil(t, "the informer synced", func() bool { return f.SyncStatus()[gadgetsID] })
	if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "two adds", func() bool { return adds.Load() == 2 })
	checkWaiting(t, f, false)

	// Gone: the cache empties with delete events, and it waits again.
	s.set(false)
	waitUntil(t, "two deletes", func() bool { return deletes.Load() == 2 })
	if n := len(g.Informer().GetStore().ListKeys()); n != 0 {
		t.Errorf("%d objects cached after the resource went, want 0", n)
	}
	waitUntil(t, "the informer waits", func() bool { return len(f.Notices()) > 0 })
	checkWaiting(t, f, true)

	// Back, with one object: it is added.
	s.set(true, "c")
	waitUntil(t, "the third add", func() bool { return adds.Load() == 3 })
	waitUntil(t, "the informer no longer waits", func() bool { return len(f.Notices()) == 0 })
	checkWaiting(t, f, false)
	if n := deletes.Load(); n != 2 {
		t.Errorf("%d deletes, want 2", n)
	}
}

// checkWaiting checks what the factory says of the gadgets informer.
func checkWaiting(t *testing.T, f informers.Factory, waiting bool) {
	t.Helper()
	id := gadgetsID
	if err := f.Ready(); err != nil {
		t.Errorf("Ready() = %v, want nil: a missing resource is not the informer's failure", err)
	}
	if synced := f.SyncStatus()[id]; synced == waiting {
		t.Errorf("SyncStatus()[%v] = %v while waiting = %v", id, synced, waiting)
	}
	notices := strings.Join(f.Notices(), "\n")
	if got := strings.Contains(notices, "waits for its resource: the server does not serve example.com/v1, Resource=gadgets"); got != waiting {
		t.Errorf("Notices() = %q; says waiting: %v, want %v", notices, got, waiting)
	}
}

func TestAPIDiscoveryNeedsAClientset(t *testing.T) {
	_, err := informers.New(nil, 0, informers.WithoutClientset(), informers.WithAPIDiscovery())
	if err == nil || !strings.Contains(err.Error(), "WithAPIDiscovery") {
		t.Fatalf("New(WithoutClientset, WithAPIDiscovery) error = %v, want one naming WithAPIDiscovery", err)
	}
}

// TestAPIDiscoveryForbidden: a 403 keeps Ready failing, is retried at
// growing intervals rather than at once, and a grant is taken up at the
// next retry.
func TestAPIDiscoveryForbidden(t *testing.T) {
	client := fake.NewClientset(versioned("default", "a", "1"))
	var denied atomic.Bool
	denied.Store(true)
	var mu sync.Mutex
	var calls []time.Time
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		calls = append(calls, time.Now())
		mu.Unlock()
		if denied.Load() {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf("no grant yet"))
		}
		return false, nil, nil
	})
	f, err := informers.New(client, 0, informers.WithAPIDiscovery())
	if err != nil {
		t.Fatal(err)
	}
	pods := f.Core().V1().Pods()
	pods.Informer()
	ctx, cancel := context.WithCancel(t.Context())
	f.StartWithContext(ctx)
	defer f.Shutdown()
	defer cancel()

	n := func() int { mu.Lock(); defer mu.Unlock(); return len(calls) }
	waitUntil(t, "three lists", func() bool { return n() >= 3 })
	if err := f.Ready(); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("Ready() = %v, want the 403", err)
	}
	mu.Lock()
	// Waits of 1 s and 2 s (and up to a tenth more): a timer never fires
	// early, so this lower bound cannot flake.
	if d := calls[2].Sub(calls[0]); d < 3*time.Second {
		t.Errorf("three forbidden lists in %v, want them at least 1 s then 2 s apart", d)
	}
	mu.Unlock()

	denied.Store(false)
	if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatal(err)
	}
	if err := f.Ready(); err != nil {
		t.Errorf("Ready() after the grant = %v", err)
	}
	if _, err := pods.Lister().Pods("default").Get("a"); err != nil {
		t.Errorf("the pod after the grant: %v", err)
	}
}
