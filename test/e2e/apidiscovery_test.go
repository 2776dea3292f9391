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

package e2e

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/test/e2e/testenv"
)

var reflectTypeUnstructured = reflect.TypeFor[*unstructured.Unstructured]()

// logLines counts the klog lines of the process by the key its classifier
// gives them ("" is not counted), while installed.
type logLines struct {
	mu    sync.Mutex
	count map[string]int
	lines []string
}

// captureLog sends klog's output to the returned counter until the test
// ends.
func captureLog(t *testing.T, classify func(line string) string) *logLines {
	l := &logLines{count: map[string]int{}}
	klog.SetLogger(funcr.New(func(prefix, args string) {
		if key := classify(prefix + " " + args); key != "" {
			l.mu.Lock()
			l.count[key]++
			l.lines = append(l.lines, key+": "+prefix+" "+args)
			l.mu.Unlock()
		}
	}, funcr.Options{}))
	t.Cleanup(klog.ClearLogger)
	return l
}

func (l *logLines) get(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count[key]
}

// TestAPIDiscovery follows a custom resource that comes and goes under a
// running informer (WithAPIDiscovery): its CRD is created after Start,
// then deleted and created again three times while a writer runs, and once
// its version is no longer served and served again. Each time the informer
// syncs within 10 s of the resource being served, and empties its cache
// with delete events within 10 s of it going; its handlers' view equals
// the server's (lost = 0, stale = 0). It lists no more than once per
// change, and logs one line per change, where client-go's informer over
// the same resource logs every retry.
func TestAPIDiscovery(t *testing.T) {
	c := setup(t)
	before := goleak.IgnoreCurrent()
	group := "discovery-" + randSuffix() + ".e2e.kubeinformers.io"
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "things"}
	dyn := dynamic.NewForConfigOrDie(c.cfg)
	t.Cleanup(func() { deleteCRD(t, c, gvr) })

	// Lines about the resource: ours carry the informer's name. client-go's
	// reflector logs "Failed to watch" (or list) for every failed retry;
	// ours never hands a 404 to its reflector (its watch error handler
	// would drop it anyway), so those are the upstream informer's.
	ourName := "things." + group + "/v1 [dynamic]"
	logs := captureLog(t, func(line string) string {
		switch {
		case !strings.Contains(line, group):
			return ""
		case strings.Contains(line, ourName):
			return "ours"
		case strings.Contains(line, "Failed to"):
			return "client-go"
		default:
			return "other"
		}
	})
	rec := &recorder{}
	f, err := informers.NewForConfig(rec.wrap(c.cfg), 0, informers.WithNamespace(c.ns), informers.WithAPIDiscovery())
	if err != nil {
		t.Fatal(err)
	}
	gi, err := f.ForResource(gvr)
	if err != nil {
		t.Fatal(err)
	}
	id := informers.InformerID{Form: informers.FormDynamic, Resource: gvr, Type: reflectTypeUnstructured}

	// The handlers' view: name -> resourceVersion, and the events.
	var (
		mu            sync.Mutex
		view          = map[string]string{}
		adds, deletes atomic.Int32
	)
	if _, err := gi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			u := obj.(*unstructured.Unstructured)
			mu.Lock()
			view[u.GetName()] = u.GetResourceVersion()
			mu.Unlock()
			adds.Add(1)
		},
		UpdateFunc: func(_, obj any) {
			u := obj.(*unstructured.Unstructured)
			mu.Lock()
			view[u.GetName()] = u.GetResourceVersion()
			mu.Unlock()
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			u := obj.(*unstructured.Unstructured)
			mu.Lock()
			delete(view, u.GetName())
			mu.Unlock()
			deletes.Add(1)
		},
	}); err != nil {
		t.Fatal(err)
	}

	// client-go's own informer of the same resource, for the log count.
	up := dynamicinformer.NewFilteredDynamicInformer(dyn, gvr, c.ns, 0, cache.Indexers{}, nil)
	stopUp := make(chan struct{})
	upDone := make(chan struct{})
	go func() { defer close(upDone); up.Informer().Run(stopUp) }()
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	f.StartWithContext(ctx)
	logStart := time.Now()

	// Absent at Start: WaitForCacheSync returns at once and says why.
	start := time.Now()
	res := f.WaitForCacheSyncWithContext(c.ctx)
	if res.Synced[reflectTypeUnstructured] || res.Err == nil || !strings.Contains(res.Err.Error(), "waits for its resource") {
		t.Fatalf("WaitForCacheSync with the CRD absent: synced %v, err %v; want unsynced, waiting for its resource", res.Synced, res.Err)
	}
	t.Logf("WaitForCacheSync with the CRD absent returned in %v: %v", time.Since(start).Round(time.Millisecond), res.Err)
	waiting := func() bool {
		return slices.ContainsFunc(f.Notices(), func(n string) bool { return strings.Contains(n, "waits for its resource") })
	}
	if !waiting() || f.Ready() != nil {
		t.Fatalf("with the CRD absent: Notices %q, Ready %v; want waiting and ready", f.Notices(), f.Ready())
	}
	lists := func() int {
		return len(rec.filter(func(r request) bool { return r.isList() && strings.Contains(r.Path, "/"+group+"/") }))
	}

	server := func() map[string]string {
		list, err := dyn.Resource(gvr).Namespace(c.ns).List(c.ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list %s: %v", gvr, err)
		}
		out := map[string]string{}
		for _, u := range list.Items {
			out[u.GetName()] = u.GetResourceVersion()
		}
		return out
	}
	handlers := func() map[string]string {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(view)
	}
	synced := func() bool { return f.SyncStatus()[id] }

	type figure struct {
		phase             string
		toSynced, toEmpty time.Duration
		objects           int
		deletes           int32
		lost, stale       int
		lists             int
	}
	var figures []figure
	// handlersBefore is the number of objects the last phase that
	// compared left in the cache.
	handlersBefore := func(fs []figure) int { return fs[len(fs)-1].objects }
	const limit = 10 * time.Second
	write := func(round int) {
		for i := range 5 {
			u := customObject(gvr, "Thing", c.ns, fmt.Sprintf("t%d-%d", round, i), int64(i))
			created, err := dyn.Resource(gvr).Namespace(c.ns).Create(c.ctx, u, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if i%2 == 0 {
				created.Object["spec"] = map[string]any{"size": int64(100 + i)}
				if _, err := dyn.Resource(gvr).Namespace(c.ns).Update(c.ctx, created, metav1.UpdateOptions{}); err != nil {
					t.Fatalf("update: %v", err)
				}
			}
		}
		if err := dyn.Resource(gvr).Namespace(c.ns).Delete(c.ctx, fmt.Sprintf("t%d-4", round), metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	compare := func(fig *figure) {
		want := server()
		ok := eventually(limit, 50*time.Millisecond, func() bool { return maps.Equal(handlers(), want) })
		got := handlers()
		for name, rv := range want {
			switch g, seen := got[name]; {
			case !seen:
				fig.lost++
			case g != rv:
				fig.stale++
			}
		}
		for name := range got {
			if _, seen := want[name]; !seen {
				fig.stale++
			}
		}
		fig.objects = len(want)
		if !ok {
			t.Errorf("%s: handlers' view %v, server %v", fig.phase, got, want)
		}
	}
	// becomeServed waits until the informer has synced after change, and
	// for the resource to be listable by the test's own client.
	becomeServed := func(fig *figure, change func()) {
		l0 := lists()
		t0 := time.Now()
		change()
		if !eventually(3*limit, 20*time.Millisecond, synced) {
			t.Fatalf("%s: not synced %v after the resource was served; notices %q, ready %v", fig.phase, 3*limit, f.Notices(), f.Ready())
		}
		fig.toSynced = time.Since(t0)
		fig.lists = lists() - l0
	}
	becomeGone := func(fig *figure, change func()) {
		d0 := deletes.Load()
		t0 := time.Now()
		change()
		if !eventually(3*limit, 20*time.Millisecond, func() bool { return len(handlers()) == 0 && waiting() }) {
			t.Fatalf("%s: the cache holds %d objects, waiting %v, %v after the resource went", fig.phase, len(handlers()), waiting(), 3*limit)
		}
		fig.toEmpty = time.Since(t0)
		fig.deletes = deletes.Load() - d0
		if n := len(gi.Informer().GetStore().ListKeys()); n != 0 {
			t.Errorf("%s: %d objects cached after the resource went", fig.phase, n)
		}
		if err := f.Ready(); err != nil {
			t.Errorf("%s: Ready() = %v while waiting for the resource", fig.phase, err)
		}
	}

	dynCRD := dyn.Resource(crdGVR)
	create := func() {
		if _, err := dynCRD.Create(c.ctx, testenv.CRD(group, "things", "Thing"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create the CRD: %v", err)
		}
	}
	setServed := func(served bool) {
		crd, err := dynCRD.Get(c.ctx, "things."+group, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		versions[0].(map[string]any)["served"] = served
		if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
			t.Fatal(err)
		}
		if _, err := dynCRD.Update(c.ctx, crd, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("set served=%v: %v", served, err)
		}
	}
	for round := 1; round <= 3; round++ {
		fig := figure{phase: fmt.Sprintf("CRD created (%d)", round)}
		becomeServed(&fig, create)
		write(round)
		compare(&fig)
		figures = append(figures, fig)
		if round == 1 {
			// A version no longer served keeps its objects on the
			// server: the informer's cache empties all the same, then
			// fills again.
			unserved := figure{phase: "version not served", objects: fig.objects}
			becomeGone(&unserved, func() { setServed(false) })
			served := figure{phase: "version served again"}
			becomeServed(&served, func() { setServed(true) })
			compare(&served)
			figures = append(figures, unserved, served)
		}
		gone := figure{phase: fmt.Sprintf("CRD deleted (%d)", round)}
		becomeGone(&gone, func() { deleteCRD(t, c, gvr) })
		// The CRD is gone from the server too before it is created again.
		if !eventually(60*time.Second, 50*time.Millisecond, func() bool {
			_, err := dynCRD.Get(c.ctx, "things."+group, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}) {
			t.Fatal("the CRD was not deleted within 60 s")
		}
		gone.objects = handlersBefore(figures)
		figures = append(figures, gone)
	}
	logWindow := time.Since(logStart)

	close(stopUp)
	<-upDone
	cancel()
	f.Shutdown()

	t.Logf("%-22s %10s %10s %8s %8s %5s %6s %6s", "phase", "to synced", "to empty", "objects", "deletes", "lost", "stale", "lists")
	for _, fg := range figures {
		ts, te := "-", "-"
		if fg.toSynced > 0 {
			ts = fg.toSynced.Round(time.Millisecond).String()
		}
		if fg.toEmpty > 0 {
			te = fg.toEmpty.Round(time.Millisecond).String()
		}
		t.Logf("%-22s %10s %10s %8d %8d %5d %6d %6d", fg.phase, ts, te, fg.objects, fg.deletes, fg.lost, fg.stale, fg.lists)
		if fg.toSynced > limit || fg.toEmpty > limit {
			t.Errorf("%s: over %v", fg.phase, limit)
		}
		if fg.lost != 0 || fg.stale != 0 {
			t.Errorf("%s: lost %d, stale %d", fg.phase, fg.lost, fg.stale)
		}
		if fg.toEmpty > 0 && int(fg.deletes) != fg.objects {
			t.Errorf("%s: %d delete events for %d cached objects", fg.phase, fg.deletes, fg.objects)
		}
	}
	ours, theirs := logs.get("ours"), logs.get("client-go")
	if n := logs.get("other"); n != 0 {
		t.Errorf("%d other log lines about the resource:\n%s", n, strings.Join(logs.lines, "\n"))
	}
	t.Logf("log lines over the same %v (5 absences, 4 returns): kubeinformers %d, client-go's dynamic informer %d", logWindow.Round(time.Second), ours, theirs)
	// One when the resource goes (at the start, the version unserved,
	// 3 deletions: 5) and one when it comes back (3 creations, the
	// version served again: 4).
	if ours != 9 {
		t.Errorf("kubeinformers logged %d lines about the resource, want 9: one per change; the lines:\n%s", ours, strings.Join(logs.lines, "\n"))
	}
	goleak.VerifyNone(t, before)
}
