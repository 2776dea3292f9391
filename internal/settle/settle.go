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

// Package settle is the machinery behind informertest.Settle: it follows
// the informers of a factory whose client is one of client-go's fakes, so
// that a test can wait until every event of its writes has reached every
// handler, without sleeping or polling.
//
// The factory builds nothing of it over a real client: the one question
// it asks of every client is IsFake, a type assertion, when it builds an
// informer; everything else here is behind its answer
// (docs/architecture.md lists the hooks and why each is where it is).
// Over a fake, each
// client-go informer (one per namespace) gets an [Informer]: it wraps the
// informer's watch in a stream it can put a marker into, and the
// informer's event handlers in wrappers that see the marker go by.
//
// How Settle knows. A fake client's writes send their watch events
// synchronously into the watch's buffered channel before they return. The
// stream's goroutine is the only reader of that channel: when Settle asks
// it for a marker, it reads len() of the channel, which are the events
// sent so far, and queues the marker after exactly that many more. The
// marker is a Deleted event of an object of the informer's type that
// cannot exist (its name is not a valid object name, and it carries
// MarkerAnnotation), with the resource version of the event before it, so
// that the reflector's resource version does not move. The reflector puts
// it into the informer's queue after every event before it; processing it
// deletes nothing from the cache and distributes a delete notification to
// every handler, after every notification before it. Each handler's
// wrapper swallows it and records that it has seen it; an internal probe
// handler does the same, so that even an informer without handlers is
// known to have updated its cache. Settle returns once every handler
// registered when it was called has seen a marker at least as recent as
// its own (markers are numbered in the order they are asked for). A
// stream that ends before its marker went through is replaced by the
// reflector's next one, which follows its relist, and Settle puts a new
// marker into that one. Nothing waits on a timer: each step waits on a
// channel that the change it waits for closes.
package settle

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/wake"
)

// MarkerAnnotation is the annotation that makes an object a marker; its
// value is the marker's number.
const MarkerAnnotation = "settle.kubeinformers.io/marker"

// markerName is the name of markers: '~' is not valid in an object name,
// so that no real object shares the marker's key.
const markerName = "kubeinformers~settle~"

// fakeClient is what every fake client of client-go and client-gen has: it
// embeds k8s.io/client-go/testing.Fake. Naming the testing package costs
// a program nothing: client-go's typed clients link it already
// (k8s.io/client-go/gentype imports it).
type fakeClient interface {
	InvokesWatch(action clienttesting.Action) (watch.Interface, error)
}

// IsFake reports whether client is one of client-go's fake clients (a
// generated fake clientset, the dynamic or the metadata fake), with one
// type assertion: the only code of the test kit that an informer over a
// real client runs, once, when it is built.
func IsFake(client any) bool {
	_, ok := client.(fakeClient)
	return ok
}

// RealClient is the target that says a factory without informers is over
// a real client: the first of clients that is set and is not a fake; none
// when every client set is a fake.
func RealClient(clients ...any) []Target {
	for _, c := range clients {
		if c != nil && !IsFake(c) {
			return []Target{{Name: "the factory", Why: fmt.Sprintf("its client %T is not one of client-go's fakes", c)}}
		}
	}
	return nil
}

// IsMarker reports whether obj (or the object of a tombstone) is a marker.
// The list/watch layer's shard filter lets markers through; it asks only
// for an informer over a fake client (IsFake).
func IsMarker(obj any) bool {
	return markerSeq(obj) != 0
}

// markerSeq returns the number of the marker obj, or 0 if it is none.
func markerSeq(obj any) uint64 {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0
	}
	v, ok := m.GetAnnotations()[MarkerAnnotation]
	if !ok {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// Source is implemented by the factories of this module: the targets
// informertest.Settle waits for.
type Source interface {
	SettleTargets() []Target
}

// Target is one informer of a factory, as Settle sees it.
type Target struct {
	// Name names the informer in errors, such as "pods (v1)".
	Name string
	// Informers are its client-go informers, one per namespace; none if
	// Why is set.
	Informers []*Informer
	// Why, if set, says why Settle cannot follow the informer.
	Why string
	// Refused, if set, is why the informer never runs.
	Refused error
	// Started reports whether Start has run it.
	Started bool
	// Done, if set, is closed once the informer has stopped.
	Done <-chan struct{}
}

// Informer follows one client-go informer whose client is a fake.
type Informer struct {
	name      string
	namespace string
	example   runtime.Object

	mu sync.Mutex
	// changed wakes the Settles on every change they may wait for: a
	// stream that starts or ends, a marker seen, a handler removed, the
	// informer stopped. It is broadcast with mu held.
	changed wake.Signal
	// cur is the stream markers go into; nil while there is none (the
	// informer lists, retries, or its stream sends its initial events).
	cur *stream
	// seq numbers the markers.
	seq      uint64
	handlers map[*handler]struct{}
	stopped  bool
	// removed is set by Remove: the namespace is no longer the
	// informer's, and Settle no longer waits for it.
	removed bool
	// synced is the client-go informer's HasSyncedChecker().Done(): its
	// handlers can have the initial events before it is closed (client-go
	// closes it from a goroutine of its own).
	synced <-chan struct{}

	// watchList and resource are set by Stream (stream.go) when the
	// client streams watch lists (informertest.ServeWatchList).
	watchList *Streaming
	resource  schema.GroupVersionResource
}

// New returns the follower of one client-go informer: name names it in
// errors, namespace is the namespace it lists ("" for all), example is an
// object of its type.
func New(name, namespace string, example runtime.Object) *Informer {
	return &Informer{
		name:      name,
		namespace: namespace,
		example:   example,
		handlers:  make(map[*handler]struct{}),
	}
}

// Namespace is the namespace the informer lists ("" for all).
func (s *Informer) Namespace() string { return s.namespace }

// Watch wraps the informer's watch call next: each watch it opens is read
// through a stream that markers can be put into. list is the list call of
// the same client, which makes the start of a watch-list stream when the
// client streams watch lists (Stream).
func (s *Informer) Watch(list ListFunc, next func(context.Context, metav1.ListOptions) (watch.Interface, error)) func(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
		var start *streamStart
		if initial && s.watchList != nil {
			var err error
			if start, opts, err = s.initial(ctx, list, opts); err != nil {
				return nil, err
			}
		}
		w, err := next(ctx, opts)
		if err != nil || w == nil {
			return w, err
		}
		st := &stream{
			s:       s,
			inner:   w,
			out:     make(chan watch.Event),
			stop:    make(chan struct{}),
			done:    make(chan struct{}),
			wake:    make(chan struct{}, 1),
			initial: initial,
			lastRV:  opts.ResourceVersion,
		}
		var queue []watch.Event
		if start != nil {
			// The stream's start, made of the fake's list: read as if
			// it came from the watch, ahead of its events.
			queue, st.start = start.events, start
			for _, ev := range queue {
				st.read(ev)
			}
		}
		if !st.initial {
			s.started(st)
		}
		if st.start != nil && len(queue) == 0 {
			st.start.v.delivered(st.start.resource)
		}
		go st.run(queue)
		return st, nil
	}
}

// started makes st the stream markers go into.
func (s *Informer) started(st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !st.ended {
		s.cur = st
		s.changed.Broadcast()
	}
}

// ended records that st ended.
func (s *Informer) ended(st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.ended = true
	if s.cur == st {
		s.cur = nil
	}
	s.changed.Broadcast()
}

// marker returns marker seq, with resource version rv.
func (s *Informer) marker(seq uint64, rv string) runtime.Object {
	obj := s.example.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		// The informer's type has object metadata, or it could not
		// have an informer.
		panic(fmt.Sprintf("settle: the example object %T has no metadata: %v", obj, err))
	}
	m.SetName(markerName + strconv.FormatUint(seq, 10))
	m.SetNamespace(s.namespace)
	m.SetResourceVersion(rv)
	m.SetAnnotations(map[string]string{MarkerAnnotation: strconv.FormatUint(seq, 10)})
	return obj
}

// stream is one watch of the informer, read by its own goroutine: the
// only reader of the client's channel, so that len() of that channel is
// what was sent and not yet read.
type stream struct {
	s     *Informer
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
	// done is closed when run has returned, inner stopped included.
	done chan struct{}
	// wake tells the goroutine that requests has markers.
	wake chan struct{}

	// requests and ended are guarded by s.mu.
	requests []uint64
	ended    bool

	// Owned by the goroutine: initial is set while a watch-list stream
	// sends its initial events, which the reflector keeps aside until the
	// bookmark that ends them (a marker among them would be lost);
	// lastRV is the resource version of the last event read.
	initial bool
	lastRV  string
	// start, for a watch-list stream whose start is made of the fake's
	// list (stream.go), is told when the last of its first
	// len(start.events) events is sent.
	start *streamStart
}

func (st *stream) ResultChan() <-chan watch.Event { return st.out }

// Stop stops the stream and returns once its goroutine has: an informer
// that has stopped leaves nothing running (the fake watcher's Stop logs,
// and a test may swap klog's logger right after Shutdown).
func (st *stream) Stop() {
	st.once.Do(func() { close(st.stop) })
	<-st.done
}

// submit asks for marker seq; the caller holds s.mu.
func (st *stream) submit(seq uint64) {
	st.requests = append(st.requests, seq)
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// pending is a marker asked for, due after left more events.
type pending struct {
	seq  uint64
	left int
}

func (st *stream) run(queue []watch.Event) {
	defer close(st.done)
	defer st.s.ended(st)
	defer close(st.out)
	defer st.inner.Stop()
	in := st.inner.ResultChan()
	// toSend is how many of the start's events at the head of queue are
	// still to be sent.
	toSend := len(queue)
	var waiting []pending
	for {
		if in == nil && len(queue) == 0 {
			return
		}
		var out chan<- watch.Event
		var next watch.Event
		if len(queue) > 0 {
			out, next = st.out, queue[0]
		}
		select {
		case ev, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			queue = append(queue, ev)
			st.read(ev)
			for i := range waiting {
				waiting[i].left--
			}
		case <-st.wake:
			st.s.mu.Lock()
			seqs := st.requests
			st.requests = nil
			st.s.mu.Unlock()
			for _, seq := range seqs {
				// Every event sent before this point is in the
				// channel or already read.
				waiting = append(waiting, pending{seq: seq, left: len(in)})
			}
		case out <- next:
			queue[0] = watch.Event{}
			queue = queue[1:]
			if toSend > 0 {
				if toSend--; toSend == 0 {
					st.start.v.delivered(st.start.resource)
				}
			}
		case <-st.stop:
			return
		}
		// Markers are asked for in order and their counts only fall, so
		// the first is always due first.
		for len(waiting) > 0 && waiting[0].left <= 0 && !st.initial {
			queue = append(queue, watch.Event{Type: watch.Deleted, Object: st.s.marker(waiting[0].seq, st.lastRV)})
			waiting = waiting[1:]
		}
	}
}

// read notes the resource version of ev, and the end of a watch-list
// stream's initial events.
func (st *stream) read(ev watch.Event) {
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return
	}
	if ev.Type != watch.Error {
		st.lastRV = m.GetResourceVersion()
	}
	if st.initial && ev.Type == watch.Bookmark && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
		st.initial = false
		st.s.started(st)
	}
}

// handler wraps an event handler of the informer.
type handler struct {
	s     *Informer
	inner cache.ResourceEventHandler
	// seen (the highest marker it got) and removed are guarded by s.mu.
	seen    uint64
	removed bool
}

func (h *handler) OnAdd(obj any, isInInitialList bool) { h.inner.OnAdd(obj, isInInitialList) }
func (h *handler) OnUpdate(oldObj, newObj any)         { h.inner.OnUpdate(oldObj, newObj) }
func (h *handler) OnDelete(obj any) {
	if seq := markerSeq(obj); seq != 0 {
		h.s.mu.Lock()
		if seq > h.seen {
			h.seen = seq
			h.s.changed.Broadcast()
		}
		h.s.mu.Unlock()
		return
	}
	h.inner.OnDelete(obj)
}

// transform returns the informer's transform t (nil: none) with markers
// passed on untouched.
func transform(t cache.TransformFunc) cache.TransformFunc {
	return func(obj any) (any, error) {
		if t == nil || markerSeq(obj) != 0 {
			return obj, nil
		}
		return t(obj)
	}
}

// probe is the handler every followed informer has, so that Settle knows
// the cache has been updated even where no one else listens.
type probe struct{}

func (probe) OnAdd(any, bool)     {}
func (probe) OnUpdate(any, any)   {}
func (probe) OnDelete(any)        {}
func (probe) String() string      { return "the informer's cache" }
func (h *handler) String() string { return handlerName(h.inner) }

// handlerName names a handler in errors.
func handlerName(h cache.ResourceEventHandler) string {
	if s, ok := h.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("event handler %T", h)
}

// Wrap returns informer with its handlers and transform wrapped for s. It
// must be called before the informer's transform is set and before it
// runs.
func (s *Informer) Wrap(informer cache.SharedIndexInformer) cache.SharedIndexInformer {
	w := &wrapped{SharedIndexInformer: informer, s: s}
	s.synced = informer.HasSyncedChecker().Done()
	if err := informer.SetTransform(transform(nil)); err != nil {
		panic(fmt.Sprintf("settle: a new informer refused a transform: %v", err))
	}
	if _, err := w.AddEventHandler(probe{}); err != nil {
		panic(fmt.Sprintf("settle: a new informer refused a handler: %v", err))
	}
	return w
}

// wrapped is a client-go informer followed by an Informer.
type wrapped struct {
	cache.SharedIndexInformer
	s *Informer
	// regs maps each registration to its handler's wrapper.
	regs sync.Map
}

func (w *wrapped) add(h cache.ResourceEventHandler, register func(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)) (cache.ResourceEventHandlerRegistration, error) {
	if h == nil {
		return register(h)
	}
	wh := &handler{s: w.s, inner: h}
	reg, err := register(wh)
	if err != nil {
		return reg, err
	}
	w.s.mu.Lock()
	w.s.handlers[wh] = struct{}{}
	w.s.mu.Unlock()
	w.regs.Store(reg, wh)
	return reg, nil
}

func (w *wrapped) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return w.add(h, w.SharedIndexInformer.AddEventHandler)
}

func (w *wrapped) AddEventHandlerWithResyncPeriod(h cache.ResourceEventHandler, resyncPeriod time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return w.add(h, func(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
		return w.SharedIndexInformer.AddEventHandlerWithResyncPeriod(h, resyncPeriod)
	})
}

func (w *wrapped) AddEventHandlerWithOptions(h cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return w.add(h, func(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
		return w.SharedIndexInformer.AddEventHandlerWithOptions(h, options)
	})
}

func (w *wrapped) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	if err := w.SharedIndexInformer.RemoveEventHandler(handle); err != nil {
		return err
	}
	if handle == nil {
		return nil
	}
	if v, ok := w.regs.LoadAndDelete(handle); ok {
		wh := v.(*handler)
		w.s.mu.Lock()
		wh.removed = true
		delete(w.s.handlers, wh)
		w.s.changed.Broadcast()
		w.s.mu.Unlock()
	}
	return nil
}

func (w *wrapped) SetTransform(t cache.TransformFunc) error {
	return w.SharedIndexInformer.SetTransform(transform(t))
}

func (w *wrapped) Run(stopCh <-chan struct{}) {
	defer w.s.stop()
	w.SharedIndexInformer.Run(stopCh)
}

func (w *wrapped) RunWithContext(ctx context.Context) {
	defer w.s.stop()
	w.SharedIndexInformer.RunWithContext(ctx)
}

// stop records that the informer has stopped.
func (s *Informer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	s.changed.Broadcast()
}

// Remove records that the informer's namespace has been removed from its
// composite (the factory's SetNamespaces): from then on Settle returns nil
// for it, also a Settle already waiting. It must be called before the
// removal stops the informer, which Settle would otherwise report as an
// error ("stopped"), and it also covers an informer removed before it
// ever opened a watch, for which Settle would wait until its context
// ends: a removed namespace is no longer part of what Settle waits for.
func (s *Informer) Remove() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removed = true
	s.changed.Broadcast()
}

// Settle returns once every handler the informer had when it was called
// has been given, and has returned from, every notification of the events
// its client had sent by then, or at once once its namespace has been
// removed (Remove); or an error naming what it still waits for when ctx
// ends or the informer stops.
func (s *Informer) Settle(ctx context.Context) error {
	s.mu.Lock()
	waitFor := make([]*handler, 0, len(s.handlers))
	for h := range s.handlers {
		waitFor = append(waitFor, h)
	}
	var first uint64 // this call's first marker
	var sent *stream // where its last marker went
	for {
		if s.removed {
			// Checked first: a removal stops the informer.
			s.mu.Unlock()
			return nil
		}
		if s.stopped {
			s.mu.Unlock()
			return fmt.Errorf("%s stopped", s.name)
		}
		var busy *handler
		delivered := false // every handler has this call's markers
		if first != 0 {
			for _, h := range waitFor {
				if !h.removed && h.seen < first {
					busy = h
					break
				}
			}
			if delivered = busy == nil; delivered && s.isSynced() {
				s.mu.Unlock()
				return nil
			}
		}
		if !delivered && (sent == nil || sent.ended) && s.cur != nil {
			s.seq++
			if first == 0 {
				first = s.seq
			}
			sent = s.cur
			sent.submit(s.seq)
		}
		changed := s.changed.Next()
		var what string
		switch {
		case delivered:
			// client-go marks the informer synced from a goroutine of
			// its own, which can run after its handlers have had the
			// initial events; Settle implies WaitForCacheSync.
			what = "its handlers have every event, but it has not marked itself synced"
		case sent == nil || sent.ended && s.cur == nil:
			what = "it has no watch running (it lists, retries after an error, or streams its initial events)"
		case busy != nil:
			what = handlerName(busy) + " has not been given all events, or has not returned"
		}
		s.mu.Unlock()
		// Only a Settle that waits for the informer's sync wakes when it
		// syncs: once closed, the channel would wake the others at once.
		var synced <-chan struct{}
		if delivered {
			synced = s.synced
		}
		select {
		case <-changed:
		case <-synced:
		case <-ctx.Done():
			return fmt.Errorf("%s: %s: %w", s.name, what, context.Cause(ctx))
		}
		s.mu.Lock()
	}
}

// isSynced reports whether the client-go informer has marked itself
// synced (always, for one Wrap never saw).
func (s *Informer) isSynced() bool {
	if s.synced == nil {
		return true
	}
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}
