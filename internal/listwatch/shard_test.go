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
	"crypto/sha256"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/sharding"
)

func TestSubtract(t *testing.T) {
	half := uint64(1) << 63
	q := uint64(1) << 62
	for _, tc := range []struct {
		name string
		a, b []sharding.Range
		want []sharding.Range
	}{
		{"nothing taken", []sharding.Range{{Start: 0, End: half}}, nil, []sharding.Range{{Start: 0, End: half}}},
		{"all taken", []sharding.Range{{Start: 0, End: half}}, []sharding.Range{{}}, nil},
		{"upper half of the space", []sharding.Range{{}}, []sharding.Range{{Start: 0, End: half}}, []sharding.Range{{Start: half}}},
		{"hole in the middle", []sharding.Range{{}}, []sharding.Range{{Start: q, End: 3 * q}}, []sharding.Range{{Start: 0, End: q}, {Start: 3 * q}}},
		{"two holes", []sharding.Range{{Start: 0, End: half}}, []sharding.Range{{Start: 1, End: 2}, {Start: q, End: q + 1}}, []sharding.Range{{Start: 0, End: 1}, {Start: 2, End: q}, {Start: q + 1, End: half}}},
		{"end of the space kept", []sharding.Range{{Start: half}}, []sharding.Range{{Start: half, End: math.MaxUint64}}, []sharding.Range{{Start: math.MaxUint64}}},
		{"disjoint", []sharding.Range{{Start: half}}, []sharding.Range{{Start: 0, End: q}}, []sharding.Range{{Start: half}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := subtract(tc.a, tc.b); !slices.Equal(got, tc.want) {
				t.Errorf("subtract(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

// fakeServer serves ConfigMaps with etcd's resource version semantics: a
// list is a consistent read, a watch replays every event after its
// resource version, and a resource version older than expired is 410
// Gone. Like a server without the ShardedListAndWatch feature, it ignores
// shard selectors, so the client-side filter does the work.
type fakeServer struct {
	mu       sync.Mutex
	rv       uint64
	objs     map[string]*corev1.ConfigMap
	log      []watch.Event
	watchers map[*fakeWatch]struct{}
	expired  uint64

	lists, watches atomic.Int32
}

type fakeWatch struct {
	srv  *fakeServer
	ch   chan watch.Event
	once sync.Once
}

func (w *fakeWatch) Stop() {
	w.once.Do(func() {
		w.srv.mu.Lock()
		delete(w.srv.watchers, w)
		w.srv.mu.Unlock()
		close(w.ch)
	})
}
func (w *fakeWatch) ResultChan() <-chan watch.Event { return w.ch }

func newFakeServer() *fakeServer {
	return &fakeServer{objs: map[string]*corev1.ConfigMap{}, watchers: map[*fakeWatch]struct{}{}}
}

func (s *fakeServer) requests() Requests {
	return Requests{
		List: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			s.lists.Add(1)
			s.mu.Lock()
			defer s.mu.Unlock()
			list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(s.rv, 10)}}
			for _, o := range s.objs {
				list.Items = append(list.Items, *o.DeepCopy())
			}
			return list, nil
		},
		Watch: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			s.watches.Add(1)
			from, err := strconv.ParseUint(opts.ResourceVersion, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("fake server: watch needs a resource version, got %q", opts.ResourceVersion)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if from < s.expired {
				return nil, apierrors.NewResourceExpired("too old resource version")
			}
			w := &fakeWatch{srv: s, ch: make(chan watch.Event, 100000)}
			for _, ev := range s.log {
				if mustRV(ev.Object) > from {
					w.ch <- ev
				}
			}
			s.watchers[w] = struct{}{}
			return w, nil
		},
	}
}

func mustRV(obj runtime.Object) uint64 {
	n, _ := strconv.ParseUint(resourceVersion(obj), 10, 64)
	return n
}

// write creates, updates or (del) deletes the ConfigMap name.
func (s *fakeServer) write(name string, del bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	rv := strconv.FormatUint(s.rv, 10)
	o, exists := s.objs[name]
	typ := watch.Modified
	switch {
	case del && !exists:
		return
	case del:
		delete(s.objs, name)
		typ = watch.Deleted
	case !exists:
		o = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(fmt.Sprintf("%x", sha256.Sum256([]byte(name))))}}
		s.objs[name] = o
		typ = watch.Added
	}
	o = o.DeepCopy()
	o.ResourceVersion = rv
	o.Data = map[string]string{"rv": rv}
	if !del {
		s.objs[name] = o
	}
	ev := watch.Event{Type: typ, Object: o}
	s.log = append(s.log, ev)
	for w := range s.watchers {
		w.ch <- ev
	}
}

// truth is the server's objects that sel keeps, name to resource version.
func (s *fakeServer) truth(keep func(runtime.Object) (bool, error)) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for n, o := range s.objs {
		if keep != nil {
			if in, _ := keep(o); !in {
				continue
			}
		}
		out[n] = o.ResourceVersion
	}
	return out
}

// testSharder is a Sharder whose ranges the test moves.
type testSharder struct {
	mu      sync.Mutex
	shard   Shard
	changed chan struct{}
	ignored atomic.Int32
}

func newTestSharder(t *testing.T, ranges ...sharding.Range) *testSharder {
	s := &testSharder{changed: make(chan struct{})}
	s.shard = shardOf(t, 0, s.changed, ranges)
	return s
}

func shardOf(t *testing.T, gen uint64, changed chan struct{}, ranges []sharding.Range) Shard {
	sh := Shard{Gen: gen, Changed: changed, Field: sharding.FieldUID, Tweak: func(*metav1.ListOptions) {}}
	if len(ranges) == 0 {
		return sh
	}
	sel, err := sharding.NewSelector(sharding.FieldUID, ranges...)
	if err != nil {
		t.Fatal(err)
	}
	api := sel.APISelector()
	str := api.String()
	sh.Tweak = func(o *metav1.ListOptions) { o.ShardSelector = str }
	sh.Keep, sh.Ranges = api.Matches, sel.Ranges()
	return sh
}

func (s *testSharder) Current() Shard {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shard
}

func (s *testSharder) Ignored(runtime.Object) { s.ignored.Add(1) }

func (s *testSharder) set(t *testing.T, ranges ...sharding.Range) {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.shard = shardOf(t, s.shard.Gen+1, s.changed, ranges)
}

// handoverInformer runs an informer of the fake server's ConfigMaps under
// sharder, and counts its deletions.
type handoverInformer struct {
	informer   cache.SharedIndexInformer
	deleted    atomic.Int32
	tombstones atomic.Int32 // deletions as DeletedFinalStateUnknown
}

func startHandoverInformer(t *testing.T, srv *fakeServer, sharder *testSharder) *handoverInformer {
	t.Helper()
	hi := &handoverInformer{}
	departures := &Departures{}
	cfg := Config{
		Options: Options{
			Departures: departures,
			Resource:   schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			Requests:   func(string) Requests { return srv.requests() },
			Example:    &corev1.ConfigMap{},
		},
		Shard: sharder,
		Store: func() cache.Store { return hi.informer.GetStore() },
	}
	// Plain LIST and WATCH: the fake server has no watch-list stream.
	lw := cache.ToListWatcherWithWatchListSemantics(New(cfg), noWatchList{})
	hi.informer = cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	if err := hi.informer.SetTransform(departures.Transform(nil)); err != nil {
		t.Fatal(err)
	}
	handler := cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		hi.deleted.Add(1)
		if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			hi.tombstones.Add(1)
		}
	}}
	if _, err := hi.informer.AddEventHandler(handler); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); hi.informer.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if !cache.WaitForCacheSync(ctx.Done(), hi.informer.HasSynced) {
		t.Fatal("informer did not sync")
	}
	return hi
}

// noWatchList is a client without watch-list semantics.
type noWatchList struct{}

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// cached is the informer's objects, name to resource version.
func (hi *handoverInformer) cached() map[string]string {
	out := map[string]string{}
	for _, o := range hi.informer.GetStore().List() {
		cm := o.(*corev1.ConfigMap)
		out[cm.Name] = cm.ResourceVersion
	}
	return out
}

// converge waits until the informer holds exactly what the server has in
// the shard now in force.
func converge(t *testing.T, hi *handoverInformer, srv *fakeServer, sharder *testSharder) {
	t.Helper()
	var got, want map[string]string
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got, want = hi.cached(), srv.truth(sharder.Current().Keep)
		if sharder.Current().Keep == nil {
			want = map[string]string{}
		}
		return fmt.Sprint(got) == fmt.Sprint(want), nil
	})
	if err != nil {
		t.Fatalf("cache did not converge:\n got %d objects %v\nwant %d objects %v", len(got), keys(got), len(want), keys(want))
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var (
	lowerHalf = sharding.Range{End: 1 << 63}
	upperHalf = sharding.Range{Start: 1 << 63}
	middle    = sharding.Range{Start: 1 << 62, End: 3 << 62}
)

func seed(srv *fakeServer, n int) {
	for i := range n {
		srv.write(fmt.Sprintf("cm-%03d", i), false)
	}
}

// A handover lists the ranges gained once, resumes the watch, and never
// makes the reflector list again: the reflector's own list count stays 1.
func TestHandoverWithoutRelist(t *testing.T) {
	srv := newFakeServer()
	seed(srv, 200)
	sharder := newTestSharder(t, lowerHalf)
	hi := startHandoverInformer(t, srv, sharder)
	converge(t, hi, srv, sharder)
	before := len(hi.cached())

	for i, ranges := range [][]sharding.Range{{middle}, {upperHalf}, {lowerHalf, upperHalf}, {lowerHalf}} {
		lists := srv.lists.Load()
		deleted := hi.deleted.Load()
		sharder.set(t, ranges...)
		srv.write(fmt.Sprintf("cm-new-%d", i), false) // an event during the handover
		converge(t, hi, srv, sharder)
		if got := srv.lists.Load() - lists; got > 1 {
			t.Errorf("change %d to %v: %d lists, want at most 1 (the ranges gained only)", i, ranges, got)
		}
		t.Logf("change %d to %v: %d cached, %d deletions", i, ranges, len(hi.cached()), hi.deleted.Load()-deleted)
	}
	if before == 0 {
		t.Fatal("the first shard held no object; the test proves nothing")
	}
	if hi.deleted.Load() == 0 {
		t.Error("no object left the shard as a deletion")
	}
	if d, ts := hi.deleted.Load(), hi.tombstones.Load(); ts != d {
		t.Errorf("%d of %d deletions were DeletedFinalStateUnknown tombstones, want all: no object was deleted on the server", ts, d)
	}
}

// Events of the ranges kept keep flowing during a handover, and nothing
// written meanwhile is lost or left stale, in the ranges kept, gained or
// given up.
func TestHandoverUnderWrites(t *testing.T) {
	srv := newFakeServer()
	seed(srv, 300)
	sharder := newTestSharder(t, lowerHalf)
	hi := startHandoverInformer(t, srv, sharder)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			srv.write(fmt.Sprintf("cm-%03d", i%400), i%7 == 0)
		}
	})
	for _, ranges := range [][]sharding.Range{{middle}, {lowerHalf}, {upperHalf}, {middle, upperHalf}, {lowerHalf}} {
		sharder.set(t, ranges...)
		time.Sleep(20 * time.Millisecond) // let writes land during and after it
	}
	cancel()
	wg.Wait()
	converge(t, hi, srv, sharder)
}

// A second change that arrives while the first is being handed over is
// handed over next.
func TestHandoverChangeDuringHandover(t *testing.T) {
	srv := newFakeServer()
	seed(srv, 200)
	sharder := newTestSharder(t, lowerHalf)
	hi := startHandoverInformer(t, srv, sharder)
	sharder.set(t, upperHalf)
	sharder.set(t, middle)
	sharder.set(t, lowerHalf, upperHalf)
	converge(t, hi, srv, sharder)
}

// A 410 Gone for the watch that resumes the kept ranges turns the handover
// into a whole list of the new shard, still inside the watch.
func TestHandoverExpired(t *testing.T) {
	srv := newFakeServer()
	seed(srv, 200)
	sharder := newTestSharder(t, lowerHalf)
	hi := startHandoverInformer(t, srv, sharder)
	srv.write("cm-050", true)
	srv.write("cm-new", false)
	converge(t, hi, srv, sharder)
	watches, lists := srv.watches.Load(), srv.lists.Load()
	srv.mu.Lock()
	// Another resource's write moves etcd's revision on, and compaction
	// makes every revision before it too old to watch from.
	srv.rv++
	srv.expired = srv.rv
	srv.mu.Unlock()
	sharder.set(t, middle)
	converge(t, hi, srv, sharder)
	if got := srv.watches.Load() - watches; got != 2 {
		t.Errorf("%d watch requests, want 2: the refused one, then one from the whole list", got)
	}
	if got := srv.lists.Load() - lists; got != 2 {
		t.Errorf("%d lists, want 2: the ranges gained, then the whole shard (none by the reflector)", got)
	}
}

// An empty shard holds nothing and sends nothing: its objects leave as
// deletions, and writes make no request until ranges come back.
func TestHandoverToNothing(t *testing.T) {
	srv := newFakeServer()
	seed(srv, 100)
	sharder := newTestSharder(t, upperHalf)
	hi := startHandoverInformer(t, srv, sharder)
	converge(t, hi, srv, sharder)
	owned := int32(len(hi.cached()))
	sharder.set(t)
	converge(t, hi, srv, sharder)
	if got := hi.deleted.Load(); got != owned {
		t.Errorf("%d deletions, want %d (every object owned)", got, owned)
	}
	lists, watches := srv.lists.Load(), srv.watches.Load()
	for i := range 50 {
		srv.write(fmt.Sprintf("cm-%03d", i), false)
	}
	if l, w := srv.lists.Load()-lists, srv.watches.Load()-watches; l != 0 || w != 0 {
		t.Errorf("owning nothing made %d lists and %d watches, want none", l, w)
	}
	sharder.set(t, lowerHalf)
	converge(t, hi, srv, sharder)
}

// An informer that starts owning nothing makes no request until it is
// given ranges, then lists them without the reflector listing again.
func TestStartOwningNothing(t *testing.T) {
	srv := newFakeServer()
	seed(srv, 100)
	sharder := newTestSharder(t)
	hi := startHandoverInformer(t, srv, sharder)
	if l, w := srv.lists.Load(), srv.watches.Load(); l != 0 || w != 0 {
		t.Errorf("an informer owning nothing made %d lists and %d watches, want none", l, w)
	}
	sharder.set(t, upperHalf)
	converge(t, hi, srv, sharder)
	if l := srv.lists.Load(); l != 1 {
		t.Errorf("%d lists, want 1 (the ranges gained)", l)
	}
}

// An empty shard with a Probe lists one object now and then, so that the
// informer's health still learns whether it can list; without a Probe it
// sends nothing (TestHandoverToNothing).
func TestEmptyShardProbe(t *testing.T) {
	srv := newFakeServer()
	seed(srv, 10)
	sharder := newTestSharder(t)
	sharder.shard.Probe = 10 * time.Millisecond
	var observed atomic.Int32
	hi := &handoverInformer{}
	cfg := Config{
		Options: Options{
			Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			Requests: func(string) Requests { return srv.requests() },
			Example:  &corev1.ConfigMap{},
		},
		Shard:   sharder,
		Store:   func() cache.Store { return hi.informer.GetStore() },
		Observe: func(error) { observed.Add(1) },
	}
	hi.informer = cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(New(cfg), noWatchList{}), &corev1.ConfigMap{}, 0, cache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); hi.informer.RunWithContext(ctx) }()
	defer func() { cancel(); <-done }()
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return srv.lists.Load() >= 3, nil
	}); err != nil {
		t.Fatalf("%d probe lists, want at least 3", srv.lists.Load())
	}
	if n := len(hi.cached()); n != 0 {
		t.Errorf("an empty shard cached %d objects", n)
	}
	if srv.watches.Load() != 0 {
		t.Errorf("an empty shard made %d watch requests", srv.watches.Load())
	}
	if observed.Load() == 0 {
		t.Error("no probe outcome reached Observe")
	}
}

// TestShardWatchStopWaits: Stop returns only once the watch's goroutine
// has, even when a handover's list is waiting for the server: the list's
// context is cancelled, and nothing of the watch outlives the reflector
// that stopped it (or the factory's Shutdown).
func TestShardWatchStopWaits(t *testing.T) {
	srv := newFakeServer()
	seed(srv, 10)
	sharder := newTestSharder(t, sharding.Range{Start: 0, End: math.MaxUint64 / 2})
	requests := srv.requests()
	listing := make(chan struct{}, 1)
	var listReturned atomic.Bool
	inner := requests.List
	requests.List = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		if opts.ResourceVersion != "" || opts.ShardSelector == "" || sharder.Current().Gen == 0 {
			return inner(ctx, opts)
		}
		// A handover's list: the server does not answer until the
		// request is cancelled.
		listing <- struct{}{}
		<-ctx.Done()
		listReturned.Store(true)
		return nil, ctx.Err()
	}
	lw := New(Config{
		Options: Options{
			Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			Requests: func(string) Requests { return requests },
			Example:  &corev1.ConfigMap{},
		},
		Shard: sharder,
		Store: func() cache.Store { return cache.NewStore(cache.MetaNamespaceKeyFunc) },
	})
	ctx := context.Background()
	list, err := lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	rv, err := meta.NewAccessor().ResourceVersion(list)
	if err != nil {
		t.Fatal(err)
	}
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	sharder.set(t, sharding.Range{Start: 0, End: math.MaxUint64})
	select {
	case <-listing:
	case <-time.After(30 * time.Second):
		t.Fatal("the shard change started no handover list")
	}
	w.Stop()
	if !listReturned.Load() {
		t.Error("Stop returned while the handover's list was still waiting for the server")
	}
	select {
	case _, ok := <-w.ResultChan():
		if ok {
			t.Error("an event after Stop returned")
		}
	default:
		t.Error("the result channel is still open after Stop returned")
	}
}
