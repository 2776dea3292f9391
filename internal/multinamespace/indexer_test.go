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

package multinamespace

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// newComposite returns a composite over unstarted informers of the given
// namespaces, built with indexers.
func newComposite(indexers cache.Indexers, namespaces ...string) (cache.SharedIndexInformer, map[string]cache.SharedIndexInformer) {
	subs := map[string]cache.SharedIndexInformer{}
	for _, ns := range namespaces {
		subs[ns] = cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, maps.Clone(indexers))
	}
	return New(subs), subs
}

// compareIndexers returns the differences between every read of got and of
// want, a plain client-go indexer holding the same objects.
func compareIndexers(got, want cache.Indexer, probes []*corev1.Pod) []string {
	var diffs []string
	check := func(what string, g, w any) {
		if !reflect.DeepEqual(g, w) {
			diffs = append(diffs, fmt.Sprintf("%s: got %v, want %v", what, g, w))
		}
	}
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	check("List", objKeys(got.List(), all), objKeys(want.List(), all))
	check("ListKeys", sortedCopy(got.ListKeys()), sortedCopy(want.ListKeys()))
	for _, p := range probes {
		g, gok, gerr := got.Get(p)
		w, wok, werr := want.Get(p)
		check("Get("+p.Namespace+"/"+p.Name+")", fmt.Sprint(gok, gerr, keyOrNil(g)), fmt.Sprint(wok, werr, keyOrNil(w)))
		key := p.Namespace + "/" + p.Name
		g, gok, gerr = got.GetByKey(key)
		w, wok, werr = want.GetByKey(key)
		check("GetByKey("+key+")", fmt.Sprint(gok, gerr, keyOrNil(g)), fmt.Sprint(wok, werr, keyOrNil(w)))
		for _, name := range []string{cache.NamespaceIndex, appIndex, "missing"} {
			gi, gerr := got.Index(name, p)
			wi, werr := want.Index(name, p)
			check("Index("+name+", "+key+")", fmt.Sprint(objKeys(gi, all), errText(gerr)), fmt.Sprint(objKeys(wi, all), errText(werr)))
		}
		gi, gerr := got.Index(cache.NamespaceIndex, &metav1.ObjectMeta{Namespace: p.Namespace})
		wi, werr := want.Index(cache.NamespaceIndex, &metav1.ObjectMeta{Namespace: p.Namespace})
		check("Index(namespace, ObjectMeta "+p.Namespace+")", fmt.Sprint(objKeys(gi, all), errText(gerr)), fmt.Sprint(objKeys(wi, all), errText(werr)))
	}
	for _, name := range []string{cache.NamespaceIndex, appIndex, "missing"} {
		for _, value := range []string{"a", "b", "c", "web", "db", ""} {
			gi, gerr := got.ByIndex(name, value)
			wi, werr := want.ByIndex(name, value)
			check("ByIndex("+name+", "+value+")", fmt.Sprint(objKeys(gi, all), errText(gerr)), fmt.Sprint(objKeys(wi, all), errText(werr)))
			gk, gerr := got.IndexKeys(name, value)
			wk, werr := want.IndexKeys(name, value)
			check("IndexKeys("+name+", "+value+")", fmt.Sprint(gk, errText(gerr)), fmt.Sprint(wk, errText(werr)))
		}
		gv, wv := sortedCopy(got.ListIndexFuncValues(name)), sortedCopy(want.ListIndexFuncValues(name))
		check("ListIndexFuncValues("+name+")", gv, wv)
	}
	gl, wl := corelisters.NewPodLister(got), corelisters.NewPodLister(want)
	for _, ns := range allNamespaces {
		g, _ := gl.Pods(ns).List(labels.Everything())
		w, _ := wl.Pods(ns).List(labels.Everything())
		check("Pods("+ns+").List", podKeys(g, all), podKeys(w, all))
	}
	return diffs
}

func keyOrNil(obj interface{}) string {
	if obj == nil {
		return "<nil>"
	}
	return keyRV(obj)
}

// TestIndexerMatchesASingleIndexer applies the same writes to the composite
// indexer over a and b and to one client-go indexer, and compares every
// read after each step. Writes of namespace c must fail on the composite
// and change nothing.
func TestIndexerMatchesASingleIndexer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		indexers cache.Indexers
	}{
		{"namespace and app indexes", testIndexers()},
		// Without a namespace index the listers fall back to a scan;
		// the composite must fail Index the same way.
		{"no namespace index", cache.Indexers{appIndex: appIndexFunc}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inf, subs := newComposite(tc.indexers, "a", "b")
			got := inf.GetIndexer()
			want := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, tc.indexers)
			probes := []*corev1.Pod{pod("a", "x", "web"), pod("b", "x", "db"), pod("a", "y", ""), pod("c", "x", "web"), pod("b", "z", "web")}
			step := func(what string) {
				t.Helper()
				for _, d := range compareIndexers(got, want, probes) {
					t.Errorf("after %s: %s", what, d)
				}
			}
			both := func(what string, f func(cache.Indexer) error) {
				t.Helper()
				if err := f(got); err != nil {
					t.Fatalf("%s on the composite: %v", what, err)
				}
				if err := f(want); err != nil {
					t.Fatalf("%s on the single indexer: %v", what, err)
				}
				step(what)
			}
			step("nothing")
			for _, p := range probes[:3] {
				both("Add "+p.Namespace+"/"+p.Name, func(x cache.Indexer) error { return x.Add(p) })
			}
			if _, ok, _ := subs["a"].GetIndexer().GetByKey("a/x"); !ok {
				t.Errorf("Add of a/x did not reach namespace a's indexer")
			}
			if _, ok, _ := subs["b"].GetIndexer().GetByKey("a/x"); ok {
				t.Errorf("Add of a/x reached namespace b's indexer")
			}
			if err := got.Add(pod("c", "x", "web")); err == nil {
				t.Errorf("Add of c/x = nil, want an error")
			}
			if err := got.Update(pod("c", "x", "web")); err == nil {
				t.Errorf("Update of c/x = nil, want an error")
			}
			step("rejected writes of c")
			moved := pod("a", "x", "db")
			both("Update a/x", func(x cache.Indexer) error { return x.Update(moved) })
			both("Delete b/x", func(x cache.Indexer) error { return x.Delete(pod("b", "x", "")) })
			both("Delete c/x (absent)", func(x cache.Indexer) error { return x.Delete(pod("c", "x", "")) })
			both("Delete a tombstone", func(x cache.Indexer) error {
				return x.Delete(cache.DeletedFinalStateUnknown{Key: "a/y", Obj: pod("a", "y", "")})
			})
			replacement := []interface{}{pod("b", "z", "web"), pod("a", "x", "web"), pod("b", "x", "web")}
			both("Replace", func(x cache.Indexer) error { return x.Replace(replacement, "10") })
			if err := got.Replace([]interface{}{pod("a", "q", ""), pod("c", "q", "")}, "11"); err == nil {
				t.Errorf("Replace with an object of c = nil, want an error")
			}
			step("rejected Replace")
			both("Replace to empty", func(x cache.Indexer) error { return x.Replace(nil, "12") })
			both("Add after Replace", func(x cache.Indexer) error { return x.Add(pod("b", "z", "web")) })
			both("Resync", func(x cache.Indexer) error { return x.Resync() })
			got.Bookmark("15")
			want.Bookmark("15")
			if g, w := got.LastStoreSyncResourceVersion(), want.LastStoreSyncResourceVersion(); g != w {
				t.Errorf("LastStoreSyncResourceVersion after Bookmark = %q, want %q", g, w)
			}
			if g, w := slices.Sorted(mapsKeys(got.GetIndexers())), slices.Sorted(mapsKeys(want.GetIndexers())); !slices.Equal(g, w) {
				t.Errorf("GetIndexers = %v, want %v", g, w)
			}
			extra := cache.Indexers{"byName": func(obj interface{}) ([]string, error) { return []string{obj.(*corev1.Pod).Name}, nil }}
			both("AddIndexers", func(x cache.Indexer) error { return x.AddIndexers(extra) })
			for _, v := range []string{"x", "z"} {
				g, _ := got.ByIndex("byName", v)
				w, _ := want.ByIndex("byName", v)
				if !slices.Equal(objKeys(g, all), objKeys(w, all)) {
					t.Errorf("ByIndex(byName, %s) = %v, want %v", v, objKeys(g, all), objKeys(w, all))
				}
			}
		})
	}
}

func mapsKeys(m cache.Indexers) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestEmptyComposite: no namespaces is a valid, empty informer.
func TestEmptyComposite(t *testing.T) {
	inf := New(map[string]cache.SharedIndexInformer{})
	x := inf.GetIndexer()
	if len(x.List()) != 0 || len(x.ListKeys()) != 0 {
		t.Errorf("empty composite lists objects")
	}
	if _, ok, err := x.GetByKey("a/x"); ok || err != nil {
		t.Errorf("GetByKey = %v, %v", ok, err)
	}
	if _, err := x.ByIndex(cache.NamespaceIndex, "a"); err == nil {
		t.Errorf("ByIndex on an index that does not exist = nil error")
	}
	if err := x.Add(pod("a", "x", "")); err == nil {
		t.Errorf("Add to an empty composite = nil, want an error")
	}
	if inf.HasSynced() {
		t.Errorf("HasSynced before Run")
	}
	cancel := run(t, inf)
	waitSynced(t, inf.HasSyncedChecker())
	cancel()
	eventually(t, "stopped", func() string {
		if !inf.IsStopped() {
			return "not stopped"
		}
		return ""
	})
}

// TestNewRejectsSharedIndexers: client-go's AddIndexers writes into the
// map an informer was built with, so sub-informers sharing one would break
// AddIndexers; New says so at once.
func TestNewRejectsSharedIndexers(t *testing.T) {
	shared := testIndexers()
	subs := map[string]cache.SharedIndexInformer{
		"a": cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, shared),
		"b": cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Pod{}, 0, shared),
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "share one cache.Indexers map") {
			t.Errorf("New over informers sharing an Indexers map: recovered %v, want a panic naming the problem", r)
		}
	}()
	New(subs)
}
