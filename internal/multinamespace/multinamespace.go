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

// Package multinamespace makes one [cache.SharedIndexInformer] out of one
// informer per namespace, so that a factory can watch a set of namespaces
// with one LIST and one WATCH per namespace and never a cluster-wide
// request, while its listers, indexers and event handlers stay exactly those
// of client-go.
//
// # Why a composite and not one reflector over a merged list/watch
//
// A single reflector needs a single resourceVersion to resume its watch
// from. A watch that merges the streams of several namespaces has none:
// the per-namespace streams are not ordered with each other, so whichever
// resourceVersion the merged stream reports last, resuming from it either
// skips events of a namespace that lagged behind or re-delivers those of one
// that ran ahead. Worse, a 410 Gone (compaction) or an outage in one
// namespace forces the reflector to relist everything, which re-delivers
// every object of the healthy namespaces as an update and stalls them for
// the duration of the relist.
//
// With one informer per namespace, each has its own reflector, its own
// resourceVersion and its own relist: a 410 or an outage in one namespace
// relists that namespace only, and the others neither lose nor repeat an
// event. This is controller-runtime's multi-namespace cache design; unlike
// controller-runtime, the composite here still implements
// [cache.SharedIndexInformer], so client-go's listers
// (k8s.io/client-go/listers/...) and [cache.NewGenericLister] work on its
// [cache.Indexer] unchanged.
//
// Namespaces are disjoint, so every object lives in exactly one
// sub-informer and every handler sees each object's events exactly once.
package multinamespace

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/shard"
)

// New returns a cache.SharedIndexInformer over informers, one per namespace
// (map key = namespace name). All must be new (not running) and cache
// objects of one type. Each must have been built with its own
// [cache.Indexers] map (New panics if two share one), since client-go's
// AddIndexers writes into that map.
//
// The composite owns the sub-informers: run, configure and add handlers to
// it, never to a sub-informer directly. Its methods behave as on a single
// informer, with these documented differences:
//   - LastSyncResourceVersion is the lowest of the namespaces' resource
//     versions (see [Informer.LastSyncResourceVersion]);
//   - a handler's callbacks are serialized by the composite, so a handler
//     sees its events one at a time as on a single informer, but events of
//     different namespaces are not ordered with each other;
//   - the watch error handler is called once per failing namespace.
func New(informers map[string]cache.SharedIndexInformer) cache.SharedIndexInformer {
	namespaces := make([]string, 0, len(informers))
	for ns := range informers {
		namespaces = append(namespaces, ns)
	}
	// A fixed order makes List and ListKeys deterministic across calls,
	// and error messages and the checker's name reproducible.
	slices.Sort(namespaces)

	c := &Informer{
		namespaces: namespaces,
		subs:       make([]cache.SharedIndexInformer, len(namespaces)),
		synced:     make(chan struct{}),
		regs:       map[*registration]struct{}{},
	}
	idx := &indexer{
		namespaces: namespaces,
		subs:       make([]cache.Indexer, len(namespaces)),
		byNS:       make(map[string]cache.Indexer, len(namespaces)),
	}
	shared := map[uintptr]string{}
	for i, ns := range namespaces {
		c.subs[i] = informers[ns]
		// client-go's indexer keeps the Indexers map it was built with,
		// and AddIndexers writes into it: informers built from one map
		// would see each other's new index functions without their
		// objects being indexed, and AddIndexers would fail with a
		// conflict after the first namespace.
		if m := informers[ns].GetIndexer().GetIndexers(); m != nil {
			p := reflect.ValueOf(m).Pointer()
			if other, ok := shared[p]; ok {
				panic(fmt.Sprintf("multinamespace.New: the informers of namespaces %q and %q share one cache.Indexers map; build each with its own (maps.Clone)", other, ns))
			}
			shared[p] = ns
		}
		idx.subs[i] = informers[ns].GetIndexer()
		idx.byNS[ns] = idx.subs[i]
	}
	// Built once: GetIndexer, GetStore, GetController and HasSyncedChecker
	// are on hot paths (listers, WaitFor) and must not allocate.
	c.indexer = idx
	c.controller = &controller{c: c}
	c.checker = &syncedChecker{c: c}
	return c
}

// Informer is the composite returned by [New]. It is exported only for its
// documentation; use it as a [cache.SharedIndexInformer].
type Informer struct {
	namespaces []string // sorted
	subs       []cache.SharedIndexInformer
	indexer    cache.Indexer
	controller cache.Controller
	checker    cache.DoneChecker

	// synced is closed once every sub-informer has synced.
	synced chan struct{}

	// mu guards the fields below and orders configuration (SetTransform,
	// SetWatchErrorHandler) and handler registration against Run.
	mu      sync.Mutex
	started bool
	stopped bool
	// runCtx ends when Run's context ends or every sub-informer has
	// returned; the composite's helper goroutines stop with it.
	runCtx context.Context
	wg     *sync.WaitGroup
	// regs are the live registrations; those added before Run get their
	// sync watcher when Run starts.
	regs map[*registration]struct{}
}

var _ cache.SharedIndexInformer = &Informer{}

// AddEventHandler registers handler on every namespace's informer; see
// [cache.SharedInformer.AddEventHandler].
func (c *Informer) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return c.AddEventHandlerWithOptions(handler, cache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod registers handler on every namespace's
// informer with the given resync period; see
// [cache.SharedInformer.AddEventHandlerWithResyncPeriod].
func (c *Informer) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, resyncPeriod time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return c.AddEventHandlerWithOptions(handler, cache.HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions registers handler on every namespace's
// informer. The returned registration has synced once every namespace's
// registration has, and is what [Informer.RemoveEventHandler] accepts. If
// one namespace rejects the handler (its informer has stopped), the
// namespaces that accepted it are rolled back and the error is returned.
func (c *Informer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, fmt.Errorf("handler %v was not added to shared informer because it has stopped already", handler)
	}

	// Every namespace has its own delivery goroutine; without this a
	// handler written for one informer (sequential delivery) would be
	// called concurrently.
	serial := &serialHandler{h: handler}
	reg := &registration{
		owner:    c,
		subs:     make([]cache.ResourceEventHandlerRegistration, 0, len(c.subs)),
		synced:   make(chan struct{}),
		removed:  make(chan struct{}),
		shutdown: make(chan struct{}),
	}
	for i, s := range c.subs {
		r, err := s.AddEventHandlerWithOptions(serial, options)
		if err != nil {
			for j, done := range reg.subs {
				_ = c.subs[j].RemoveEventHandler(done)
			}
			return nil, fmt.Errorf("namespace %q: %w", c.namespaces[i], err)
		}
		reg.subs = append(reg.subs, r)
	}
	c.regs[reg] = struct{}{}
	if c.started {
		c.watchRegistration(reg)
	}
	return reg, nil
}

// watchRegistration starts the goroutine that closes reg.synced. c.mu is
// held and Run has started.
func (c *Informer) watchRegistration(reg *registration) {
	ctx := c.runCtx
	c.wg.Go(func() {
		for _, r := range reg.subs {
			select {
			case <-r.HasSyncedChecker().Done():
			case <-reg.removed:
				return
			case <-ctx.Done():
				return
			}
		}
		close(reg.synced)
	})
}

// RemoveEventHandler removes a registration returned by this informer from
// every namespace's informer. Like client-go's, it is idempotent.
func (c *Informer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	reg, ok := handle.(*registration)
	if !ok || reg.owner != c {
		return fmt.Errorf("invalid key type %T: not a registration of this multi-namespace informer", handle)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for i, r := range reg.subs {
		if err := c.subs[i].RemoveEventHandler(r); err != nil {
			errs = append(errs, fmt.Errorf("namespace %q: %w", c.namespaces[i], err))
		}
	}
	if _, live := c.regs[reg]; live {
		delete(c.regs, reg)
		close(reg.removed)
	}
	return errors.Join(errs...)
}

// GetStore returns the composite indexer; see [Informer.GetIndexer].
func (c *Informer) GetStore() cache.Store { return c.indexer }

// GetIndexer returns one [cache.Indexer] over every namespace's indexer.
// Reads route to one namespace where the key or the namespace index says
// which, and concatenate otherwise; writes route by the object's namespace.
func (c *Informer) GetIndexer() cache.Indexer { return c.indexer }

// GetController returns a controller that, like client-go's for a shared
// informer, does nothing when run and reports the composite's sync state.
func (c *Informer) GetController() cache.Controller { return c.controller }

// Run runs every namespace's informer until stopCh is closed; see
// [Informer.RunWithContext].
func (c *Informer) Run(stopCh <-chan struct{}) {
	c.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext runs every namespace's informer in its own goroutine and
// returns once all of them, and every helper goroutine of the composite,
// have ended. Like client-go's, a second call only logs a warning.
func (c *Informer) RunWithContext(ctx context.Context) {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		klog.FromContext(ctx).Info("Warning: the multi-namespace informer has started, run more than once is not allowed")
		return
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var helpers sync.WaitGroup
	c.started = true
	c.runCtx = runCtx
	c.wg = &helpers
	for reg := range c.regs {
		c.watchRegistration(reg)
	}
	helpers.Go(func() {
		for _, s := range c.subs {
			select {
			case <-s.HasSyncedChecker().Done():
			case <-runCtx.Done():
				return
			}
		}
		close(c.synced)
	})
	c.mu.Unlock()

	var subs sync.WaitGroup
	for _, s := range c.subs {
		subs.Go(func() { s.RunWithContext(runCtx) })
	}
	if len(c.subs) == 0 {
		<-ctx.Done()
	}
	subs.Wait()

	// Normally ctx has ended already; if every sub-informer returned on
	// its own (for example because it had been run elsewhere), this still
	// ends the helpers.
	cancel()
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	helpers.Wait()
}

// HasSynced reports whether every namespace's informer has synced.
func (c *Informer) HasSynced() bool {
	select {
	case <-c.synced:
		return true
	default:
	}
	if len(c.subs) == 0 {
		return false
	}
	for _, s := range c.subs {
		if !s.HasSynced() {
			return false
		}
	}
	return true
}

// HasSyncedChecker returns a checker whose Done channel is closed once
// every namespace's informer has synced. The goroutine that closes it ends
// with Run, so nothing leaks if the informer never syncs.
func (c *Informer) HasSyncedChecker() cache.DoneChecker { return c.checker }

// LastSyncResourceVersion returns the lowest of the namespaces' last
// synced resource versions, so the cache of every namespace is at least as
// recent as the value returned. It is empty until every namespace has
// one, and when a version is not a decimal number (resource versions are
// opaque; only etcd-backed servers' numbers are compared).
func (c *Informer) LastSyncResourceVersion() string {
	return lowestResourceVersion(len(c.subs), func(i int) string { return c.subs[i].LastSyncResourceVersion() })
}

// lowestResourceVersion returns the numerically lowest of n resource
// versions, or "" if there are none or one is empty or not a number.
func lowestResourceVersion(n int, rv func(i int) string) string {
	lowest, lowestN := "", uint64(0)
	for i := range n {
		v := rv(i)
		num, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return ""
		}
		if lowest == "" || num < lowestN {
			lowest, lowestN = v, num
		}
	}
	return lowest
}

// SetWatchErrorHandler sets handler on every namespace's informer; see
// [Informer.SetWatchErrorHandlerWithContext].
func (c *Informer) SetWatchErrorHandler(handler cache.WatchErrorHandler) error {
	return c.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) {
		handler(r, err)
	})
}

// SetWatchErrorHandlerWithContext sets handler on every namespace's
// informer. It is called once per failing namespace, one call at a time.
// Like client-go's, it fails once the informer has started, and then
// changes nothing.
func (c *Informer) SetWatchErrorHandlerWithContext(handler cache.WatchErrorHandlerWithContext) error {
	var mu sync.Mutex
	serial := func(ctx context.Context, r *cache.Reflector, err error) {
		mu.Lock()
		defer mu.Unlock()
		handler(ctx, r, err)
	}
	return c.configure(func(s cache.SharedIndexInformer) error { return s.SetWatchErrorHandlerWithContext(serial) })
}

// SetTransform sets handler on every namespace's informer. Like
// client-go's, it fails once the informer has started, and then changes
// nothing. handler may be called concurrently for objects of different
// namespaces.
func (c *Informer) SetTransform(handler cache.TransformFunc) error {
	return c.configure(func(s cache.SharedIndexInformer) error { return s.SetTransform(handler) })
}

// SetShardSelector sets selector on every namespace's informer, so that
// each lists and watches only the objects it matches; see
// SetShardSelector of cache.SharedInformer (client-go v0.38). It fails,
// changing nothing, once the composite has started, or if a namespace's
// informer has no SetShardSelector (client-go before v0.38).
func (c *Informer) SetShardSelector(selector sharding.Selector) error {
	for i, s := range c.subs {
		if _, ok := s.(shard.Setter); !ok {
			return fmt.Errorf("namespace %q: the informer %T has no SetShardSelector", c.namespaces[i], s)
		}
	}
	return c.configure(func(s cache.SharedIndexInformer) error {
		return s.(shard.Setter).SetShardSelector(selector)
	})
}

// configure applies set to every sub-informer, all or none: c.mu keeps
// Run from starting half-way.
func (c *Informer) configure(set func(cache.SharedIndexInformer) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return fmt.Errorf("informer has already started")
	}
	for i, s := range c.subs {
		if err := set(s); err != nil {
			return fmt.Errorf("namespace %q: %w", c.namespaces[i], err)
		}
	}
	return nil
}

// IsStopped reports whether the informer has stopped: every namespace's
// informer has, and Run has returned or is returning.
func (c *Informer) IsStopped() bool {
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		return true
	}
	if len(c.subs) == 0 {
		return false
	}
	for _, s := range c.subs {
		if !s.IsStopped() {
			return false
		}
	}
	return true
}

// AddIndexers adds indexers to every namespace's informer. As with
// client-go, this works before and after Run (existing objects are
// indexed) but not after the informer has stopped. Every sub-informer has
// the same indexers, so a conflict is reported by the first and leaves all
// unchanged.
func (c *Informer) AddIndexers(indexers cache.Indexers) error {
	for i, s := range c.subs {
		if err := s.AddIndexers(indexers); err != nil {
			return fmt.Errorf("namespace %q: %w", c.namespaces[i], err)
		}
	}
	return nil
}

// syncedChecker is the informer's [cache.DoneChecker].
type syncedChecker struct{ c *Informer }

func (s *syncedChecker) Name() string {
	name := "multi-namespace informer"
	if len(s.c.subs) > 0 {
		name = s.c.subs[0].HasSyncedChecker().Name()
	}
	return fmt.Sprintf("%s in namespaces %s", name, strings.Join(s.c.namespaces, ","))
}

func (s *syncedChecker) Done() <-chan struct{} { return s.c.synced }

// controller is the composite's [cache.Controller]; like client-go's
// dummyController for a shared informer, running it does nothing because
// the informer runs its own.
type controller struct{ c *Informer }

func (*controller) Run(<-chan struct{})                    {}
func (*controller) RunWithContext(context.Context)         {}
func (ct *controller) HasSynced() bool                     { return ct.c.HasSynced() }
func (ct *controller) HasSyncedChecker() cache.DoneChecker { return ct.c.HasSyncedChecker() }
func (ct *controller) LastSyncResourceVersion() string     { return ct.c.LastSyncResourceVersion() }

// registration is the composite's [cache.ResourceEventHandlerRegistration]:
// one sub-registration per namespace, in the informer's namespace order.
type registration struct {
	owner *Informer
	subs  []cache.ResourceEventHandlerRegistration

	synced   chan struct{} // closed once every sub-registration has synced
	removed  chan struct{} // closed by RemoveEventHandler
	shutdown chan struct{} // see ShutdownChan

	shutdownOnce sync.Once
}

// HasSynced reports whether every namespace's registration has synced:
// its informer has synced and its initial events have been delivered.
func (r *registration) HasSynced() bool {
	for _, s := range r.subs {
		if !s.HasSynced() {
			return false
		}
	}
	return true
}

// HasSyncedChecker returns a checker that is done once every namespace's
// registration has synced.
func (r *registration) HasSyncedChecker() cache.DoneChecker { return (*registrationChecker)(r) }

// ShutdownChan is closed once every namespace's delivery to the handler
// has ended, after RemoveEventHandler or when the informer stops; it makes
// [cache.ShutDownEventHandler] work on the composite. The goroutine that
// waits for the namespaces starts on the first call only.
func (r *registration) ShutdownChan() <-chan struct{} {
	r.shutdownOnce.Do(func() {
		var chans []<-chan struct{}
		for _, s := range r.subs {
			if sc, ok := s.(interface{ ShutdownChan() <-chan struct{} }); ok {
				chans = append(chans, sc.ShutdownChan())
			}
		}
		go func() {
			for _, ch := range chans {
				<-ch
			}
			close(r.shutdown)
		}()
	})
	return r.shutdown
}

type registrationChecker registration

func (r *registrationChecker) Name() string {
	return fmt.Sprintf("event handler registration of %s", r.owner.checker.Name())
}

func (r *registrationChecker) Done() <-chan struct{} { return r.synced }

// serialHandler delivers one event at a time to h, whichever namespace's
// informer it comes from.
type serialHandler struct {
	mu sync.Mutex
	h  cache.ResourceEventHandler
}

func (s *serialHandler) OnAdd(obj interface{}, isInInitialList bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h.OnAdd(obj, isInInitialList)
}

func (s *serialHandler) OnUpdate(oldObj, newObj interface{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h.OnUpdate(oldObj, newObj)
}

func (s *serialHandler) OnDelete(obj interface{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h.OnDelete(obj)
}

// CheckName is the one check of a namespace name.
func CheckName(ns string) error {
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return fmt.Errorf("%q is not a valid namespace name: %s", ns, strings.Join(msgs, "; "))
	}
	return nil
}

// Check checks a list of namespaces: at least one, each valid,
// none twice.
func Check(namespaces []string) error {
	var errs []error
	if len(namespaces) == 0 {
		errs = append(errs, errors.New("no namespace given"))
	}
	seen := make(map[string]bool, len(namespaces))
	for _, ns := range namespaces {
		if err := CheckName(ns); err != nil {
			errs = append(errs, err)
		}
		if seen[ns] {
			errs = append(errs, fmt.Errorf("namespace %q is given twice", ns))
		}
		seen[ns] = true
	}
	return errors.Join(errs...)
}
