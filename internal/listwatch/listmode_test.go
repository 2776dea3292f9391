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

package listwatch

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/watchlist"
)

var pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// fakeRequests records the options of every request and answers lists
// with pages: a copy of page[i] for the request with continue "i" (""
// for 0), each but the last naming the next.
type fakeRequests struct {
	mu       sync.Mutex
	lists    []metav1.ListOptions
	watches  []metav1.ListOptions
	pages    [][]corev1.Pod
	watchErr error
}

func (f *fakeRequests) requests(string) Requests {
	return Requests{
		List: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.lists = append(f.lists, opts)
			i := 0
			if opts.Continue != "" {
				i = int(opts.Continue[0] - '0')
			}
			list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
			for _, p := range f.pages[i] {
				list.Items = append(list.Items, *p.DeepCopy())
			}
			if i+1 < len(f.pages) {
				list.Continue = string(rune('0' + i + 1))
			}
			return list, nil
		},
		Watch: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.watches = append(f.watches, opts)
			if f.watchErr != nil {
				return nil, f.watchErr
			}
			return watch.NewEmptyWatch(), nil
		},
	}
}

func pod(ns, name, rv string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), ResourceVersion: rv,
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "test"}}}}
}

func TestConsistentListAsksForTheCurrentState(t *testing.T) {
	for _, tc := range []struct {
		mode       Mode
		rv, wantRV string
		limit      int64
		wantLimit  int64
		paged      bool
	}{
		{ModeConsistentList, "0", "", 0, consistentPageSize, false},
		{ModeConsistentList, "0", "", 7, 7, false},        // the caller's limit stays
		{ModeConsistentList, "42", "42", 500, 500, false}, // a relist from a known state
		{ModeList, "0", "0", 500, 500, false},
		{ModeStream, "0", "0", 500, 500, false},
		{ModeAuto, "0", "0", 500, 500, false},
		{ModeAuto, "0", "", 500, 500, true},              // a lean cache's fallback
		{ModeAuto, "0", "", 0, consistentPageSize, true}, // paged even without a limit
		{ModeAuto, "42", "42", 500, 500, true},           // a relist from a known state
		{ModeList, "0", "0", 500, 500, true},             // an explicit LIST mode wins
		{ModeStream, "0", "0", 500, 500, true},           // so does Stream's documented fallback
	} {
		f := &fakeRequests{pages: [][]corev1.Pod{{pod("a", "p", "1")}}}
		var notices []string
		lw := New(Config{
			Options: Options{
				Resource:      pods,
				Requests:      f.requests,
				Mode:          tc.mode,
				PagedFallback: tc.paged,
				Client:        struct{}{},
			},
			Notice: func(msg string) { notices = append(notices, msg) },
		})
		if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: tc.rv, Limit: tc.limit}); err != nil {
			t.Fatal(err)
		}
		if got := f.lists[0]; got.ResourceVersion != tc.wantRV || got.Limit != tc.wantLimit {
			t.Errorf("%v (paged fallback %v), list with resourceVersion %q limit %d: sent %q and %d, want %q and %d", tc.mode, tc.paged, tc.rv, tc.limit, got.ResourceVersion, got.Limit, tc.wantRV, tc.wantLimit)
		}
		if paged := tc.mode == ModeAuto && tc.paged; paged != (len(notices) == 1 && strings.Contains(notices[0], "lists in pages of 500")) {
			t.Errorf("%v (paged fallback %v): notices %q", tc.mode, tc.paged, notices)
		}
		if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: tc.rv, Limit: tc.limit}); err != nil {
			t.Fatal(err)
		}
		if len(notices) > 1 {
			t.Errorf("%v: notices %q, want at most one", tc.mode, notices)
		}
	}
	// A continued page is left alone: the server refuses a resource
	// version with a continue token.
	f := &fakeRequests{pages: [][]corev1.Pod{{pod("a", "p", "1")}, {pod("a", "q", "1")}}}
	lw := New(Config{Options: Options{Resource: pods, Requests: f.requests, Mode: ModeConsistentList}})
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{Continue: "1", Limit: 500}); err != nil {
		t.Fatal(err)
	}
	if got := f.lists[0]; got.ResourceVersion != "" || got.Continue != "1" || got.Limit != 500 {
		t.Errorf("continued page sent as %+v", got)
	}
}

func TestSemantics(t *testing.T) {
	type client struct{}
	for mode, noStream := range map[Mode]bool{ModeAuto: false, ModeStream: false, ModeList: true, ModeConsistentList: true} {
		if got := watchlist.DoesClientNotSupportWatchListSemantics(Semantics(client{}, mode)); got != noStream {
			t.Errorf("%v: lacks watch-list semantics = %v, want %v", mode, got, noStream)
		}
	}
	// A client that lacks them keeps lacking them in the stream modes.
	if !watchlist.DoesClientNotSupportWatchListSemantics(Semantics(noStream{}, ModeStream)) {
		t.Error("a client without watch-list semantics gained them")
	}
	for m, want := range map[Mode]string{ModeAuto: "Auto", ModeStream: "Stream", ModeList: "List", ModeConsistentList: "ConsistentList", Mode(9): "Mode(9)"} {
		if m.String() != want {
			t.Errorf("Mode(%d).String() = %q, want %q", int(m), m.String(), want)
		}
	}
}

func TestStreamFallbackNotice(t *testing.T) {
	if !StreamGate() {
		t.Skip("KUBE_FEATURE_WatchListClient is off in this environment")
	}
	for _, tc := range []struct {
		name     string
		mode     Mode
		client   any
		watchErr error
		want     string // "" for no notice
	}{
		{"stream, server refuses", ModeStream, nil, errors.New("sendInitialEvents is forbidden"), "list mode Stream: no watch-list stream (the server refused it: sendInitialEvents is forbidden); listing instead, as client-go does"},
		{"stream, fake client", ModeStream, noStream{}, nil, "list mode Stream: no watch-list stream (its client does not support watch-list semantics); listing instead, as client-go does"},
		{"auto, server refuses", ModeAuto, nil, errors.New("no"), "list mode Auto: no watch-list stream (the server refused it: no); listing instead, as client-go does"},
		{"auto, fake client", ModeAuto, noStream{}, nil, ""},
		{"list", ModeList, nil, nil, ""},
		{"consistent list", ModeConsistentList, nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeRequests{pages: [][]corev1.Pod{{pod("a", "p", "1")}}, watchErr: tc.watchErr}
			var notices []string
			lw := New(Config{Options: Options{Resource: pods, Requests: f.requests, Mode: tc.mode, Client: tc.client}, Notice: func(m string) { notices = append(notices, m) }})
			ctx := context.Background()
			yes := true
			if tc.watchErr != nil {
				if _, err := lw.WatchWithContext(ctx, metav1.ListOptions{SendInitialEvents: &yes, AllowWatchBookmarks: true}); err == nil {
					t.Fatal("the watch did not fail")
				}
			}
			// The reflector lists: twice, as after a failed watch.
			for range 2 {
				if _, err := lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 500}); err != nil {
					t.Fatal(err)
				}
			}
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			if strings.Join(notices, "\n") != strings.Join(want, "\n") {
				t.Errorf("notices %q, want %q", notices, want)
			}
		})
	}
}

// counting is a transform that is not idempotent: it counts its runs in an
// annotation, and drops managedFields.
func counting(obj any) (any, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	a := maps.Clone(m.GetAnnotations())
	if a == nil {
		a = map[string]string{}
	}
	a["runs"] += "x"
	m.SetAnnotations(a)
	m.SetManagedFields(nil)
	return obj, nil
}

func TestPretransformTransformsEachObjectOnce(t *testing.T) {
	f := &fakeRequests{pages: [][]corev1.Pod{{pod("a", "p1", "1"), pod("a", "p2", "1")}, {pod("b", "p3", "2")}}}
	pre := NewPretransform(counting)
	lw := New(Config{Options: Options{Resource: pods, Requests: f.requests, Mode: ModeConsistentList, Pretransform: pre}})
	ctx := context.Background()
	var got []runtime.Object
	for _, cont := range []string{"", "1"} {
		page, err := lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "0", Continue: cont})
		if err != nil {
			t.Fatal(err)
		}
		for i := range page.(*corev1.PodList).Items {
			p := &page.(*corev1.PodList).Items[i]
			if p.Annotations["runs"] != "x" || p.ManagedFields != nil {
				t.Errorf("%s/%s in the page: runs %q, managedFields %v; want transformed once", p.Namespace, p.Name, p.Annotations["runs"], p.ManagedFields)
			}
			// The reflector hands shallow copies to the informer.
			c := *p
			got = append(got, &c)
		}
	}
	// The informer's transform passes them on as they are.
	for _, o := range got {
		out, err := pre.Transform(o)
		if err != nil {
			t.Fatal(err)
		}
		if p := out.(*corev1.Pod); p.Annotations["runs"] != "x" {
			t.Errorf("%s: runs %q after the informer's transform, want x", p.Name, p.Annotations["runs"])
		}
	}
	// A later event of the same object (a new resource version), or the
	// same object seen a second time, is transformed as usual.
	later := pod("a", "p1", "5")
	out, _ := pre.Transform(&later)
	if out.(*corev1.Pod).Annotations["runs"] != "x" {
		t.Error("a watch event was not transformed")
	}
	out, _ = pre.Transform(got[0])
	if out.(*corev1.Pod).Annotations["runs"] != "xx" {
		t.Error("an object seen twice by the informer was passed on untransformed the second time")
	}
}

func TestPretransformForgetsAnAbandonedList(t *testing.T) {
	f := &fakeRequests{pages: [][]corev1.Pod{{pod("a", "p1", "1")}, {pod("a", "p2", "1")}}}
	pre := NewPretransform(counting)
	lw := New(Config{Options: Options{Resource: pods, Requests: f.requests, Pretransform: pre}, Namespace: "a"})
	ctx := context.Background()
	// The first page of a list that then fails...
	if _, err := lw.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	// ...and the list again, whose objects are new ones with the same
	// keys: the informer sees these, transformed once.
	page, err := lw.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := page.(*corev1.PodList).Items[0]
	out, _ := pre.Transform(&p)
	if got := out.(*corev1.Pod).Annotations["runs"]; got != "x" {
		t.Errorf("runs %q, want x", got)
	}
	pre.mu.Lock()
	defer pre.mu.Unlock()
	if len(pre.done) != 0 {
		t.Errorf("%d marks left, want 0", len(pre.done))
	}
}

func TestPretransformResults(t *testing.T) {
	ctx := context.Background()
	newCopy := func(obj any) (any, error) {
		p := obj.(*corev1.Pod).DeepCopy()
		p.Labels = map[string]string{"copied": "yes"}
		return p, nil
	}
	other := func(any) (any, error) { return "not a pod", nil }
	failing := func(any) (any, error) { return nil, errors.New("no") }
	for _, tc := range []struct {
		name       string
		fn         func(any) (any, error)
		wantLabel  string
		wantMarked bool
	}{
		{"a new object of the item type is stored in the page", newCopy, "yes", true},
		{"another type leaves the item for the informer", other, "", false},
		{"an error leaves the item for the informer", failing, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeRequests{pages: [][]corev1.Pod{{pod("a", "p", "1")}}}
			pre := NewPretransform(tc.fn)
			lw := New(Config{Options: Options{Resource: pods, Requests: f.requests, Pretransform: pre}})
			page, err := lw.ListWithContext(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := page.(*corev1.PodList).Items[0].Labels["copied"]; got != tc.wantLabel {
				t.Errorf("label %q, want %q", got, tc.wantLabel)
			}
			if got := len(pre.done) == 1; got != tc.wantMarked {
				t.Errorf("marked %v, want %v", got, tc.wantMarked)
			}
		})
	}
}

func TestPretransformUnstructured(t *testing.T) {
	list := &unstructured.UnstructuredList{}
	for _, name := range []string{"a", "b"} {
		u := unstructured.Unstructured{}
		u.SetNamespace("ns")
		u.SetName(name)
		u.SetResourceVersion("3")
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "m"}})
		list.Items = append(list.Items, u)
	}
	pre := NewPretransform(counting)
	if err := pre.page("", true, list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		u := &list.Items[i]
		if u.GetAnnotations()["runs"] != "x" || u.GetManagedFields() != nil {
			t.Errorf("%s: runs %q, managedFields %v", u.GetName(), u.GetAnnotations()["runs"], u.GetManagedFields())
		}
		out, _ := pre.Transform(u.DeepCopy())
		if got := out.(*unstructured.Unstructured).GetAnnotations()["runs"]; got != "x" {
			t.Errorf("%s: runs %q after the informer's transform, want x", u.GetName(), got)
		}
	}
}

func TestPretransformPartialObjectMetadata(t *testing.T) {
	list := &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "1"}}}}
	pre := NewPretransform(counting)
	if err := pre.page("", true, list); err != nil {
		t.Fatal(err)
	}
	if list.Items[0].Annotations["runs"] != "x" {
		t.Errorf("runs %q, want x", list.Items[0].Annotations["runs"])
	}
}

// TestPretransformStream follows client-go's reflector through a watch-list
// stream: each initial event is transformed into a temporary store, whose
// very objects Replace hands to the informer's transform again. Each is
// transformed once; events after the stream as usual.
func TestPretransformStream(t *testing.T) {
	for _, tc := range []struct {
		name       string
		namespaces []string // one stream each; "" for all namespaces
	}{
		{"all namespaces", []string{""}},
		{"two namespaces", []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeRequests{pages: [][]corev1.Pod{{}}}
			pre := NewPretransform(counting)
			yes := true
			ctx := context.Background()
			var temporary []any
			for _, ns := range tc.namespaces {
				lw := New(Config{Options: Options{Resource: pods, Requests: f.requests, Pretransform: pre}, Namespace: ns})
				w, err := lw.WatchWithContext(ctx, metav1.ListOptions{SendInitialEvents: &yes})
				if err != nil {
					t.Fatal(err)
				}
				w.Stop()
			}
			// The streams' initial events, into the temporary stores.
			for _, ns := range []string{"a", "b"} {
				for _, name := range []string{"p", "q"} {
					p := pod(ns, name, "1")
					out, err := pre.Transform(&p)
					if err != nil {
						t.Fatal(err)
					}
					temporary = append(temporary, out)
				}
			}
			// Replace, then a watch event of an object of the stream.
			for _, o := range temporary {
				out, _ := pre.Transform(o)
				if got := out.(*corev1.Pod).Annotations["runs"]; got != "x" {
					t.Errorf("%s/%s: runs %q after Replace, want x", out.(*corev1.Pod).Namespace, out.(*corev1.Pod).Name, got)
				}
			}
			later := pod("a", "p", "2")
			out, _ := pre.Transform(&later)
			if got := out.(*corev1.Pod).Annotations["runs"]; got != "x" {
				t.Errorf("a watch event after the stream: runs %q, want x", got)
			}
			// The same object again (a later Replace passing cached
			// objects, which client-go's informers never do): transformed.
			out, _ = pre.Transform(temporary[0])
			if got := out.(*corev1.Pod).Annotations["runs"]; got != "xx" {
				t.Errorf("an object seen twice after its stream: runs %q, want xx", got)
			}
			pre.mu.Lock()
			defer pre.mu.Unlock()
			if len(pre.streamed) != 0 || len(pre.streaming) != 0 {
				t.Errorf("left %d streamed objects, %d streaming sources; want none", len(pre.streamed), len(pre.streaming))
			}
		})
	}
}

func TestPretransformStreamRestart(t *testing.T) {
	f := &fakeRequests{pages: [][]corev1.Pod{{}}}
	pre := NewPretransform(counting)
	lw := New(Config{Options: Options{Resource: pods, Requests: f.requests, Pretransform: pre}})
	yes := true
	ctx := context.Background()
	if _, err := lw.WatchWithContext(ctx, metav1.ListOptions{SendInitialEvents: &yes}); err != nil {
		t.Fatal(err)
	}
	p := pod("a", "p", "1")
	if _, err := pre.Transform(&p); err != nil {
		t.Fatal(err)
	}
	// The stream fails and starts again: what the first one made never
	// reaches Replace, and is forgotten.
	if _, err := lw.WatchWithContext(ctx, metav1.ListOptions{SendInitialEvents: &yes}); err != nil {
		t.Fatal(err)
	}
	pre.mu.Lock()
	n := len(pre.streamed)
	pre.mu.Unlock()
	if n != 0 {
		t.Errorf("%d objects of the failed stream kept, want 0", n)
	}
	// Values that are not pointers pass through the lookups.
	if out, err := pre.Transform(cacheTombstone{m: map[string]string{}}); err != nil {
		t.Errorf("Transform(a value) = %v, %v", out, err)
	} else if _, ok := out.(cacheTombstone); !ok {
		t.Errorf("Transform(a value) = %T, want it back", out)
	}
}

// cacheTombstone is a value that is not a pointer and holds a map, so it
// is not comparable: a map lookup of it would panic.
type cacheTombstone struct{ m map[string]string }
