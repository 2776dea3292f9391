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

package informers

import (
	"math"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/sharding"
)

// This file holds the factories' metrics: the provider interface a metrics
// library implements (the Prometheus one is the module
// github.com/kubeinformers/informers/metrics), the process-wide provider,
// and what each informer and each sharded factory reports into it.
//
// Without a provider nothing here runs: no handler is added, no handler or
// transform is wrapped, nothing is allocated. The provider in force when an
// informer starts is the one it reports into, for its whole life; a factory
// made before SetMetricsProvider reports as well as one made after.

// GaugeMetric is a gauge that goes up and down by one.
type GaugeMetric interface {
	Inc()
	Dec()
}

// SettableGaugeMetric is a gauge that is set to a value.
type SettableGaugeMetric interface {
	Set(float64)
}

// CounterMetric is a counter.
type CounterMetric interface {
	Inc()
}

// HistogramMetric records observations, such as durations in seconds.
type HistogramMetric interface {
	Observe(float64)
}

// MetricsID names the informer a metric is about. Its fields are the
// bounded labels of every informer metric: there is no per-object or
// per-namespace label.
type MetricsID struct {
	// Factory names the factory: the name given with client-go's
	// WithInformerName, or else a process-unique default
	// ("kubeinformers-factory-1", ...). Two factories of one process never
	// share it.
	Factory string
	// Form tells apart the informers one factory holds for one resource
	// (typed or dynamic, and metadata).
	Form Form
	// Resource is the resource listed and watched. For an informer built
	// by InformerFor for a type this module does not know, Resource holds
	// the Go type, such as "*v1.Widget", and Group and Version are empty.
	Resource schema.GroupVersionResource
}

// The values of the event type and result arguments of [MetricsProvider].
const (
	MetricsEventAdd    = "add"
	MetricsEventUpdate = "update"
	MetricsEventDelete = "delete"

	MetricsResultSuccess = "success"
	MetricsResultError   = "error"
)

// MetricsProvider makes the metrics the factories report, in the way of
// client-go's workqueue.MetricsProvider: one constructor per metric and
// label set, each called once per informer (or per factory) when it
// starts. Calls for a label set that was deleted return fresh metrics,
// starting from zero. A provider must be safe for concurrent use.
//
// The module github.com/kubeinformers/informers/metrics implements it for
// Prometheus; install a provider with [SetMetricsProvider].
type MetricsProvider interface {
	// NewObjectsMetric counts the objects in the informer's cache.
	NewObjectsMetric(id MetricsID) GaugeMetric
	// NewSyncedMetric is 1 once the informer has synced, else 0.
	NewSyncedMetric(id MetricsID) SettableGaugeMetric
	// NewSyncDurationMetric is the seconds from the informer's start to
	// its sync.
	NewSyncDurationMetric(id MetricsID) SettableGaugeMetric
	// NewEventsMetric counts the changes the cache applied, by eventType:
	// MetricsEventAdd, MetricsEventUpdate or MetricsEventDelete. A resync
	// is not a change.
	NewEventsMetric(id MetricsID, eventType string) CounterMetric
	// NewListsMetric counts list requests by result: MetricsResultSuccess
	// or MetricsResultError. Each page is a request.
	NewListsMetric(id MetricsID, result string) CounterMetric
	// NewWatchesMetric counts watch requests by result.
	NewWatchesMetric(id MetricsID, result string) CounterMetric
	// NewHandlerLagMetric observes, for every event and every handler
	// added while the provider is installed, the seconds from the event's
	// arrival in the informer's queue to the handler's call.
	NewHandlerLagMetric(id MetricsID) HistogramMetric
	// DeleteInformerMetrics drops every series of the informer: it was
	// removed (RemoveInformer) or its factory shut down.
	DeleteInformerMetrics(id MetricsID)

	// NewShardOwnedMetric is the fraction of the hash space that the
	// factory's membership assigns to it, from 0 to 1.
	NewShardOwnedMetric(factory string) SettableGaugeMetric
	// NewShardMembersMetric is the number of members the hash space is
	// divided among.
	NewShardMembersMetric(factory string) SettableGaugeMetric
	// NewShardHandoversMetric counts the changes of the factory's ranges.
	NewShardHandoversMetric(factory string) CounterMetric
	// NewShardHandoverDurationMetric observes the seconds each informer
	// took to move its watch to new ranges.
	NewShardHandoverDurationMetric(factory string) HistogramMetric
	// DeleteShardMetrics drops the factory's shard series.
	DeleteShardMetrics(factory string)
}

// metricsProvider is the process-wide provider; nil means off.
var metricsProvider atomic.Pointer[providerHolder]

type providerHolder struct{ p MetricsProvider }

// SetMetricsProvider makes every factory of the process report into p:
// each informer that starts afterwards, in a factory made before or after,
// reports into it until it stops. A nil p turns metrics off for informers
// started afterwards. Event handlers report their lag only when added
// after the provider was set.
//
// The Prometheus binding calls it (metrics.Register); call it yourself only
// for another metrics library.
func SetMetricsProvider(p MetricsProvider) {
	if p == nil {
		metricsProvider.Store(nil)
		return
	}
	metricsProvider.Store(&providerHolder{p: p})
}

func currentMetricsProvider() MetricsProvider {
	if h := metricsProvider.Load(); h != nil {
		return h.p
	}
	return nil
}

// factoryCount numbers the factories of the process, for default names.
var factoryCount atomic.Uint64

// metricsName is the factory label: the name of WithInformerName, else a
// default reserved with client-go's name registry, so that a factory named
// later cannot take it. Called when metrics start, under f.lock.
func (f *sharedInformerFactory) metricsName() string {
	if f.informerName != nil {
		return f.informerName.Name()
	}
	if f.defaultName == nil {
		for {
			n, err := cache.NewInformerName("kubeinformers-factory-" + strconv.FormatUint(factoryCount.Add(1), 10))
			if err == nil {
				f.defaultName = n
				break
			}
		}
	}
	return f.defaultName.Name()
}

// metricsHooks are one informer's part in the metrics: a field of its
// hooks (status.go), wired into its list/watch like the others.
type metricsHooks struct {
	// m is what the informer reports into while it runs under a
	// provider; nil otherwise.
	m atomic.Pointer[informerMetrics]
	// base is the factory's own informer under any typed wrapper; nil for
	// one built by InformerFor's newFunc.
	base *factoryInformer
	// shard is the factory's shard metrics, for handover durations.
	shard *atomic.Pointer[shardMetrics]
}

// informerMetrics is what one running informer reports into.
type informerMetrics struct {
	provider MetricsProvider
	id       MetricsID

	objects                  GaugeMetric
	synced, syncDuration     SettableGaugeMetric
	adds, updates, deletes   CounterMetric
	listOK, listErr          CounterMetric
	watchOK, watchErr        CounterMetric
	lag                      HistogramMetric
	registration             cache.ResourceEventHandlerRegistration
	syncWatchStop, syncEnded chan struct{}
}

// startMetrics starts e's metrics if a provider is installed; the caller
// holds f.lock and runs e right after. It returns a stop function to call
// when e's informer has returned, or nil.
func (f *sharedInformerFactory) startMetrics(e *entry) func() {
	p := currentMetricsProvider()
	if p == nil {
		return nil
	}
	id := MetricsID{Factory: f.metricsName(), Form: e.id.Form, Resource: e.id.Resource}
	if id.Resource.Resource == "" && e.id.Type != nil {
		id.Resource = schema.GroupVersionResource{Resource: e.id.Type.String()}
	}
	m := &informerMetrics{
		provider:     p,
		id:           id,
		objects:      p.NewObjectsMetric(id),
		synced:       p.NewSyncedMetric(id),
		syncDuration: p.NewSyncDurationMetric(id),
		adds:         p.NewEventsMetric(id, MetricsEventAdd),
		updates:      p.NewEventsMetric(id, MetricsEventUpdate),
		deletes:      p.NewEventsMetric(id, MetricsEventDelete),
		listOK:       p.NewListsMetric(id, MetricsResultSuccess),
		listErr:      p.NewListsMetric(id, MetricsResultError),
		watchOK:      p.NewWatchesMetric(id, MetricsResultSuccess),
		watchErr:     p.NewWatchesMetric(id, MetricsResultError),
		lag:          p.NewHandlerLagMetric(id),
	}
	m.synced.Set(0)
	e.hooks.metrics.m.Store(m)
	if e.refused != nil {
		return nil // never runs: synced stays 0
	}
	// The counting handler goes on the informer itself, past the lag
	// wrapping of factoryInformer.
	target := e.informer
	if base := e.hooks.metrics.base; base != nil {
		target = base.SharedIndexInformer
		base.arrivals.enable()
	}
	reg, err := target.AddEventHandler(eventCounter{m})
	if err != nil {
		klog.Background().Error(err, "Cannot count the events of an informer", "informer", e.id)
	}
	m.registration = reg
	started := time.Now()
	m.syncWatchStop, m.syncEnded = make(chan struct{}), make(chan struct{})
	synced := e.informer.HasSyncedChecker().Done()
	go func() {
		defer close(m.syncEnded)
		select {
		case <-synced:
			m.syncDuration.Set(time.Since(started).Seconds())
			m.synced.Set(1)
		case <-m.syncWatchStop:
		}
	}()
	return func() {
		close(m.syncWatchStop)
		<-m.syncEnded
	}
}

// dropMetrics deletes e's series, once its informer has stopped.
func dropMetrics(e *entry) {
	if m := e.hooks.metrics.m.Swap(nil); m != nil {
		m.provider.DeleteInformerMetrics(m.id)
	}
}

// countRequest is listwatch.Config.Count: the outcome of each list and
// watch request of the informer.
func (mh *metricsHooks) countRequest(list bool, err error) {
	m := mh.m.Load()
	if m == nil {
		return
	}
	switch {
	case list && err == nil:
		m.listOK.Inc()
	case list:
		m.listErr.Inc()
	case err == nil:
		m.watchOK.Inc()
	default:
		m.watchErr.Inc()
	}
}

// eventCounter is the handler that counts what the cache applied.
type eventCounter struct{ m *informerMetrics }

func (c eventCounter) OnAdd(any, bool) {
	c.m.adds.Inc()
	c.m.objects.Inc()
}

func (c eventCounter) OnUpdate(oldObj, newObj any) {
	if sameObject(oldObj, newObj) {
		return // a resync: the cache did not change
	}
	c.m.updates.Inc()
}

func (c eventCounter) OnDelete(any) {
	c.m.deletes.Inc()
	c.m.objects.Dec()
}

// sameObject reports whether a and b are the same pointer.
func sameObject(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer && va.Pointer() == vb.Pointer()
}

// arrivals records when each object reached the informer's queue, for the
// handler-lag metric: the stamp is taken by the informer's transform, the
// last step of it, and read by each metered handler on its call, keyed by
// the object's pointer (the very object the handler gets). An entry lives
// until every metered handler has read it.
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

func (a *arrivals) enable() { a.on.Store(true) }

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
	mh    *metricsHooks
}

func (h lagHandler) observe(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m := h.mh.m.Load()
	if m == nil {
		return
	}
	if t, ok := h.a.take(obj); ok {
		m.lag.Observe(time.Since(t).Seconds())
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

// meter wraps handler for the lag metric when a provider is installed.
func (i *factoryInformer) meter(handler cache.ResourceEventHandler) (cache.ResourceEventHandler, bool) {
	if currentMetricsProvider() == nil || handler == nil {
		return handler, false
	}
	i.arrivals.handlers.Add(1)
	return lagHandler{inner: handler, a: &i.arrivals, mh: i.metrics}, true
}

// metered records a metered handler's registration, for RemoveEventHandler.
func (i *factoryInformer) metered(reg cache.ResourceEventHandlerRegistration, err error) (cache.ResourceEventHandlerRegistration, error) {
	if err != nil {
		i.arrivals.handlers.Add(-1)
		return reg, err
	}
	i.meteredRegs.Store(reg, struct{}{})
	return reg, nil
}

// AddEventHandler adds a handler, as client-go's does.
func (i *factoryInformer) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	if h, ok := i.meter(handler); ok {
		return i.metered(i.SharedIndexInformer.AddEventHandler(h))
	}
	return i.SharedIndexInformer.AddEventHandler(handler)
}

// AddEventHandlerWithResyncPeriod adds a handler, as client-go's does.
func (i *factoryInformer) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, resyncPeriod time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	if h, ok := i.meter(handler); ok {
		return i.metered(i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(h, resyncPeriod))
	}
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(handler, resyncPeriod)
}

// AddEventHandlerWithOptions adds a handler, as client-go's does.
func (i *factoryInformer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if h, ok := i.meter(handler); ok {
		return i.metered(i.SharedIndexInformer.AddEventHandlerWithOptions(h, options))
	}
	return i.SharedIndexInformer.AddEventHandlerWithOptions(handler, options)
}

// RemoveEventHandler removes a handler, as client-go's does.
func (i *factoryInformer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	if err := i.SharedIndexInformer.RemoveEventHandler(handle); err != nil {
		return err
	}
	if handle != nil {
		if _, ok := i.meteredRegs.LoadAndDelete(handle); ok {
			i.arrivals.removed()
		}
	}
	return nil
}

// stampArrivals installs the arrival stamp as the last step of the
// transform, when the informer reports metrics; called just before it runs.
func (i *factoryInformer) stampArrivals() {
	if !i.arrivals.on.Load() {
		return
	}
	if err := i.SharedIndexInformer.SetTransform(i.arrivals.stamp(i.transform)); err != nil {
		klog.Background().Error(err, "Cannot measure the handler lag of an informer", "informer", i.shard.id)
	}
}

// shardMetrics is what a sharded factory reports into.
type shardMetrics struct {
	provider MetricsProvider
	factory  string
	owned    SettableGaugeMetric
	members  SettableGaugeMetric
	changes  CounterMetric
	duration HistogramMetric
}

// startShardMetrics starts the factory's shard metrics if a provider is
// installed; the caller holds f.lock.
func (f *sharedInformerFactory) startShardMetrics() *shardMetrics {
	p := currentMetricsProvider()
	if p == nil {
		return nil
	}
	name := f.metricsName()
	sm := &shardMetrics{
		provider: p,
		factory:  name,
		owned:    p.NewShardOwnedMetric(name),
		members:  p.NewShardMembersMetric(name),
		changes:  p.NewShardHandoversMetric(name),
		duration: p.NewShardHandoverDurationMetric(name),
	}
	sm.owned.Set(0)
	sm.members.Set(0)
	f.shardMetrics.Store(sm)
	return sm
}

// assigned reports a membership's assignment: ranges and members.
func (sm *shardMetrics) assigned(ranges []sharding.Range, members int, changed bool) {
	if sm == nil {
		return
	}
	sm.owned.Set(ownedFraction(ranges))
	sm.members.Set(float64(members))
	if changed {
		sm.changes.Inc()
	}
}

// fixed reports a fixed shard: the share of the hash space its selector
// covers and, for WithShard, the replica count as members (0 where the
// factory does not know it).
func (sm *shardMetrics) fixed(s *shardSource) {
	if sm == nil {
		return
	}
	if ranges, ok := selectorRanges(s.selector()); ok {
		sm.owned.Set(ownedFraction(ranges))
	}
	sm.members.Set(float64(s.replicas))
}

// handedOver is listwatch.Config.HandedOver: one informer's handover.
func (mh *metricsHooks) handedOver(d time.Duration) {
	if mh.shard == nil {
		return
	}
	if sm := mh.shard.Load(); sm != nil {
		sm.duration.Observe(d.Seconds())
	}
}

// ownedFraction is the share of the 2^64 hash space that ranges cover.
func ownedFraction(ranges []sharding.Range) float64 {
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

// dropAllMetrics deletes the series of every informer of the factory and
// of its shard, once Shutdown has stopped them.
func (f *sharedInformerFactory) dropAllMetrics() {
	f.lock.Lock()
	all := f.all()
	f.lock.Unlock()
	for _, e := range all {
		dropMetrics(e)
	}
	if sm := f.shardMetrics.Swap(nil); sm != nil {
		sm.provider.DeleteShardMetrics(sm.factory)
	}
	if f.defaultName != nil {
		f.defaultName.Release()
	}
}
