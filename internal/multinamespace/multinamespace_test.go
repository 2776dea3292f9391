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
	"context"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

var allNamespaces = []string{"a", "b", "c"}

func inAB(ns string) bool { return ns == "a" || ns == "b" }

func keyRV(obj interface{}) string {
	m, err := metaOf(obj)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return m.GetNamespace() + "/" + m.GetName() + "@" + m.GetResourceVersion()
}

func podKeys(pods []*corev1.Pod, keep func(string) bool) []string {
	out := []string{}
	for _, p := range pods {
		if keep(p.Namespace) {
			out = append(out, keyRV(p))
		}
	}
	slices.Sort(out)
	return out
}

func objKeys(objs []interface{}, keep func(string) bool) []string {
	out := []string{}
	for _, o := range objs {
		m, _ := metaOf(o)
		if m == nil || keep(m.GetNamespace()) {
			out = append(out, keyRV(o))
		}
	}
	slices.Sort(out)
	return out
}

func all(string) bool { return true }

// compareViews returns "" if every lister and indexer read on got equals
// the same read on want (a cluster-wide informer) restricted to
// namespaces a and b, and the first difference otherwise.
func compareViews(got, want cache.Indexer) string {
	var diffs []string
	check := func(what string, g, w any) {
		if !reflect.DeepEqual(g, w) {
			diffs = append(diffs, fmt.Sprintf("%s: got %v, want %v", what, g, w))
		}
	}
	gl, wl := corelisters.NewPodLister(got), corelisters.NewPodLister(want)
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	for _, sel := range []labels.Selector{labels.Everything(), web} {
		g, gerr := gl.List(sel)
		w, werr := wl.List(sel)
		check("List("+sel.String()+") error", gerr, werr)
		check("List("+sel.String()+")", podKeys(g, all), podKeys(w, inAB))
	}
	for _, ns := range allNamespaces {
		g, gerr := gl.Pods(ns).List(labels.Everything())
		w, werr := wl.Pods(ns).List(labels.Everything())
		check("Pods("+ns+").List error", gerr, werr)
		check("Pods("+ns+").List", podKeys(g, all), podKeys(w, inAB))

		gi, gerr := got.ByIndex(cache.NamespaceIndex, ns)
		wi, werr := want.ByIndex(cache.NamespaceIndex, ns)
		check("ByIndex(namespace, "+ns+") error", gerr, werr)
		check("ByIndex(namespace, "+ns+")", objKeys(gi, all), objKeys(wi, inAB))
	}
	for _, app := range []string{"web", "db", "none"} {
		gi, gerr := got.ByIndex(appIndex, app)
		wi, werr := want.ByIndex(appIndex, app)
		check("ByIndex(app, "+app+") error", gerr, werr)
		check("ByIndex(app, "+app+")", objKeys(gi, all), objKeys(wi, inAB))

		gk, _ := got.IndexKeys(appIndex, app)
		wk, _ := want.IndexKeys(appIndex, app)
		wantKeys := []string{}
		for _, k := range wk {
			if inAB(namespaceOfKey(k)) {
				wantKeys = append(wantKeys, k)
			}
		}
		check("IndexKeys(app, "+app+")", gk, wantKeys)
	}
	wantValues := []string{}
	for _, o := range want.List() {
		m, _ := metaOf(o)
		if v, ok := m.GetLabels()["app"]; ok && inAB(m.GetNamespace()) {
			wantValues = append(wantValues, v)
		}
	}
	slices.Sort(wantValues)
	wantValues = slices.Compact(wantValues)
	gotValues := got.ListIndexFuncValues(appIndex)
	slices.Sort(gotValues)
	check("ListIndexFuncValues(app)", append([]string{}, gotValues...), wantValues)

	// Get of every object the cluster-wide informer has, through the
	// typed and the generic lister.
	gg := cache.NewGenericLister(got, corev1.Resource("pods"))
	wg := cache.NewGenericLister(want, corev1.Resource("pods"))
	for _, o := range want.List() {
		p := o.(*corev1.Pod)
		g, gerr := gl.Pods(p.Namespace).Get(p.Name)
		if inAB(p.Namespace) {
			if gerr != nil || keyRV(g) != keyRV(p) {
				diffs = append(diffs, fmt.Sprintf("Pods(%s).Get(%s): got %v, %v; want %s", p.Namespace, p.Name, g, gerr, keyRV(p)))
			}
		} else if !apierrors.IsNotFound(gerr) {
			diffs = append(diffs, fmt.Sprintf("Pods(%s).Get(%s): got %v, want NotFound", p.Namespace, p.Name, gerr))
		}
		gObj, gerr := gg.ByNamespace(p.Namespace).Get(p.Name)
		wo, _ := wg.ByNamespace(p.Namespace).Get(p.Name)
		if inAB(p.Namespace) {
			if gerr != nil || keyRV(gObj) != keyRV(wo) {
				diffs = append(diffs, fmt.Sprintf("generic Get(%s/%s): got %v, want %s", p.Namespace, p.Name, gerr, keyRV(wo)))
			}
		} else if !apierrors.IsNotFound(gerr) {
			diffs = append(diffs, fmt.Sprintf("generic Get(%s/%s): got %v, want NotFound", p.Namespace, p.Name, gerr))
		}
	}
	gList, _ := gg.List(labels.Everything())
	wList, _ := wg.List(labels.Everything())
	gAny, wAny := []interface{}{}, []interface{}{}
	for _, o := range gList {
		gAny = append(gAny, o)
	}
	for _, o := range wList {
		wAny = append(wAny, o)
	}
	check("generic List", objKeys(gAny, all), objKeys(wAny, inAB))
	check("ListKeys", sortedCopy(got.ListKeys()), filterKeys(want.ListKeys()))
	return strings.Join(diffs, "\n")
}

func sortedCopy(s []string) []string {
	out := append([]string{}, s...)
	slices.Sort(out)
	return out
}

func filterKeys(keys []string) []string {
	out := []string{}
	for _, k := range keys {
		if inAB(namespaceOfKey(k)) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestDifferentialAgainstClusterWideInformer checks that the composite over
// namespaces a and b answers every lister and indexer read, and delivers
// the same handler events, as one cluster-wide informer filtered to a and
// b, before and after changes in all three namespaces.
func TestDifferentialAgainstClusterWideInformer(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	apps := []string{"web", "db", ""}
	for _, ns := range allNamespaces {
		for i := range 40 {
			if _, err := client.CoreV1().Pods(ns).Create(ctx, pod(ns, fmt.Sprintf("p%d", i), apps[i%3]), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	f := newFixture(client, "a", "b")
	oracle := newInformer(&source{client: client, ns: ""})
	got, want := newRecorder(), newRecorder()
	greg, err := f.inf.AddEventHandler(got)
	if err != nil {
		t.Fatal(err)
	}
	wreg, err := oracle.AddEventHandler(want)
	if err != nil {
		t.Fatal(err)
	}
	run(t, f.inf)
	run(t, oracle)
	waitSynced(t, f.inf.HasSyncedChecker(), oracle.HasSyncedChecker(), greg.HasSyncedChecker(), wreg.HasSyncedChecker())
	if !f.inf.HasSynced() || !greg.HasSynced() {
		t.Fatalf("HasSynced() = %v, registration HasSynced() = %v after the checkers are done", f.inf.HasSynced(), greg.HasSynced())
	}

	settled := func() string {
		if msg := compareViews(f.inf.GetIndexer(), oracle.GetIndexer()); msg != "" {
			return msg
		}
		g, w := got.sorted(all), want.sorted(inAB)
		if !slices.Equal(g, w) {
			return fmt.Sprintf("events differ:\n got %d: %v\nwant %d: %v", len(g), g, len(w), w)
		}
		return ""
	}
	eventually(t, "after the initial list", settled)
	if n := len(got.sorted(all)); n != 80 {
		t.Fatalf("composite handler saw %d events after the initial list, want 80 adds", n)
	}

	// Changes in every namespace: creates, label changes that move objects
	// between index values, deletes.
	for _, ns := range allNamespaces {
		pods := client.CoreV1().Pods(ns)
		if _, err := pods.Create(ctx, pod(ns, "new", "web"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p1, err := pods.Get(ctx, "p1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p1.Labels = map[string]string{"app": "web"}
		if _, err := pods.Update(ctx, p1, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pods.Delete(ctx, "p2", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "after changes", settled)
	for _, e := range got.sorted(all) {
		if strings.Contains(e, " c/") {
			t.Errorf("composite over a, b delivered %q", e)
		}
	}
	// A handler added to the running informer ends up with the current
	// objects of a and b: its events, replayed in order, add each object
	// once and never touch one it does not hold. (client-go v0.37 sends
	// exactly one add per current object; v0.38 may also pass on changes
	// still in flight when the handler was added, after an add of the
	// state before them.)
	late := newRecorder()
	lreg, err := f.inf.AddEventHandler(late)
	if err != nil {
		t.Fatal(err)
	}
	waitSynced(t, lreg.HasSyncedChecker())
	wantKeys := filterKeys(oracle.GetIndexer().ListKeys())
	slices.Sort(wantKeys)
	eventually(t, "late handler", func() string {
		view, problem := late.replay()
		if problem != "" {
			return problem
		}
		if !slices.Equal(view, wantKeys) {
			return fmt.Sprintf("late handler holds %v, want %v", view, wantKeys)
		}
		return ""
	})
	if got.overlap.Load() || late.overlap.Load() {
		t.Errorf("the composite called one handler concurrently from two namespaces")
	}
}

// TestHasSyncedWaitsForEveryNamespace holds namespace b's LIST: the
// composite, its checker and a registration must not report synced while
// a alone has.
func TestHasSyncedWaitsForEveryNamespace(t *testing.T) {
	client := fake.NewClientset(pod("a", "x", ""), pod("b", "y", ""))
	f := &fixture{sources: map[string]*source{}, subs: map[string]cache.SharedIndexInformer{}}
	for _, ns := range []string{"a", "b"} {
		f.sources[ns] = &source{client: client, ns: ns}
		f.subs[ns] = newInformer(f.sources[ns])
	}
	release := make(chan struct{})
	f.sources["b"].block = release
	f.inf = New(f.subs)
	rec := newRecorder()
	reg, err := f.inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	if f.inf.HasSynced() || reg.HasSynced() || f.inf.GetController().HasSynced() {
		t.Fatalf("synced before Run")
	}
	run(t, f.inf)
	waitSynced(t, f.subs["a"].HasSyncedChecker())
	eventually(t, "namespace a delivered", func() string {
		if rec.addsOf("a/x") != 1 {
			return "a/x not delivered"
		}
		return ""
	})
	// Namespace a is done; give the composite's helpers time to (wrongly)
	// report synced.
	time.Sleep(100 * time.Millisecond)
	if f.inf.HasSynced() || reg.HasSynced() || cache.IsDone(f.inf.HasSyncedChecker()) || cache.IsDone(reg.HasSyncedChecker()) || f.inf.GetController().HasSynced() {
		t.Fatalf("synced while namespace b has not listed: informer %v, registration %v", f.inf.HasSynced(), reg.HasSynced())
	}
	close(release)
	waitSynced(t, f.inf.HasSyncedChecker(), reg.HasSyncedChecker())
	if !f.inf.HasSynced() || !reg.HasSynced() || !f.inf.GetController().HasSynced() {
		t.Fatalf("not synced after every namespace listed")
	}
	rvs := []string{f.subs["a"].LastSyncResourceVersion(), f.subs["b"].LastSyncResourceVersion()}
	wantRV := lowestResourceVersion(2, func(i int) string { return rvs[i] })
	if got := f.inf.LastSyncResourceVersion(); got != wantRV {
		t.Errorf("LastSyncResourceVersion() = %q, want %q (lowest of %q)", got, wantRV, rvs)
	}
	if got := f.inf.GetController().LastSyncResourceVersion(); got != wantRV {
		t.Errorf("GetController().LastSyncResourceVersion() = %q, want %q", got, wantRV)
	}
	if name := f.inf.HasSyncedChecker().Name(); !strings.Contains(name, "a,b") {
		t.Errorf("checker name %q does not name the namespaces", name)
	}
}

// TestRemoveEventHandler removes one of two handlers; after
// cache.ShutDownEventHandler returns, it must get nothing more.
func TestRemoveEventHandler(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(pod("a", "x", ""), pod("b", "y", ""))
	f := newFixture(client, "a", "b")
	kept, removed := newRecorder(), newRecorder()
	kreg, err := f.inf.AddEventHandler(kept)
	if err != nil {
		t.Fatal(err)
	}
	rreg, err := f.inf.AddEventHandler(removed)
	if err != nil {
		t.Fatal(err)
	}
	run(t, f.inf)
	waitSynced(t, kreg.HasSyncedChecker(), rreg.HasSyncedChecker())
	shutdown := make(chan error, 1)
	go func() { shutdown <- cache.ShutDownEventHandler(f.inf, rreg) }()
	select {
	case err := <-shutdown:
		if err != nil {
			t.Fatalf("ShutDownEventHandler: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("ShutDownEventHandler did not return: a namespace still delivers to the removed handler")
	}
	if err := f.inf.RemoveEventHandler(rreg); err != nil {
		t.Fatalf("second RemoveEventHandler: %v, want nil (idempotent)", err)
	}
	before := removed.count()
	for _, ns := range []string{"a", "b"} {
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod(ns, "late", ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "kept handler sees the new pods", func() string {
		if kept.addsOf("a/late") != 1 || kept.addsOf("b/late") != 1 {
			return fmt.Sprintf("adds a/late=%d b/late=%d", kept.addsOf("a/late"), kept.addsOf("b/late"))
		}
		return ""
	})
	if n := removed.count(); n != before || before != 2 {
		t.Fatalf("removed handler saw %d events (%d at removal), want 2 and none after removal", n, before)
	}

	other := New(map[string]cache.SharedIndexInformer{"a": newInformer(&source{client: client, ns: "a"})})
	if err := f.inf.RemoveEventHandler(nil); err == nil {
		t.Errorf("RemoveEventHandler(nil) = nil, want an error")
	}
	oreg, err := other.AddEventHandler(newRecorder())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.inf.RemoveEventHandler(oreg); err == nil {
		t.Errorf("RemoveEventHandler of another informer's registration = nil, want an error")
	}
}

// TestRelistOfOneNamespace expires namespace a's watch (410) and keeps its
// relist failing for a while: namespace b keeps delivering meanwhile, and
// every object of both is added exactly once; b is not relisted and its
// objects get no update.
func TestRelistOfOneNamespace(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	for _, ns := range []string{"a", "b"} {
		for i := range 10 {
			if _, err := client.CoreV1().Pods(ns).Create(ctx, pod(ns, fmt.Sprintf("p%d", i), ""), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	f := newFixture(client, "a", "b")
	var watchErrors atomic.Int32
	if err := f.inf.SetWatchErrorHandler(func(_ *cache.Reflector, _ error) { watchErrors.Add(1) }); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	reg, err := f.inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	run(t, f.inf)
	waitSynced(t, reg.HasSyncedChecker())

	f.sources["a"].failList.Store(true)
	f.sources["a"].expire(t)
	eventually(t, "namespace a tries to relist", func() string {
		if n := f.sources["a"].lists.Load(); n < 2 {
			return fmt.Sprintf("%d lists of a", n)
		}
		return ""
	})
	// While a is down, b delivers.
	if _, err := client.CoreV1().Pods("b").Create(ctx, pod("b", "during", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b delivers while a is down", func() string {
		if rec.addsOf("b/during") != 1 {
			return "b/during not delivered"
		}
		return ""
	})
	// Changes in a during its outage must arrive after it recovers.
	if _, err := client.CoreV1().Pods("a").Create(ctx, pod("a", "during", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Pods("a").Delete(ctx, "p0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sources["a"].failList.Store(false)
	eventually(t, "a recovers", func() string {
		if rec.addsOf("a/during") != 1 {
			return "a/during not delivered"
		}
		if _, ok, _ := f.inf.GetIndexer().GetByKey("a/p0"); ok {
			return "a/p0 still cached"
		}
		return ""
	})

	for _, ns := range []string{"a", "b"} {
		for i := range 10 {
			key := fmt.Sprintf("%s/p%d", ns, i)
			if n := rec.addsOf(key); n != 1 {
				t.Errorf("%s added %d times, want 1", key, n)
			}
		}
		if n := rec.addsOf(ns + "/during"); n != 1 {
			t.Errorf("%s/during added %d times, want 1", ns, n)
		}
	}
	for _, e := range rec.sorted(func(ns string) bool { return ns == "b" }) {
		if !strings.HasPrefix(e, "add ") {
			t.Errorf("namespace b got %q; a relist of a must not touch b", e)
		}
	}
	if n := f.sources["b"].lists.Load(); n != 1 {
		t.Errorf("namespace b listed %d times, want 1", n)
	}
	if watchErrors.Load() == 0 {
		t.Errorf("the watch error handler was not called for a's 410")
	}
	if got := len(f.inf.GetIndexer().List()); got != 21 {
		t.Errorf("cache holds %d pods, want 21 (a: 10 - p0 + during, b: 10 + during)", got)
	}
}

// TestRunEndsEveryGoroutine runs composites (one that syncs, one whose
// namespace never lists) with handlers and waiters, cancels them, and
// checks that Run returns and the goroutine count settles back.
func TestRunEndsEveryGoroutine(t *testing.T) {
	client := fake.NewClientset(pod("a", "x", ""), pod("b", "y", ""))
	// Warm up anything the fake clientset starts lazily.
	warm := newFixture(client, "a")
	ctx0, cancel0 := context.WithCancel(context.Background())
	done0 := make(chan struct{})
	go func() { defer close(done0); warm.inf.RunWithContext(ctx0) }()
	waitSynced(t, warm.inf.HasSyncedChecker())
	cancel0()
	<-done0
	settle(t, runtime.NumGoroutine())
	before := runtime.NumGoroutine()

	for _, neverSyncs := range []bool{false, true} {
		f := newFixture(client, "a", "b")
		if neverSyncs {
			f.sources["b"].failList.Store(true)
		}
		reg, err := f.inf.AddEventHandler(newRecorder())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); f.inf.Run(ctx.Done()) }()
		late, err := f.inf.AddEventHandler(newRecorder())
		if err != nil {
			t.Fatal(err)
		}
		_ = late.HasSyncedChecker().Done()
		if neverSyncs {
			eventually(t, "Run started", func() string {
				if f.sources["b"].lists.Load() == 0 {
					return "b not listed yet"
				}
				return ""
			})
		} else {
			waitSynced(t, f.inf.HasSyncedChecker(), reg.HasSyncedChecker(), late.HasSyncedChecker())
		}
		f.inf.RunWithContext(ctx) // a second Run returns at once
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("Run did not return after cancel (neverSyncs=%v)", neverSyncs)
		}
		if !f.inf.IsStopped() {
			t.Errorf("IsStopped() = false after Run returned")
		}
		if _, err := f.inf.AddEventHandler(newRecorder()); err == nil {
			t.Errorf("AddEventHandler after stop = nil error, want one")
		}
		if after := settle(t, before); after > before {
			t.Errorf("neverSyncs=%v: %d goroutines after Run returned, %d before", neverSyncs, after, before)
		}
	}
}

// settle waits up to 5s for the goroutine count to drop to want and
// returns the last count.
func settle(t *testing.T, want int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConfigureAllOrNothing checks SetTransform, the watch error handlers
// and AddIndexers reach every namespace, and that after Run the first two
// fail as on client-go.
func TestConfigureAllOrNothing(t *testing.T) {
	client := fake.NewClientset(pod("a", "x", "web"), pod("b", "y", "web"))
	f := newFixture(client, "a", "b")
	if err := f.inf.SetTransform(func(obj interface{}) (interface{}, error) {
		p := obj.(*corev1.Pod)
		p.Annotations = map[string]string{"transformed": "yes"}
		return p, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.inf.SetWatchErrorHandlerWithContext(func(context.Context, *cache.Reflector, error) {}); err != nil {
		t.Fatal(err)
	}
	run(t, f.inf)
	waitSynced(t, f.inf.HasSyncedChecker())
	for _, o := range f.inf.GetStore().List() {
		if o.(*corev1.Pod).Annotations["transformed"] != "yes" {
			t.Errorf("%s was not transformed", keyRV(o))
		}
	}
	if err := f.inf.SetTransform(nil); err == nil {
		t.Errorf("SetTransform after Run = nil, want an error")
	}
	if err := f.inf.SetWatchErrorHandler(func(*cache.Reflector, error) {}); err == nil {
		t.Errorf("SetWatchErrorHandler after Run = nil, want an error")
	}
	byName := cache.Indexers{"byName": func(obj interface{}) ([]string, error) {
		return []string{obj.(*corev1.Pod).Name}, nil
	}}
	if err := f.inf.AddIndexers(byName); err != nil {
		t.Fatalf("AddIndexers after Run: %v", err)
	}
	for ns, name := range map[string]string{"a": "x", "b": "y"} {
		objs, err := f.inf.GetIndexer().ByIndex("byName", name)
		if err != nil || len(objs) != 1 || objs[0].(*corev1.Pod).Namespace != ns {
			t.Errorf("ByIndex(byName, %s) = %v, %v; want the pod of %s", name, objs, err, ns)
		}
		if _, ok := f.subs[ns].GetIndexer().GetIndexers()["byName"]; !ok {
			t.Errorf("namespace %s has no byName index", ns)
		}
	}
	if err := f.inf.AddIndexers(byName); err == nil {
		t.Errorf("AddIndexers of an existing index = nil, want a conflict")
	}
}

// TestGetIndexerDoesNotAllocate guards the listers' hot path.
func TestGetIndexerDoesNotAllocate(t *testing.T) {
	client := fake.NewClientset()
	f := newFixture(client, "a", "b")
	var sink any
	if n := testing.AllocsPerRun(100, func() {
		sink = f.inf.GetIndexer()
		sink = f.inf.GetStore()
		sink = f.inf.GetController()
		sink = f.inf.HasSyncedChecker()
	}); n != 0 {
		t.Errorf("GetIndexer/GetStore/GetController/HasSyncedChecker allocate %v times per call", n)
	}
	_ = sink
}

func TestLowestResourceVersion(t *testing.T) {
	for _, tc := range []struct {
		rvs  []string
		want string
	}{
		{nil, ""},
		{[]string{"7"}, "7"},
		{[]string{"12", "9", "100"}, "9"},
		{[]string{"12", ""}, ""},
		{[]string{"12", "opaque"}, ""},
	} {
		got := lowestResourceVersion(len(tc.rvs), func(i int) string { return tc.rvs[i] })
		if got != tc.want {
			t.Errorf("lowestResourceVersion(%q) = %q, want %q", tc.rvs, got, tc.want)
		}
	}
}

// selectorRecorder is a sub-informer with SetShardSelector, as client-go's
// from v0.38 on; it records what it was given.
type selectorRecorder struct {
	cache.SharedIndexInformer
	got sharding.Selector
}

func (r *selectorRecorder) SetShardSelector(sel sharding.Selector) error {
	r.got = sel
	return nil
}

// TestSetShardSelector: the composite passes a shard selector to every
// namespace's informer before Run, refuses it afterwards, and refuses it,
// changing nothing, when a namespace's informer cannot take one.
func TestSetShardSelector(t *testing.T) {
	client := fake.NewClientset()
	sel := sharding.NewSelector(sharding.ShardRangeRequirement{Key: "object.metadata.uid", Start: "0x0000000000000000", End: "0x8000000000000000"})

	subs := map[string]*selectorRecorder{}
	plain := map[string]cache.SharedIndexInformer{}
	for _, ns := range []string{"a", "b"} {
		subs[ns] = &selectorRecorder{SharedIndexInformer: newInformer(&source{client: client, ns: ns})}
		plain[ns] = subs[ns]
	}
	inf := New(plain)
	if err := inf.SetShardSelector(sel); err != nil {
		t.Fatalf("SetShardSelector before Run: %v", err)
	}
	for ns, r := range subs {
		if r.got == nil || r.got.String() != sel.String() {
			t.Errorf("namespace %s got %v, want %s", ns, r.got, sel)
		}
	}
	run(t, inf)
	waitSynced(t, inf.HasSyncedChecker())
	if err := inf.SetShardSelector(nil); err == nil || !strings.Contains(err.Error(), "already started") {
		t.Errorf("SetShardSelector after Run = %v, want an error saying it has started", err)
	}
	for ns, r := range subs {
		if r.got == nil {
			t.Errorf("namespace %s lost its selector to a refused call", ns)
		}
	}

	// client-go v0.37's informers have no SetShardSelector.
	mixed := map[string]cache.SharedIndexInformer{
		"a": &selectorRecorder{SharedIndexInformer: newInformer(&source{client: client, ns: "a"})},
		"b": newInformer(&source{client: client, ns: "b"}),
	}
	if _, ok := mixed["b"].(interface {
		SetShardSelector(sharding.Selector) error
	}); ok {
		return // client-go v0.38 or later: every informer can take one
	}
	err := New(mixed).SetShardSelector(sel)
	if err == nil || !strings.Contains(err.Error(), `namespace "b"`) {
		t.Errorf("SetShardSelector with a namespace that cannot take it = %v, want an error naming namespace b", err)
	}
	if mixed["a"].(*selectorRecorder).got != nil {
		t.Errorf("namespace a got the selector although b refused it (all or nothing)")
	}
}

// replay applies the recorded events in order and returns the keys held at
// the end, sorted, or what was inconsistent: an add of a key already held,
// or an update or delete of one not held.
func (r *recorder) replay() ([]string, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	held := map[string]bool{}
	for i, e := range r.events {
		kind, key, _ := cutSpace(e)
		switch {
		case kind == "add" && held[key]:
			return nil, fmt.Sprintf("event %d: %q of an object the handler already holds", i, e)
		case kind != "add" && !held[key]:
			return nil, fmt.Sprintf("event %d: %q of an object the handler does not hold", i, e)
		}
		held[key] = kind != "delete"
		if !held[key] {
			delete(held, key)
		}
	}
	keys := slices.Sorted(maps.Keys(held))
	return keys, ""
}
