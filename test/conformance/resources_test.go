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
	"slices"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
)

// TestEveryResource runs, for each of the 147 resources, the checks a
// controller relies on: the typed accessor and ForResource share one
// informer, objects in the tracker reach the typed and generic listers and
// the namespace index, WithNamespace scopes namespaced kinds only, and the
// list options tweak reaches both List and Watch.
func TestEveryResource(t *testing.T) {
	for _, r := range resources {
		t.Run(r.gvr.String(), func(t *testing.T) {
			t.Parallel()
			testSharedAndSynced(t, r)
			testWithNamespace(t, r)
			testTweak(t, r)
		})
	}
}

func testSharedAndSynced(t *testing.T, r resource) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	factory := informers.NewSharedInformerFactory(r.seed(t), 0)
	defer factory.Shutdown()
	defer cancel()

	typed := r.ours(factory)
	generic, err := factory.ForResource(r.gvr)
	if err != nil {
		t.Fatalf("ForResource: %v", err)
	}
	if generic.Informer() != typed.informer || typed.typed != typed.informer {
		t.Fatalf("ForResource, Informer and TypedInformer return different informers")
	}
	if again := r.ours(factory); again.informer != typed.informer {
		t.Fatalf("a second accessor call returned another informer")
	}
	factory.StartWithContext(ctx)
	mustSync(t, ctx, factory)

	want := []string{key(r, "ns-a", "a"), key(r, "ns-b", "b")}
	slices.Sort(want)
	objs, err := typed.list()
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(t, objs); !slices.Equal(got, want) {
		t.Errorf("typed lister holds %v, want %v", got, want)
	}
	gobjs, err := generic.Lister().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(t, gobjs); !slices.Equal(got, want) {
		t.Errorf("generic lister holds %v, want %v", got, want)
	}
	// Every factory informer has the namespace index; cluster-scoped
	// objects are indexed under "".
	indexed, err := typed.informer.GetIndexer().ByIndex(cache.NamespaceIndex, nsOrEmpty(r, "ns-a"))
	if err != nil {
		t.Fatalf("namespace index: %v", err)
	}
	wantIndexed := 1
	if !r.namespaced {
		wantIndexed = 2
	}
	if len(indexed) != wantIndexed {
		t.Errorf("namespace index holds %d objects for %q, want %d", len(indexed), nsOrEmpty(r, "ns-a"), wantIndexed)
	}
}

func nsOrEmpty(r resource, ns string) string {
	if r.namespaced {
		return ns
	}
	return ""
}

func testWithNamespace(t *testing.T, r resource) {
	ctx, cancel := context.WithCancel(syncCtx(t))
	factory := informers.NewSharedInformerFactoryWithOptions(r.seed(t), 0, informers.WithNamespace("ns-a"))
	defer factory.Shutdown()
	defer cancel()
	a := r.ours(factory)
	factory.StartWithContext(ctx)
	mustSync(t, ctx, factory)
	objs, err := a.list()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ns-a/a"}
	if !r.namespaced {
		want = []string{"a", "b"} // cluster-scoped kinds ignore WithNamespace
	}
	if got := keys(t, objs); !slices.Equal(got, want) {
		t.Errorf("WithNamespace(ns-a): lister holds %v, want %v", got, want)
	}
}

func testTweak(t *testing.T, r resource) {
	client := r.seed(t)
	var mu sync.Mutex
	var seen []string
	record := func(verb string, a clienttesting.Action) {
		mu.Lock()
		defer mu.Unlock()
		var sel string
		switch a := a.(type) {
		case clienttesting.ListAction:
			sel = a.GetListRestrictions().Labels.String()
		case clienttesting.WatchAction:
			sel = a.GetWatchRestrictions().Labels.String()
		}
		seen = append(seen, verb+" "+sel)
	}
	client.PrependReactor("list", r.gvr.Resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		record("list", a)
		return false, nil, nil
	})
	client.PrependWatchReactor(r.gvr.Resource, func(a clienttesting.Action) (bool, watch.Interface, error) {
		record("watch", a)
		return false, nil, nil
	})

	ctx, cancel := context.WithCancel(syncCtx(t))
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = "tier=front" }
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(tweak))
	defer factory.Shutdown()
	defer cancel()
	a := r.ours(factory)
	factory.StartWithContext(ctx)
	mustSync(t, ctx, factory)
	// The watch starts after the initial list; Settle waits for it.
	settle(t, ctx, factory)
	mu.Lock()
	got := slices.Clone(seen)
	mu.Unlock()
	// Check the length first: a missing request must fail the test, not
	// panic it (a slice past len would).
	if want := []string{"list tier=front", "watch tier=front"}; len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Errorf("recorded requests %v, want first a list and then a watch with tier=front", got)
	}
	objs, err := a.list()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keys(t, objs), []string{key(r, "ns-a", "a")}; !slices.Equal(got, want) {
		t.Errorf("tweaked lister holds %v, want %v", got, want)
	}
}
