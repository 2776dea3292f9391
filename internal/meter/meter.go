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

// Package meter is what one informer and one sharded factory report into
// while a metrics provider is installed: the counts of a running informer,
// the lag of its handlers, and a factory's shard. The root package owns the
// provider (SetMetricsProvider) and makes the metrics of each informer from
// it; this package only reports into them.
//
// Without a provider nothing here runs: no handler is added, no handler or
// transform is wrapped, nothing is allocated.
package meter

import (
	"math"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/memsize"
	"github.com/kubeinformers/informers/sharding"
)

// Gauge goes up and down by one: the root's GaugeMetric.
type Gauge interface {
	Inc()
	Dec()
}

// Settable is a gauge set to a value: the root's SettableGaugeMetric.
type Settable interface{ Set(float64) }

// Counter counts: the root's CounterMetric.
type Counter interface{ Inc() }

// Histogram records observations: the root's HistogramMetric.
type Histogram interface{ Observe(float64) }

// Informer is what one running informer reports into.
type Informer struct {
	Objects                Gauge
	Synced, SyncDuration   Settable
	Adds, Updates, Deletes Counter
	ListOK, ListErr        Counter
	WatchOK, WatchErr      Counter
	Lag                    Histogram
	// WaitDuration and WaitErrors observe the factory's waits for a
	// resource version (internal/rvwait); nil when the provider does not
	// implement the root's ResourceVersionMetricsProvider.
	WaitDuration Histogram
	WaitErrors   Counter
	// Waiting is 1 while the informer waits for its resource, which the
	// server does not serve (WithAPIDiscovery), else 0; nil when the
	// provider does not implement the root's APIDiscoveryMetricsProvider.
	Waiting Settable
	// Bytes is the estimate of the heap the informer's cache retains
	// (internal/memsize), set on every change of the cache; nil when the
	// provider does not implement the root's MemoryMetricsProvider.
	Bytes Settable
	// OverBudget is 1 while the informer is stopped over its memory
	// budget (internal/budget), else 0; nil when the provider does not
	// implement the root's BudgetMetricsProvider.
	OverBudget Settable
	// Delete drops every series of the informer.
	Delete func()
}

// Hooks are one informer's part in the metrics: the informer's hooks hold
// them, and its list/watch reports through CountRequest and HandedOver.
type Hooks struct {
	// m is what the informer reports into while it runs under a
	// provider; nil otherwise.
	m atomic.Pointer[Informer]
	// shard is the factory's shard metrics, for handover durations.
	shard *atomic.Pointer[Shard]
	// memory is the informer's memory estimate, which Bytes reports.
	memory *memsize.Meter
	// Lag measures the informer's handlers.
	Lag Lag
	// counter counts the informer's events while it runs under a
	// provider (Run).
	counter atomic.Pointer[eventCounter]
}

// NewHooks returns the hooks of an informer of a factory whose shard
// metrics shard points to; on tells whether a provider is installed;
// memory is the informer's memory estimate (nil: none).
func NewHooks(shard *atomic.Pointer[Shard], on func() bool, memory *memsize.Meter) *Hooks {
	h := &Hooks{shard: shard, memory: memory}
	h.Lag.hooks, h.Lag.on = h, on
	return h
}

// Report makes the informer report into m from now on; m's synced gauge
// starts at 0. An informer that never runs reports only that.
func (h *Hooks) Report(m *Informer) {
	m.Synced.Set(0)
	setFlag(m.Waiting, false)
	setFlag(m.OverBudget, false)
	if m.Bytes != nil {
		m.Bytes.Set(0)
	}
	h.m.Store(m)
}

// SetWaiting reports whether the informer waits for its resource.
func (h *Hooks) SetWaiting(waiting bool) {
	if m := h.m.Load(); m != nil {
		setFlag(m.Waiting, waiting)
	}
}

// OverBudget reports whether the informer is stopped over its memory
// budget.
func (h *Hooks) OverBudget(over bool) {
	if m := h.m.Load(); m != nil {
		setFlag(m.OverBudget, over)
	}
}

// setFlag sets g, if any, to 1 or 0.
func setFlag(g Settable, on bool) {
	switch {
	case g == nil:
	case on:
		g.Set(1)
	default:
		g.Set(0)
	}
}

// Run counts the events of informer (the informer itself, past the lag
// wrapping of its handlers) into the metrics Report gave, and times its
// sync, which synced reports. It returns a stop function to call once the
// informer has returned, and the error of adding the counting handler: the
// informer runs without it, and its events go uncounted.
func (h *Hooks) Run(informer cache.SharedIndexInformer, synced <-chan struct{}) (stop func(), err error) {
	m := h.m.Load()
	if m == nil {
		return func() {}, nil
	}
	h.Lag.arrivals.on.Store(true)
	counter := &eventCounter{m: m, memory: h.memory}
	h.counter.Store(counter)
	_, err = informer.AddEventHandler(counter)
	started := time.Now()
	stopCh, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		select {
		case <-synced:
			m.SyncDuration.Set(time.Since(started).Seconds())
			m.Synced.Set(1)
		case <-stopCh:
		}
	}()
	return func() {
		close(stopCh)
		<-ended
	}, err
}

// Released reports that n objects left the informer's cache past its
// handlers (a memory budget's stop empties it), so that the objects and
// bytes gauges, which follow the handlers' events, drop them too.
func (h *Hooks) Released(n int) {
	c := h.counter.Load()
	if c == nil || n == 0 {
		return
	}
	for range n {
		c.m.Objects.Dec()
	}
	c.setBytes(c.objects.Add(-int64(n)))
}

// Refresh sets the bytes gauge to the estimate for the objects counted:
// the estimate per object changed where the counting handler does not
// see it (the objects of an informer built by InformerFor's newFunc are
// measured by a handler of their own, internal/informer memory.go).
func (h *Hooks) Refresh() {
	if c := h.counter.Load(); c != nil {
		c.setBytes(c.objects.Load())
	}
}

// Drop deletes the informer's series, once it has stopped.
func (h *Hooks) Drop() {
	if m := h.m.Swap(nil); m != nil {
		m.Delete()
	}
}

// ObserveWait reports one wait for a resource version that reached the
// informer, begun at start, if it reports wait metrics.
func (h *Hooks) ObserveWait(start time.Time, failed bool) {
	m := h.m.Load()
	if m == nil || m.WaitDuration == nil {
		return
	}
	m.WaitDuration.Observe(time.Since(start).Seconds())
	if failed && m.WaitErrors != nil {
		m.WaitErrors.Inc()
	}
}

// CountRequest is listwatch.Config's Count: the outcome of each list and
// watch request of the informer.
func (h *Hooks) CountRequest(list bool, err error) {
	m := h.m.Load()
	if m == nil {
		return
	}
	switch {
	case list && err == nil:
		m.ListOK.Inc()
	case list:
		m.ListErr.Inc()
	case err == nil:
		m.WatchOK.Inc()
	default:
		m.WatchErr.Inc()
	}
}

// HandedOver is listwatch.Config's HandedOver: one shard handover of the
// informer, observed by its factory's shard metrics.
func (h *Hooks) HandedOver(d time.Duration) {
	if h.shard == nil {
		return
	}
	if sm := h.shard.Load(); sm != nil {
		sm.Duration.Observe(d.Seconds())
	}
}

// eventCounter is the handler that counts what the cache applied, and
// sets the bytes gauge to the estimate for the objects counted.
type eventCounter struct {
	m       *Informer
	memory  *memsize.Meter
	objects atomic.Int64
}

func (c *eventCounter) OnAdd(any, bool) {
	c.m.Adds.Inc()
	c.m.Objects.Inc()
	c.setBytes(c.objects.Add(1))
}

func (c *eventCounter) OnUpdate(oldObj, newObj any) {
	if sameObject(oldObj, newObj) {
		return // a resync: the cache did not change
	}
	c.m.Updates.Inc()
	c.setBytes(c.objects.Load()) // the estimate per object may have changed
}

func (c *eventCounter) OnDelete(any) {
	c.m.Deletes.Inc()
	c.m.Objects.Dec()
	c.setBytes(c.objects.Add(-1))
}

func (c *eventCounter) setBytes(n int64) {
	if c.m.Bytes != nil {
		c.m.Bytes.Set(float64(c.memory.Bytes(int(n))))
	}
}

// sameObject reports whether a and b are the same pointer.
func sameObject(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer && va.Pointer() == vb.Pointer()
}

// Lag measures, for every handler added while a provider is installed, the
// seconds from an event's arrival in the informer's queue to the handler's
// call. The informer's wrapper (the root's factoryInformer) wraps each
// handler with Wrap, records its registration with Added, and installs
// Stamp's transform before it runs.
type Lag struct {
	hooks    *Hooks
	on       func() bool
	arrivals arrivals
	regs     sync.Map // registrations of wrapped handlers
}

// Wrap returns handler wrapped for the lag metric, and true, when a
// provider is installed; else handler itself.
func (l *Lag) Wrap(handler cache.ResourceEventHandler) (cache.ResourceEventHandler, bool) {
	if handler == nil || l.on == nil || !l.on() {
		return handler, false
	}
	l.arrivals.handlers.Add(1)
	return lagHandler{inner: handler, a: &l.arrivals, hooks: l.hooks}, true
}

// Added records the outcome of adding a handler Wrap wrapped, for
// Removed, and returns it.
func (l *Lag) Added(reg cache.ResourceEventHandlerRegistration, err error) (cache.ResourceEventHandlerRegistration, error) {
	if err != nil {
		l.arrivals.handlers.Add(-1)
		return reg, err
	}
	l.regs.Store(reg, struct{}{})
	return reg, nil
}

// Removed forgets a handler that was removed from the informer.
func (l *Lag) Removed(reg cache.ResourceEventHandlerRegistration) {
	if reg == nil {
		return
	}
	if _, ok := l.regs.LoadAndDelete(reg); ok {
		l.arrivals.removed()
	}
}

// Stamp returns transform (nil: none) followed by the arrival stamp, when
// the informer reports metrics; nil when it does not, and the transform
// stays as it is.
func (l *Lag) Stamp(transform cache.TransformFunc) cache.TransformFunc {
	if !l.arrivals.on.Load() {
		return nil
	}
	return l.arrivals.stamp(transform)
}

// arrivals records when each object reached the informer's queue: the
// stamp is taken by the informer's transform, the last step of it, and
// read by each metered handler on its call, keyed by the object's pointer
// (the very object the handler gets). An entry lives until every metered
// handler has read it.
type arrivals struct {
	on       atomic.Bool
	handlers atomic.Int32

	mu sync.Mutex
	at map[any]arrival
}

type arrival struct {
	t    time.Time
	left int32
}

// stamp wraps the informer's transform (nil: none) with the arrival stamp.
func (a *arrivals) stamp(transform cache.TransformFunc) cache.TransformFunc {
	return func(obj any) (any, error) {
		if transform != nil {
			var err error
			if obj, err = transform(obj); err != nil {
				return obj, err
			}
		}
		n := a.handlers.Load()
		if n == 0 || reflect.ValueOf(obj).Kind() != reflect.Pointer {
			return obj, nil
		}
		a.mu.Lock()
		if a.at == nil {
			a.at = make(map[any]arrival)
		}
		a.at[obj] = arrival{t: time.Now(), left: n}
		a.mu.Unlock()
		return obj, nil
	}
}

// take returns obj's arrival, counting one handler's read.
func (a *arrivals) take(obj any) (time.Time, bool) {
	if reflect.ValueOf(obj).Kind() != reflect.Pointer {
		return time.Time{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.at[obj]
	if !ok {
		return time.Time{}, false
	}
	if v.left--; v.left <= 0 {
		delete(a.at, obj)
	} else {
		a.at[obj] = v
	}
	return v.t, true
}

// removed forgets a metered handler; its unread stamps are dropped with
// everyone's (a few observations are lost, none is kept for ever).
func (a *arrivals) removed() {
	a.handlers.Add(-1)
	a.mu.Lock()
	clear(a.at)
	a.mu.Unlock()
}

// lagHandler is a user's handler with its lag measured.
type lagHandler struct {
	inner cache.ResourceEventHandler
	a     *arrivals
	hooks *Hooks
}

func (h lagHandler) observe(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m := h.hooks.m.Load()
	if m == nil {
		return
	}
	if t, ok := h.a.take(obj); ok {
		m.Lag.Observe(time.Since(t).Seconds())
	}
}

func (h lagHandler) OnAdd(obj any, isInInitialList bool) {
	h.observe(obj)
	h.inner.OnAdd(obj, isInInitialList)
}

func (h lagHandler) OnUpdate(oldObj, newObj any) {
	if !sameObject(oldObj, newObj) {
		h.observe(newObj)
	}
	h.inner.OnUpdate(oldObj, newObj)
}

func (h lagHandler) OnDelete(obj any) {
	h.observe(obj)
	h.inner.OnDelete(obj)
}

// Shard is what a sharded factory reports into.
type Shard struct {
	Owned, Members Settable
	Changes        Counter
	Duration       Histogram
	// Delete drops the factory's shard series.
	Delete func()
}

// Assigned reports a membership's assignment: ranges and members.
func (sm *Shard) Assigned(ranges []sharding.Range, members int, changed bool) {
	if sm == nil {
		return
	}
	sm.Owned.Set(OwnedFraction(ranges))
	sm.Members.Set(float64(members))
	if changed {
		sm.Changes.Inc()
	}
}

// Fixed reports a fixed shard: the ranges its selector covers (ok false
// if they are not ranges of the hash space) and the replica count as
// members (0 where the factory does not know it).
func (sm *Shard) Fixed(ranges []sharding.Range, ok bool, replicas int) {
	if sm == nil {
		return
	}
	if ok {
		sm.Owned.Set(OwnedFraction(ranges))
	}
	sm.Members.Set(float64(replicas))
}

// OwnedFraction is the share of the 2^64 hash space that ranges cover.
func OwnedFraction(ranges []sharding.Range) float64 {
	var sum float64
	for _, r := range ranges {
		end := float64(r.End)
		if r.End == 0 {
			end = math.Exp2(64)
		}
		sum += end - float64(r.Start)
	}
	return sum / math.Exp2(64)
}
