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

// Package listwatch builds the list and watch calls of every informer this
// module makes: typed, dynamic and metadata-only, standalone or shared by a
// factory. Keeping them in one place means that a request option (a tweak,
// a selector, a shard filter) or a health hook is added once for all forms.
package listwatch

// This file holds the sharding of list and watch calls: the Sharder the
// factory implements, the check of the server's echo, the client-side
// filter of lists, and the watch wrapper that filters events.

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/settle"
	"github.com/kubeinformers/informers/sharding"
)

// Sharder limits an informer to a shard of its resource's objects. The
// factory implements it (shard.go in the root package).
type Sharder interface {
	// Current returns the shard in force.
	Current() Shard
	// Ignored is told of an object the server sent outside the shard
	// selector it was given: a server without the ShardedListAndWatch
	// feature ignores the selector.
	Ignored(obj runtime.Object)
}

// Shard is the shard an informer is limited to, at one time.
type Shard struct {
	// Gen changes whenever the shard does.
	Gen uint64
	// Tweak sets a request's shard selector. Nil: the informer is not
	// sharded, and every object is kept.
	Tweak func(*metav1.ListOptions)
	// Keep reports whether an object belongs to the shard (an error: it
	// cannot be placed, for example a selector on two keys). Nil with a
	// Tweak: the shard is empty. The informer then owns nothing and makes
	// no request at all; an empty shard selector would select every
	// object, not none.
	Keep func(runtime.Object) (bool, error)
	// Changed is closed when the shard changes; nil for a shard that never
	// does.
	Changed <-chan struct{}
	// Field and Ranges describe a shard that a membership moves, so that a
	// handover can list just the ranges gained. Nil Ranges: a fixed
	// selector.
	Field  sharding.Field
	Ranges []sharding.Range
	// Probe, for an empty shard, is how often to list one object all the
	// same, so that Observe still learns whether the informer could list:
	// a membership that gives a failing replica no share must learn when
	// it recovers. Zero: an empty shard sends no request at all.
	Probe time.Duration
}

func (s Shard) sharded() bool { return s.Tweak != nil }
func (s Shard) empty() bool   { return s.Tweak != nil && s.Keep == nil }

// changed reports, without waiting, whether the shard has changed since.
func (s Shard) changed() bool {
	select {
	case <-s.Changed:
		return s.Changed != nil
	default:
		return false
	}
}

// checkEcho compares the shard selector a server says it applied
// (ListMeta.ShardInfo) with the one sent, as client-go's
// cache.NewShardedListWatch does from v0.38 on: a server that applied
// another selector returned another shard, which no client-side filter
// can repair. A list without ShardInfo was not filtered by the server;
// filterList then does the work.
func checkEcho(list runtime.Object, sent string, resource schema.GroupVersionResource) error {
	// ListAccessor returns a typed or unstructured list itself, and the
	// ListMeta of any other; either has ShardInfo if the version has it.
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil // filterList reports a list it cannot read
	}
	sharded, ok := lm.(metav1.ShardedListInterface)
	if !ok {
		return nil
	}
	if info := sharded.GetShardInfo(); info != nil && info.Selector != sent {
		return fmt.Errorf("informers: list %s: the server applied the shard selector %q, not the %q sent", resource, info.Selector, sent)
	}
	return nil
}

// filterList drops the items of a list response that are outside the
// shard, reporting them as ignored by the server. An item the shard
// cannot place fails the list, as in client-go's sharded list/watch.
func filterList(list runtime.Object, keep func(runtime.Object) (bool, error), s Sharder, resource schema.GroupVersionResource) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return fmt.Errorf("informers: filtering a list of %s by shard: %w", resource, err)
	}
	kept := items[:0]
	for _, item := range items {
		ok, err := keep(item)
		if err != nil {
			return fmt.Errorf("informers: list %s: placing an object in the shard: %w", resource, err)
		}
		if ok {
			kept = append(kept, item)
		} else {
			s.Ignored(item)
		}
	}
	if len(kept) == len(items) {
		return nil
	}
	return meta.SetList(list, kept)
}

// sharded is the state that the list and watch calls of one sharded
// informer share.
type sharded struct {
	cfg *Config
	// listed is the shard of the last list: a watch resumes from that list,
	// so it starts under that shard, and hands over at once if the shard
	// has changed since.
	listed atomic.Pointer[Shard]
	// hold holds back the events of objects a handover listed, up to the
	// list's resource version (see shardWatch.handover).
	hold atomic.Pointer[hold]
	// markers is set over a fake client, whose watch the test kit may put
	// markers into (internal/settle): they pass the filter. Over a real
	// client the filter asks nothing of the kit.
	markers bool
}

// hold drops the watch events of objects that keep selects, up to and
// including resource version rv: a handover delivered those objects as
// listed at rv, and the watch it resumed started from an older one.
type hold struct {
	keep func(runtime.Object) (bool, error)
	rv   uint64
}

// beforeList puts the shard in force into opts. For an empty shard it
// returns the list to answer with: an empty one, without a request.
func (s *sharded) beforeList(opts *metav1.ListOptions) (Shard, runtime.Object) {
	cur := s.cfg.Shard.Current()
	s.listed.Store(&cur)
	s.hold.Store(nil)
	switch {
	case cur.empty():
		return cur, &metav1.List{}
	case cur.sharded():
		cur.Tweak(opts)
	}
	return cur, nil
}

// afterList checks the server's echo of the shard selector and drops what
// is outside the shard.
func (s *sharded) afterList(cur Shard, list runtime.Object, sent string) error {
	if !cur.sharded() {
		return nil
	}
	if err := checkEcho(list, sent, s.cfg.Resource); err != nil {
		return err
	}
	return filterList(list, cur.Keep, s.cfg.Shard, s.cfg.Resource)
}

// watch starts a watch under the shard: the shard of the last list for a
// watch that resumes from it, the current one for a watch-list stream. An
// empty shard makes no request, and neither does a changed one, which hands
// over first.
//
// watched is told the outcome of the first watch request, and opened that
// the watch runs without one; observe the outcome of every later request.
func (s *sharded) watch(ctx context.Context, r Requests, opts metav1.ListOptions, watched, opened, observe func(error)) (watch.Interface, error) {
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	cur := s.cfg.Shard.Current()
	if l := s.listed.Load(); l != nil && !initial {
		cur = *l
	} else {
		s.listed.Store(&cur)
		s.hold.Store(nil)
	}
	if !cur.sharded() {
		w, err := r.Watch(ctx, opts)
		watched(err)
		return w, err
	}
	w := &shardWatch{
		s: s, r: r, base: opts, cur: cur, initial: initial, observe: observe,
		out: make(chan watch.Event), stop: make(chan struct{}), done: make(chan struct{}),
	}
	// Stop cancels the watch's own requests (a handover's list and watch),
	// so that it can wait for run to return without waiting for the server.
	w.ctx, w.cancel = context.WithCancel(ctx)
	if !initial {
		w.pos = opts.ResourceVersion
	}
	if cur.empty() || cur.changed() {
		opened(nil)
	} else {
		sent := opts
		cur.Tweak(&sent)
		in, err := r.Watch(ctx, sent)
		watched(err)
		if err != nil {
			return nil, err
		}
		w.in = in
	}
	go w.run()
	return w, nil
}

// shardWatch passes on the events of objects in the shard, and every
// bookmark and error; and when the shard changes, it hands over without
// ending, so the reflector neither lists again nor backs off.
//
// A handover from shard A to shard B, in the watch's own goroutine:
//
//  1. List the ranges B gains (B minus A, one selector), a consistent read
//     at resource version L.
//  2. Stop the watch under A, which has passed on every event of A up to
//     resource version P, and watch B from P: the ranges kept lose and
//     repeat nothing, and stay live but for the length of steps 1 to 5.
//  3. Send a bookmark at P and wait until the informer's cache has it
//     (its store's resource version is P): the cache then holds every
//     object passed on, none still queued.
//  4. Send each cached object outside B as deleted: handlers get it as a
//     DeletedFinalStateUnknown tombstone, as from a relist (Departures).
//  5. Send the objects listed in step 1 as added, then a bookmark at P, so
//     that a reflector that watches again resumes from P, not from L.
//     Until the watch passes L, its events of gained objects at or below L
//     are dropped: the list already holds a newer state (sharded.hold).
//
// If the watch from P is refused as too old (410 Gone), step 1 lists all
// of B instead, the watch starts from that list, and step 4 also deletes
// the cached objects the list lacks. What it cannot hand over (a change
// during a watch-list stream's initial events, a failed list or watch,
// client-go's AtomicFIFO feature off) ends the watch with an expired
// resource version: the reflector lists the new shard from scratch, as it
// did for every change before handovers.
type shardWatch struct {
	s    *sharded
	ctx  context.Context
	r    Requests
	base metav1.ListOptions // the reflector's request, without a shard
	cur  Shard
	in   watch.Interface // nil while the shard is empty
	// pos is the resource version up to which every event of cur has been
	// passed on or dropped as outside; unknown ("") during a watch-list
	// stream's initial events, which are not in order.
	pos     string
	initial bool
	observe func(error)

	out    chan watch.Event
	stop   chan struct{}
	done   chan struct{} // closed when run has returned
	cancel context.CancelFunc
	once   sync.Once
}

// Stop ends the watch and returns once its goroutine has: nothing of it
// (a request, a log line, a tombstone) outlives the reflector that stopped
// it, and so the factory's Shutdown. Every wait in run also selects on
// stop or on the cancelled context.
func (w *shardWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.cancel()
	})
	<-w.done
}

func (w *shardWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *shardWatch) run() {
	defer close(w.done)
	defer w.cancel()
	defer close(w.out)
	defer w.stopInner()
	if w.initial && w.in == nil && w.cur.empty() {
		// An empty shard streams no initial events: end them at once.
		if !w.send(watch.Event{Type: watch.Bookmark, Object: w.s.bookmark("", true)}) {
			return
		}
		w.initial = false
	}
	if w.in == nil && !w.cur.empty() && !w.handover() {
		return // the shard changed before the watch started
	}
	var ticker *time.Ticker
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	for {
		var events <-chan watch.Event
		if w.in != nil {
			events = w.in.ResultChan()
		}
		var probe <-chan time.Time
		switch {
		case w.in == nil && w.cur.empty() && w.cur.Probe > 0:
			if ticker == nil {
				ticker = time.NewTicker(w.cur.Probe)
			}
			probe = ticker.C
		case ticker != nil:
			ticker.Stop()
			ticker = nil
		}
		select {
		case <-w.stop:
			return
		case <-w.cur.Changed:
			if !w.handover() {
				return
			}
		case ev, ok := <-events:
			if !ok || !w.pass(ev) {
				return
			}
		case <-probe:
			w.probe()
		}
	}
}

// probe lists one object of an empty shard's resource, only to tell
// Observe whether the informer can list (Shard.Probe).
func (w *shardWatch) probe() {
	opts := metav1.ListOptions{LabelSelector: w.base.LabelSelector, FieldSelector: w.base.FieldSelector, Limit: 1}
	_, err := w.r.List(w.ctx, opts)
	w.s.cfg.count(true, err)
	w.observe(err)
}

// pass passes on ev if it belongs to the shard, and advances pos.
func (w *shardWatch) pass(ev watch.Event) bool {
	if w.s.markers && settle.IsMarker(ev.Object) {
		return w.send(ev) // informertest's marker (internal/settle): in no shard, for every one
	}
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
		rv := resourceVersion(ev.Object)
		if w.held(ev.Object, rv) {
			w.advance(rv)
			return true
		}
		ok, err := w.cur.Keep(ev.Object)
		switch {
		case err != nil:
			// As client-go's sharded watch: drop the event and say why;
			// the next list reports it.
			utilruntime.HandleErrorWithContext(w.ctx, err, "Cannot place a watched object in the shard; dropping the event", "resource", w.s.cfg.Resource)
		case !ok:
			w.s.cfg.Shard.Ignored(ev.Object)
		default:
			if !w.send(ev) {
				return false
			}
		}
		w.advance(rv)
	case watch.Bookmark:
		if !w.send(ev) {
			return false
		}
		if w.initial && isEndOfInitialEvents(ev.Object) {
			w.initial = false
		}
		w.advance(resourceVersion(ev.Object))
	default:
		return w.send(ev)
	}
	return true
}

// advance records that every event up to rv has been seen, and ends a hold
// that rv has passed.
func (w *shardWatch) advance(rv string) {
	if w.initial || rv == "" {
		return
	}
	w.pos = rv
	if h := w.s.hold.Load(); h != nil {
		if n, ok := parseRV(rv); ok && n > h.rv {
			w.s.hold.CompareAndSwap(h, nil)
		}
	}
}

// held reports whether a hold drops this event.
func (w *shardWatch) held(obj runtime.Object, rv string) bool {
	h := w.s.hold.Load()
	if h == nil {
		return false
	}
	n, ok := parseRV(rv)
	if !ok || n > h.rv {
		return false
	}
	in, err := h.keep(obj)
	return err == nil && in
}

func (w *shardWatch) send(ev watch.Event) bool {
	select {
	case w.out <- ev:
		return true
	case <-w.stop:
		return false
	}
}

func (w *shardWatch) stopInner() {
	if w.in != nil {
		w.in.Stop()
		w.in = nil
	}
}

// handoverWait bounds step 3 of a handover: the informer applies queued
// events in microseconds, so only a stalled process waits this long; the
// handover then goes on, and an object still queued may be left behind
// until the next list.
const handoverWait = 5 * time.Second

// handover moves the watch to the shard now in force: see [shardWatch]. It
// returns false when the watch has ended.
func (w *shardWatch) handover() bool {
	if h := w.s.cfg.HandedOver; h != nil {
		start := time.Now()
		defer func() { h(time.Since(start)) }()
	}
	prev, next := w.cur, w.s.cfg.Shard.Current()
	store := w.s.store()
	switch {
	case !next.sharded():
		return w.relist("the informer is no longer sharded")
	case w.initial:
		return w.relist("the shard changed during the initial events of a watch-list stream")
	case store == nil || w.s.cfg.Example == nil:
		return w.relist("the list/watch has no cache to hand over from")
	case !clientfeatures.FeatureGates().Enabled(clientfeatures.AtomicFIFO):
		return w.relist("client-go's AtomicFIFO feature is off, so the cache cannot say when it has caught up")
	}
	// Step 1 and 2, or with a whole list if the watch from pos is refused.
	from := w.pos
	full := prev.empty() || from == "" || from == "0"
	var (
		gained []runtime.Object
		keep   func(runtime.Object) (bool, error)
		listRV string
		in     watch.Interface
	)
	for !next.empty() {
		tweak := next.Tweak
		keep = next.Keep
		if !full {
			tweak, keep, full = gainedPart(prev, next)
		}
		gained, listRV = nil, ""
		if tweak != nil {
			var err error
			if gained, listRV, err = w.list(tweak, keep); err != nil {
				return w.relist(fmt.Sprintf("listing the ranges gained failed: %v", err))
			}
		}
		start := from
		if full {
			start = listRV
		}
		w.stopInner()
		var err error
		in, err = w.watchFrom(next, start)
		if err == nil {
			break
		}
		if full || !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			return w.relist(fmt.Sprintf("watching the new shard failed: %v", err))
		}
		full = true // pos is too old: list the whole new shard
	}
	w.stopInner()
	w.in = in
	if full && listRV != "" {
		from = listRV
	}
	// Step 3.
	if !w.caughtUp(store) {
		return false
	}
	// Step 4.
	var listed map[string]bool
	if full {
		listed = make(map[string]bool, len(gained))
		for _, obj := range gained {
			if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				listed[key] = true
			}
		}
	}
	for _, cached := range store.List() {
		obj, ok := cached.(runtime.Object)
		if !ok || reflect.TypeOf(obj) != reflect.TypeOf(w.s.cfg.Example) {
			return w.relist(fmt.Sprintf("the cache holds a %T, not a %T (a transform changed the type), which a watch cannot delete", cached, w.s.cfg.Example))
		}
		leave := next.empty()
		if !leave {
			in, err := next.Keep(obj)
			leave = err != nil || !in
		}
		if !leave && listed != nil {
			key, err := cache.MetaNamespaceKeyFunc(obj)
			leave = err == nil && !listed[key]
		}
		if leave && !w.depart(obj) {
			return false
		}
	}
	// Step 5.
	for _, obj := range gained {
		typ := watch.Added
		if _, exists, err := store.Get(obj); err == nil && exists {
			typ = watch.Modified
		}
		if !w.send(watch.Event{Type: typ, Object: obj}) {
			return false
		}
	}
	if from != "" && !w.send(watch.Event{Type: watch.Bookmark, Object: w.s.bookmark(from, false)}) {
		return false
	}
	w.pos = from
	w.s.listed.Store(&next) // a later watch of the reflector resumes under next
	if n, ok := parseRV(listRV); ok && !full && len(gained) > 0 {
		if p, ok := parseRV(from); ok && n > p {
			w.s.hold.Store(&hold{keep: keep, rv: n})
		}
	}
	w.cur = next
	return true
}

// depart sends a cached object as deleted: with Departures, the object
// itself, which the informer's transform turns into a tombstone untouched;
// without, a copy, since the informer transforms it again and client-go's
// transforms may work in place.
func (w *shardWatch) depart(obj runtime.Object) bool {
	if d := w.s.cfg.Departures; d != nil {
		key, err := cache.MetaNamespaceKeyFunc(obj)
		if err == nil {
			d.objects.Store(obj, key)
			if w.send(watch.Event{Type: watch.Deleted, Object: obj}) {
				return true
			}
			d.objects.Delete(obj)
			return false
		}
	}
	return w.send(watch.Event{Type: watch.Deleted, Object: obj.DeepCopyObject()})
}

// Departures marks the cached objects a handover sends as deleted, so that
// the informer's transform ([Departures.Transform]) hands them on as
// [cache.DeletedFinalStateUnknown] tombstones: event handlers see what a
// relist would show them, and the object, which readers of the cache may
// hold, is neither copied nor transformed again.
type Departures struct {
	objects sync.Map // runtime.Object (the cached pointer) -> key
}

// Transform returns the informer's transform: next, except for the objects
// a handover sends as deleted. It must be the informer's whole transform.
func (d *Departures) Transform(next cache.TransformFunc) cache.TransformFunc {
	return func(obj any) (any, error) {
		if key, ok := d.objects.LoadAndDelete(obj); ok {
			return cache.DeletedFinalStateUnknown{Key: key.(string), Obj: obj}, nil
		}
		if next == nil {
			return obj, nil
		}
		return next(obj)
	}
}

// list lists the part of the shard that tweak selects, a consistent read.
func (w *shardWatch) list(tweak func(*metav1.ListOptions), keep func(runtime.Object) (bool, error)) ([]runtime.Object, string, error) {
	opts := metav1.ListOptions{LabelSelector: w.base.LabelSelector, FieldSelector: w.base.FieldSelector}
	tweak(&opts)
	list, err := w.r.List(w.ctx, opts)
	w.s.cfg.count(true, err)
	w.observe(err)
	if err != nil {
		return nil, "", err
	}
	if err := checkEcho(list, opts.ShardSelector, w.s.cfg.Resource); err != nil {
		return nil, "", err
	}
	if err := filterList(list, keep, w.s.cfg.Shard, w.s.cfg.Resource); err != nil {
		return nil, "", err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, "", err
	}
	items, err := meta.ExtractList(list)
	return items, lm.GetResourceVersion(), err
}

// watchFrom watches the shard from resource version rv.
func (w *shardWatch) watchFrom(next Shard, rv string) (watch.Interface, error) {
	opts := w.base
	opts.ResourceVersion, opts.ResourceVersionMatch = rv, ""
	opts.SendInitialEvents = nil
	opts.AllowWatchBookmarks = true
	next.Tweak(&opts)
	in, err := w.r.Watch(w.ctx, opts)
	w.s.cfg.count(false, err)
	w.observe(err)
	return in, err
}

// caughtUp sends a bookmark at pos and waits until the informer's cache has
// applied it, and so every event passed on before it.
func (w *shardWatch) caughtUp(store cache.Store) bool {
	if w.pos == "" {
		return true // nothing passed on: the shard was empty
	}
	if !w.send(watch.Event{Type: watch.Bookmark, Object: w.s.bookmark(w.pos, false)}) {
		return false
	}
	deadline := time.Now().Add(handoverWait)
	for store.LastStoreSyncResourceVersion() != w.pos {
		if time.Now().After(deadline) {
			klog.FromContext(w.ctx).Info("The informer's cache has not caught up with its watch; handing over the shard anyway", "resource", w.s.cfg.Resource, "resourceVersion", w.pos)
			return true
		}
		select {
		case <-w.stop:
			return false
		case <-time.After(2 * time.Millisecond):
		}
	}
	return true
}

// relist ends the watch with an expired resource version, so that the
// reflector lists the shard now in force from scratch.
func (w *shardWatch) relist(why string) bool {
	klog.FromContext(w.ctx).V(2).Info("Listing again to change shards", "resource", w.s.cfg.Resource, "reason", why)
	w.stopInner()
	status := apierrors.NewResourceExpired("the shard of this informer changed; listing again: " + why).ErrStatus
	w.send(watch.Event{Type: watch.Error, Object: &status})
	return false
}

// store is the informer's cache, nil before it exists.
func (s *sharded) store() cache.Store {
	if s.cfg.Store == nil {
		return nil
	}
	return s.cfg.Store()
}

// bookmark is a bookmark event's object at rv: an empty object of the
// informer's type, as the reflector checks.
func (s *sharded) bookmark(rv string, endOfInitialEvents bool) runtime.Object {
	var obj runtime.Object
	if u, ok := s.cfg.Example.(*unstructured.Unstructured); ok {
		b := &unstructured.Unstructured{Object: map[string]any{}}
		if gvk := u.GroupVersionKind(); !gvk.Empty() {
			b.SetGroupVersionKind(gvk)
		}
		obj = b
	} else {
		obj = reflect.New(reflect.TypeOf(s.cfg.Example).Elem()).Interface().(runtime.Object)
		obj.GetObjectKind().SetGroupVersionKind(s.cfg.Example.GetObjectKind().GroupVersionKind())
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj // every Kubernetes object has metadata
	}
	m.SetResourceVersion(rv)
	if endOfInitialEvents {
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return obj
}

// gainedPart returns the tweak and keep of the ranges next has and prev
// has not; a nil tweak when there are none. full is true when prev and
// next cannot be compared (not both moved by one membership key): the
// caller then lists all of next.
func gainedPart(prev, next Shard) (tweak func(*metav1.ListOptions), keep func(runtime.Object) (bool, error), full bool) {
	if prev.Ranges == nil || next.Ranges == nil || prev.Field != next.Field {
		return next.Tweak, next.Keep, true
	}
	diff := subtract(next.Ranges, prev.Ranges)
	if len(diff) == 0 {
		return nil, nil, false
	}
	sel, err := sharding.NewSelector(next.Field, diff...)
	if err != nil {
		return next.Tweak, next.Keep, true
	}
	api := sel.APISelector()
	str := api.String()
	return func(o *metav1.ListOptions) { o.ShardSelector = str }, api.Matches, false
}

// subtract returns the parts of the ranges a outside the ranges b; both
// sorted and disjoint, as a sharding.Selector holds them.
func subtract(a, b []sharding.Range) []sharding.Range {
	// Inclusive upper bounds, so that the end of the space (End 0) needs
	// no special case.
	last := func(r sharding.Range) uint64 {
		if r.End == 0 {
			return math.MaxUint64
		}
		return r.End - 1
	}
	span := func(lo, hi uint64) sharding.Range {
		if hi == math.MaxUint64 {
			return sharding.Range{Start: lo}
		}
		return sharding.Range{Start: lo, End: hi + 1}
	}
	var out []sharding.Range
	for _, r := range a {
		lo, hi := r.Start, last(r)
		covered := false
		for _, c := range b {
			if last(c) < lo || c.Start > hi {
				continue
			}
			if c.Start > lo {
				out = append(out, span(lo, c.Start-1))
			}
			if last(c) >= hi {
				covered = true
				break
			}
			lo = last(c) + 1
		}
		if !covered {
			out = append(out, span(lo, hi))
		}
	}
	return out
}

func resourceVersion(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// parseRV reads an etcd resource version. Kubernetes documents resource
// versions as opaque, but every server backed by etcd issues them as
// increasing integers, and client-go's own comparisons make the same
// assumption; anything else is not compared.
func parseRV(rv string) (uint64, bool) {
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}

func isEndOfInitialEvents(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}
