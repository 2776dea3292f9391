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
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/shard"
	"github.com/kubeinformers/informers/internal/wake"
)

// New returns a cache.SharedIndexInformer over informers, one per namespace
// (map key = namespace name), whose set of namespaces is fixed. All must be
// new (not running) and cache objects of one type. Each must have been
// built with its own [cache.Indexers] map (New panics if two share one),
// since client-go's AddIndexers writes into that map.
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
func New(informers map[string]cache.SharedIndexInformer) *Informer {
	members := make([]*member, 0, len(informers))
	for ns, inf := range informers {
		members = append(members, &member{ns: ns, inf: inf})
	}
	return buildComposite(members, nil)
}

// Member is one namespace's informer of a composite whose namespaces can
// change ([NewChangeable]), and its drain (nil: the namespace's events
// cannot be drained, and a removal may drop those still on their way to a
// handler).
type Member struct {
	Informer cache.SharedIndexInformer
	Drain    *Drain
}

// Builder makes the composite's informer of a namespace (Add) and is told
// when one is gone (Removed, after the informer has stopped), so that what
// the factory keeps per namespace follows the set. Removing, if set, is
// told of a removal as it begins, before the namespace's informer is
// drained and stopped: what must stop counting the namespace before its
// informer stops (informertest.Settle, which reports an informer that
// stops under it as an error) cannot wait for Removed.
type Builder struct {
	Add      func(namespace string) Member
	Removing func(namespace string)
	Removed  func(namespace string)
}

// NewChangeable returns a composite over namespaces whose set
// [Informer.SetNamespaces] can change while it runs; b builds each
// namespace's informer, now and for namespaces added later.
func NewChangeable(namespaces []string, b Builder) *Informer {
	members := make([]*member, 0, len(namespaces))
	for _, ns := range namespaces {
		m := b.Add(ns)
		members = append(members, &member{ns: ns, inf: m.Informer, drain: m.Drain})
	}
	return buildComposite(members, &b)
}

func buildComposite(members []*member, b *Builder) *Informer {
	// A fixed order makes List and ListKeys deterministic across calls,
	// and error messages and the checker's name reproducible.
	slices.SortFunc(members, func(a, b *member) int { return strings.Compare(a.ns, b.ns) })
	shared := map[uintptr]string{}
	for _, m := range members {
		// client-go's indexer keeps the Indexers map it was built with,
		// and AddIndexers writes into it: informers built from one map
		// would see each other's new index functions without their
		// objects being indexed, and AddIndexers would fail with a
		// conflict after the first namespace.
		if idx := m.inf.GetIndexer().GetIndexers(); idx != nil {
			p := reflect.ValueOf(idx).Pointer()
			if other, ok := shared[p]; ok {
				panic(fmt.Sprintf("multinamespace.New: the informers of namespaces %q and %q share one cache.Indexers map; build each with its own (maps.Clone)", other, m.ns))
			}
			shared[p] = m.ns
		}
	}
	c := &Informer{
		builder: b,
		synced:  make(chan struct{}),
		regs:    map[*registration]struct{}{},
	}
	c.view.Store(newView(members))
	// Built once: GetIndexer, GetStore, GetController and HasSyncedChecker
	// are on hot paths (listers, WaitFor) and must not allocate.
	c.indexer = &indexer{view: &c.view, owner: c}
	c.controller = &controller{c: c}
	c.checker = &syncedChecker{c: c}
	return c
}

// member is one namespace's informer in the composite.
type member struct {
	ns    string
	inf   cache.SharedIndexInformer
	drain *Drain
	// Set under Informer.mu when the member runs: cancel stops it, done is
	// closed once its Run has returned; removing marks a member that
	// SetNamespaces stops on purpose.
	cancel   context.CancelFunc
	done     chan struct{}
	removing bool
}

// view is the composite's set of namespaces at one time. It is never
// changed: SetNamespaces stores a new one, so that readers (listers, on
// the hot path) load it with one atomic read and no lock.
type view struct {
	namespaces []string // sorted
	members    []*member
	subs       []cache.Indexer
	byNS       map[string]cache.Indexer
}

func newView(members []*member) *view {
	v := &view{
		namespaces: make([]string, len(members)),
		members:    members,
		subs:       make([]cache.Indexer, len(members)),
		byNS:       make(map[string]cache.Indexer, len(members)),
	}
	for i, m := range members {
		v.namespaces[i] = m.ns
		v.subs[i] = m.inf.GetIndexer()
		v.byNS[m.ns] = v.subs[i]
	}
	return v
}

// Informer is the composite returned by [New] and [NewChangeable]. Use it
// as a [cache.SharedIndexInformer]; SetNamespaces is its one addition.
type Informer struct {
	view       atomic.Pointer[view]
	indexer    cache.Indexer
	controller cache.Controller
	checker    cache.DoneChecker
	builder    *Builder // nil: the set is fixed

	// synced is closed once every sub-informer has synced; it stays
	// closed when a namespace is added later (HasSynced never goes back
	// to false, as client-go's does not).
	synced     chan struct{}
	syncedOnce sync.Once

	// setMu serializes SetNamespaces, which waits outside mu.
	setMu sync.Mutex

	// mu guards the fields below and orders configuration (SetTransform,
	// SetWatchErrorHandler), handler registration and SetNamespaces
	// against Run.
	mu      sync.Mutex
	started bool
	// ending is set once Run's context has ended: no member starts
	// afterwards, so that Run's wait sees every member goroutine.
	ending  bool
	stopped bool
	// runCtx ends when Run's context ends or every sub-informer has
	// returned; the composite's helper goroutines stop with it.
	runCtx  context.Context
	stopRun context.CancelFunc
	wg      *sync.WaitGroup
	members sync.WaitGroup
	running int
	// changed wakes the goroutines that wait for the members to sync
	// whenever the set changes, so that they start over.
	changed wake.Signal
	// regs are the live registrations; those added before Run get their
	// sync watcher when Run starts.
	regs map[*registration]struct{}
	// What was set on the composite, for members added later: the
	// transform, watch error handler and shard selector (set before Run)
	// and the indexers added since it was built.
	transform   cache.TransformFunc
	watchErrors cache.WatchErrorHandlerWithContext
	selector    sharding.Selector
	selectorSet bool
	indexers    cache.Indexers
}

var _ cache.SharedIndexInformer = &Informer{}

// Namespaces returns the composite's namespaces, sorted.
func (c *Informer) Namespaces() []string {
	return slices.Clone(c.view.Load().namespaces)
}

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
// informer, and on those of namespaces added later. The returned
// registration has synced once every namespace's registration has, and is
// what [Informer.RemoveEventHandler] accepts. If one namespace rejects the
// handler (its informer has stopped), the namespaces that accepted it are
// rolled back and the error is returned.
func (c *Informer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, fmt.Errorf("handler %v was not added to shared informer because it has stopped already", handler)
	}

	// Every namespace has its own delivery goroutine; without this a
	// handler written for one informer (sequential delivery) would be
	// called concurrently.
	reg := &registration{
		owner:    c,
		serial:   &serialHandler{h: handler},
		options:  options,
		subs:     map[*member]*memberRegistration{},
		synced:   make(chan struct{}),
		removed:  make(chan struct{}),
		shutdown: make(chan struct{}),
	}
	for _, m := range c.view.Load().members {
		if err := reg.addTo(m); err != nil {
			for m, done := range reg.subs {
				_ = m.inf.RemoveEventHandler(done.reg)
			}
			return nil, fmt.Errorf("namespace %q: %w", m.ns, err)
		}
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
		for {
			c.mu.Lock()
			changed := c.changed.Next()
			var checkers []cache.DoneChecker
			for _, m := range c.view.Load().members {
				if r := reg.subs[m]; r != nil {
					checkers = append(checkers, r.reg.HasSyncedChecker())
				}
			}
			c.mu.Unlock()
			switch waitAll(ctx, changed, reg.removed, checkers) {
			case waitDone:
				reg.closeSynced()
				return
			case waitEnded:
				return
			}
		}
	})
}

type waitResult int

const (
	waitDone waitResult = iota
	waitChanged
	waitEnded
)

// waitAll waits until every checker is done, the set changes, or ctx or
// gone ends the wait.
func waitAll(ctx context.Context, changed, gone <-chan struct{}, checkers []cache.DoneChecker) waitResult {
	for _, ch := range checkers {
		select {
		case <-ch.Done():
		case <-changed:
			return waitChanged
		case <-gone:
			return waitEnded
		case <-ctx.Done():
			return waitEnded
		}
	}
	return waitDone
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
	for m, r := range reg.subs {
		if err := m.inf.RemoveEventHandler(r.reg); err != nil {
			errs = append(errs, fmt.Errorf("namespace %q: %w", m.ns, err))
		}
	}
	if _, live := c.regs[reg]; live {
		delete(c.regs, reg)
		close(reg.removed)
		reg.serial.remove()
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

// RunWithContext runs every namespace's informer in its own goroutine, and
// those of namespaces added while it runs, and returns once all of them,
// and every helper goroutine of the composite, have ended. Like
// client-go's, a second call only logs a warning.
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
	c.runCtx, c.stopRun = runCtx, cancel
	c.wg = &helpers
	for reg := range c.regs {
		c.watchRegistration(reg)
	}
	helpers.Go(func() {
		for {
			c.mu.Lock()
			changed := c.changed.Next()
			members := c.view.Load().members
			checkers := make([]cache.DoneChecker, len(members))
			for i, m := range members {
				checkers[i] = m.inf.HasSyncedChecker()
			}
			c.mu.Unlock()
			switch waitAll(runCtx, changed, nil, checkers) {
			case waitDone:
				c.closeSynced()
				return
			case waitEnded:
				return
			}
		}
	})
	for _, m := range c.view.Load().members {
		c.start(m)
	}
	c.mu.Unlock()

	<-runCtx.Done()
	c.mu.Lock()
	c.ending = true
	c.mu.Unlock()
	c.members.Wait()

	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	helpers.Wait()
}

// start runs m under the composite's context; c.mu is held, Run has
// started and not ended. If every member returns on its own (for example
// because it had been run elsewhere), Run ends.
func (c *Informer) start(m *member) {
	ctx, cancel := context.WithCancel(c.runCtx)
	m.cancel, m.done = cancel, make(chan struct{})
	c.running++
	c.members.Go(func() {
		defer close(m.done)
		m.inf.RunWithContext(ctx)
		cancel()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.running--
		if c.running == 0 && !m.removing {
			c.stopRun()
		}
	})
}

func (c *Informer) closeSynced() { c.syncedOnce.Do(func() { close(c.synced) }) }

// HasSynced reports whether every namespace's informer has synced. Once
// true it stays true, also when a namespace is added later.
func (c *Informer) HasSynced() bool {
	select {
	case <-c.synced:
		return true
	default:
	}
	members := c.view.Load().members
	if len(members) == 0 {
		return false
	}
	for _, m := range members {
		if !m.inf.HasSynced() {
			return false
		}
	}
	c.closeSynced()
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
// opaque; only etcd-backed servers' numbers are compared). With one
// namespace it is that namespace's, as it is.
func (c *Informer) LastSyncResourceVersion() string {
	members := c.view.Load().members
	if len(members) == 1 {
		return members[0].inf.LastSyncResourceVersion()
	}
	return lowestResourceVersion(len(members), func(i int) string { return members[i].inf.LastSyncResourceVersion() })
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
// informer, and on those of namespaces added later. It is called once per
// failing namespace, one call at a time. Like client-go's, it fails once
// the informer has started, and then changes nothing.
func (c *Informer) SetWatchErrorHandlerWithContext(handler cache.WatchErrorHandlerWithContext) error {
	var mu sync.Mutex
	serial := func(ctx context.Context, r *cache.Reflector, err error) {
		mu.Lock()
		defer mu.Unlock()
		handler(ctx, r, err)
	}
	return c.configure(func(s cache.SharedIndexInformer) error { return s.SetWatchErrorHandlerWithContext(serial) },
		func() { c.watchErrors = serial })
}

// SetTransform sets handler on every namespace's informer, and on those of
// namespaces added later. Like client-go's, it fails once the informer has
// started, and then changes nothing. handler may be called concurrently
// for objects of different namespaces.
func (c *Informer) SetTransform(handler cache.TransformFunc) error {
	return c.configure(func(s cache.SharedIndexInformer) error { return s.SetTransform(handler) },
		func() { c.transform = handler })
}

// SetShardSelector sets selector on every namespace's informer, so that
// each lists and watches only the objects it matches; see
// SetShardSelector of cache.SharedInformer (client-go v0.38). It fails,
// changing nothing, once the composite has started, or if a namespace's
// informer has no SetShardSelector (client-go before v0.38).
func (c *Informer) SetShardSelector(selector sharding.Selector) error {
	for _, m := range c.view.Load().members {
		if _, ok := m.inf.(shard.Setter); !ok {
			return fmt.Errorf("namespace %q: the informer %T has no SetShardSelector", m.ns, m.inf)
		}
	}
	return c.configure(func(s cache.SharedIndexInformer) error {
		return s.(shard.Setter).SetShardSelector(selector)
	}, func() { c.selector, c.selectorSet = selector, true })
}

// configure applies set to every sub-informer, all or none, and then
// record, so that namespaces added later get it too: c.mu keeps Run from
// starting half-way.
func (c *Informer) configure(set func(cache.SharedIndexInformer) error, record func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return fmt.Errorf("informer has already started")
	}
	for _, m := range c.view.Load().members {
		if err := set(m.inf); err != nil {
			return fmt.Errorf("namespace %q: %w", m.ns, err)
		}
	}
	record()
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
	members := c.view.Load().members
	if len(members) == 0 {
		return false
	}
	for _, m := range members {
		if !m.inf.IsStopped() {
			return false
		}
	}
	return true
}

// AddIndexers adds indexers to every namespace's informer, and to those of
// namespaces added later. As with client-go, this works before and after
// Run (existing objects are indexed) but not after the informer has
// stopped. Every sub-informer has the same indexers, so a conflict is
// reported by the first and leaves all unchanged.
func (c *Informer) AddIndexers(indexers cache.Indexers) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.view.Load().members {
		if err := m.inf.AddIndexers(indexers); err != nil {
			return fmt.Errorf("namespace %q: %w", m.ns, err)
		}
	}
	if c.indexers == nil {
		c.indexers = cache.Indexers{}
	}
	maps.Copy(c.indexers, indexers)
	return nil
}

// syncedChecker is the informer's [cache.DoneChecker].
type syncedChecker struct{ c *Informer }

func (s *syncedChecker) Name() string {
	v := s.c.view.Load()
	name := "multi-namespace informer"
	if len(v.members) > 0 {
		name = v.members[0].inf.HasSyncedChecker().Name()
	}
	return fmt.Sprintf("%s in namespaces %s", name, strings.Join(v.namespaces, ","))
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
// one sub-registration per namespace. subs changes under the owner's mu.
type registration struct {
	owner   *Informer
	serial  *serialHandler
	options cache.HandlerOptions
	subs    map[*member]*memberRegistration

	synced     chan struct{} // closed once every sub-registration has synced
	syncedOnce sync.Once
	removed    chan struct{} // closed by RemoveEventHandler
	shutdown   chan struct{} // see ShutdownChan

	shutdownOnce sync.Once
}

// memberRegistration is a registration's handler on one namespace's
// informer: drained is closed once the namespace's drain marker has
// reached it (drain.go).
type memberRegistration struct {
	reg     cache.ResourceEventHandlerRegistration
	drained chan struct{}
	once    sync.Once
}

// addTo registers the registration's handler on m; the owner's mu is held.
func (r *registration) addTo(m *member) error {
	mr := &memberRegistration{drained: make(chan struct{})}
	sub, err := m.inf.AddEventHandlerWithOptions(&memberHandler{s: r.serial, mr: mr}, r.options)
	if err != nil {
		return err
	}
	mr.reg = sub
	r.subs[m] = mr
	return nil
}

func (r *registration) closeSynced() { r.syncedOnce.Do(func() { close(r.synced) }) }

// HasSynced reports whether every namespace's registration has synced:
// its informer has synced and its initial events have been delivered.
// Once true it stays true, also when a namespace is added later.
func (r *registration) HasSynced() bool {
	select {
	case <-r.synced:
		return true
	default:
	}
	c := r.owner
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.view.Load().members {
		if s := r.subs[m]; s != nil && !s.reg.HasSynced() {
			return false
		}
	}
	r.closeSynced()
	return true
}

// HasSyncedChecker returns a checker that is done once every namespace's
// registration has synced.
func (r *registration) HasSyncedChecker() cache.DoneChecker { return (*registrationChecker)(r) }

// ShutdownChan is closed once every namespace's delivery to the handler
// has ended, after RemoveEventHandler or when the informer stops; it makes
// [cache.ShutDownEventHandler] work on the composite. The goroutine that
// waits for the namespaces starts on the first call only, and waits for
// the namespaces of that time.
func (r *registration) ShutdownChan() <-chan struct{} {
	r.shutdownOnce.Do(func() {
		var chans []<-chan struct{}
		r.owner.mu.Lock()
		for _, s := range r.subs {
			if sc, ok := s.reg.(interface{ ShutdownChan() <-chan struct{} }); ok {
				chans = append(chans, sc.ShutdownChan())
			}
		}
		r.owner.mu.Unlock()
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
// informer it comes from. gone is set once the handler is removed, so
// that the deletions of a namespace removed at the same time skip it.
type serialHandler struct {
	mu   sync.Mutex
	gone bool
	h    cache.ResourceEventHandler
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

// departed delivers the deletions of a removed namespace, unless the
// handler has been removed.
func (s *serialHandler) departed(objs []interface{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return
	}
	for _, obj := range objs {
		s.h.OnDelete(obj)
	}
}

func (s *serialHandler) remove() {
	s.mu.Lock()
	s.gone = true
	s.mu.Unlock()
}

// memberHandler is a registration's handler on one namespace's informer:
// the serial handler, less the drain marker, which it records.
type memberHandler struct {
	s  *serialHandler
	mr *memberRegistration
}

func (h *memberHandler) OnAdd(obj interface{}, isInInitialList bool) { h.s.OnAdd(obj, isInInitialList) }
func (h *memberHandler) OnUpdate(oldObj, newObj interface{})         { h.s.OnUpdate(oldObj, newObj) }
func (h *memberHandler) OnDelete(obj interface{}) {
	if isDrainMarker(obj) {
		h.mr.once.Do(func() { close(h.mr.drained) })
		return
	}
	h.s.OnDelete(obj)
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
