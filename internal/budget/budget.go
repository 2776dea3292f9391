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

// Package budget caps the memory of informers: a Pool is a budget shared
// by every informer of a factory (and by the factories crcache builds from
// the same option), an Account is one informer's part of it, with a budget
// of its own if its resource has one.
//
// The list and watch layer (internal/listwatch) asks the Account before an
// informer's cache would grow: for each page of a LIST, each object of a
// watch-list stream as it arrives, and each watch event that adds an
// object. The estimate is the number of objects the informer would hold
// times the bytes per object its Meter measured (internal/memsize). When
// it would pass a budget, the Account stops: the informer's list fails
// before the reflector has the whole list, its watch ends, its cache is
// emptied, and its next list waits (no request, no timer) until the budget
// is raised or the informer narrowed (Retry). Nothing retries on its own:
// the same list would pass the same budget again.
package budget

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// ErrOverBudget marks the error of an informer stopped over its memory
// budget.
var ErrOverBudget = errors.New("over its memory budget")

// Meter is what estimates the heap bytes per cached object of an informer
// (internal/memsize's Meter).
type Meter interface {
	PerObject() int64
	Observe(obj any)
	Observed() uint64
}

// Pool is a budget shared by informers: its limit caps the sum of their
// estimates. Its zero value has no limit. Safe for concurrent use.
type Pool struct {
	// Note, if set, is a notice about the pool, such as why it has no
	// limit; set before the pool is shared.
	Note string

	limit atomic.Int64
	used  atomic.Int64

	mu       sync.Mutex
	accounts map[*Account]struct{}
}

// NewPool returns a pool of limit bytes; 0 means none.
func NewPool(limit int64) *Pool {
	p := &Pool{}
	p.limit.Store(limit)
	return p
}

// Limit returns the pool's limit; 0 means none.
func (p *Pool) Limit() int64 {
	if p == nil {
		return 0
	}
	return p.limit.Load()
}

// Notice returns the pool's Note; "" for a nil pool.
func (p *Pool) Notice() string {
	if p == nil {
		return ""
	}
	return p.Note
}

// Used returns the sum of the estimates of the pool's informers.
func (p *Pool) Used() int64 {
	if p == nil {
		return 0
	}
	return p.used.Load()
}

// Set is SetLimit for a factory's SetMemoryBudget: an error for no pool
// or a negative limit.
func (p *Pool) Set(limit int64) error {
	if p == nil {
		return errors.New("informers: SetMemoryBudget: the factory has no WithMemoryBudget or WithMemoryBudgetFraction")
	}
	if err := CheckBytes(limit, true); err != nil {
		return fmt.Errorf("informers: SetMemoryBudget(%d): %w", limit, err)
	}
	p.SetLimit(limit)
	return nil
}

// Choose is what a factory's budget option, option(value), does: pool,
// which the option made with err, becomes the factory's, which held
// current (nil: none). On err, or when the factory had a budget already,
// current stays and the error names the option.
func Choose(current, pool *Pool, err error, option string, value any) (*Pool, error) {
	if err == nil && current != nil {
		err = errors.New("a memory budget was given already: give one")
	}
	if err != nil {
		return current, fmt.Errorf("%s(%v): %w", option, value, err)
	}
	return pool, nil
}

// SetLimit sets the pool's limit (0: none) and makes every informer of the
// pool that stopped over a budget try again.
func (p *Pool) SetLimit(limit int64) {
	p.limit.Store(limit)
	p.mu.Lock()
	accounts := slices.Collect(maps.Keys(p.accounts))
	p.mu.Unlock()
	for _, a := range accounts {
		a.Retry()
	}
}

// add charges delta bytes unless that passes the limit; it returns the
// use it would have made.
func (p *Pool) add(delta int64) (int64, bool) {
	for {
		used := p.used.Load()
		next := used + delta
		if limit := p.limit.Load(); delta > 0 && limit > 0 && next > limit {
			return next, false
		}
		if p.used.CompareAndSwap(used, next) {
			return next, true
		}
	}
}

// Stopped is the error of an informer stopped over a budget.
type Stopped struct {
	// Resource names the informer.
	Resource string
	// Objects is how many objects it would have held, Bytes their
	// estimate, Budget the budget it would have passed.
	Objects int
	Bytes   int64
	Budget  int64
	// Shared says the budget is the factory's (WithMemoryBudget), of
	// which Others were held by its other informers.
	Shared bool
	Others int64
	// Narrow says what would narrow the informer.
	Narrow string
}

func (s *Stopped) Error() string { return s.Resource + ": " + s.Detail() }

// Detail is the error without the resource's name.
func (s *Stopped) Detail() string {
	which := "its resource's MemoryBudget"
	if s.Shared {
		which = fmt.Sprintf("the factory's WithMemoryBudget, %s of it held by other informers", MiB(s.Others))
	}
	return fmt.Sprintf("stopped %s: %d objects seen, estimated %s, budget %s (%s); its cache was released and it makes no request until the budget is raised or the informer narrowed: %s",
		ErrOverBudget.Error(), s.Objects, MiB(s.Bytes), MiB(s.Budget), which, s.Narrow)
}

// Unwrap makes errors.Is(err, ErrOverBudget) hold.
func (s *Stopped) Unwrap() error { return ErrOverBudget }

// MiB formats bytes as mebibytes, or bytes below one.
func MiB(b int64) string {
	if b < 1<<20 {
		return fmt.Sprintf("%d bytes", b)
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// Account is one informer's part of its budgets: the objects each of its
// sources (one per namespace) holds, and whether it stopped. Safe for
// concurrent use.
type Account struct {
	resource string
	narrow   string
	pool     *Pool
	meter    Meter
	// onStop, if set, is told each stop, and onRetry each retry, outside
	// the lock.
	onStop  func(*Stopped)
	onRetry func()

	limit atomic.Int64

	mu      sync.Mutex
	counts  map[string]int
	charged int64
	stopped *Stopped
	closed  bool
	// done is closed when the account stops; wake when it is told to
	// retry. Each is replaced by a fresh one at the other.
	done, wake chan struct{}
}

// Config is what an Account is made of.
type Config struct {
	// Resource names the informer in errors; Narrow says what would
	// narrow it, such as "namespaces, a label or field selector".
	Resource, Narrow string
	// Pool is the factory's budget, nil for none; Limit the informer's
	// own, 0 for none.
	Pool  *Pool
	Limit int64
	Meter Meter
	// OnStop and OnRetry, if set, are told each stop and each retry.
	OnStop  func(*Stopped)
	OnRetry func()
}

// NewAccount returns the account of one informer, registered with its pool.
func NewAccount(cfg Config) *Account {
	a := &Account{
		resource: cfg.Resource, narrow: cfg.Narrow, pool: cfg.Pool, meter: cfg.Meter,
		onStop: cfg.OnStop, onRetry: cfg.OnRetry,
		counts: map[string]int{}, done: make(chan struct{}), wake: make(chan struct{}),
	}
	a.limit.Store(cfg.Limit)
	if cfg.Pool != nil {
		cfg.Pool.mu.Lock()
		if cfg.Pool.accounts == nil {
			cfg.Pool.accounts = map[*Account]struct{}{}
		}
		cfg.Pool.accounts[a] = struct{}{}
		cfg.Pool.mu.Unlock()
	}
	return a
}

// Close releases what the account holds of its pool and leaves the pool:
// the informer was removed, or its factory shut down. The pool's informers
// stopped over its limit try again, as when it is raised: the room it
// gave back may hold them.
func (a *Account) Close() {
	if a == nil {
		return
	}
	a.mu.Lock()
	freed := a.charged > 0
	a.release()
	a.closed = true
	a.mu.Unlock()
	if a.pool == nil {
		return
	}
	a.pool.mu.Lock()
	delete(a.pool.accounts, a)
	a.pool.mu.Unlock()
	if freed {
		a.pool.retryShared()
	}
}

// retryShared makes the pool's informers stopped over its limit try
// again: an account gave back room that may hold them.
func (p *Pool) retryShared() {
	p.mu.Lock()
	accounts := slices.Collect(maps.Keys(p.accounts))
	p.mu.Unlock()
	for _, o := range accounts {
		if st := o.StoppedAt(); st != nil && st.Shared {
			o.Retry()
		}
	}
}

// Limited reports whether a budget applies to the informer now.
func (a *Account) Limited() bool {
	return a != nil && (a.limit.Load() > 0 || a.pool.Limit() > 0)
}

// Limit returns the informer's budget: its own if it has one, else the
// pool's; 0 for none.
func (a *Account) Limit() int64 {
	if a == nil {
		return 0
	}
	if l := a.limit.Load(); l > 0 {
		return l
	}
	return a.pool.Limit()
}

// SetLimit sets the informer's own budget (0: none) and makes it try
// again if it stopped.
func (a *Account) SetLimit(limit int64) {
	a.limit.Store(limit)
	a.Retry()
}

// perObject is the meter's estimate per object; 0 without a meter.
func (a *Account) perObject() int64 {
	if a.meter == nil {
		return 0
	}
	return a.meter.PerObject()
}

// Meter returns the informer's meter.
func (a *Account) Meter() Meter { return a.meter }

// Stopped returns why the informer stopped, or nil.
func (a *Account) Stopped() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped == nil {
		return nil
	}
	return a.stopped
}

// StoppedAt returns why the informer stopped, or nil.
func (a *Account) StoppedAt() *Stopped {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopped
}

// Done returns a channel closed when the informer stops (at once if it
// has).
func (a *Account) Done() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.done
}

// Set records that source would hold n objects, unless that passes a
// budget: then the informer stops, and Set returns why.
func (a *Account) Set(source string, n int) error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	if a.stopped != nil {
		defer a.mu.Unlock()
		return a.stopped
	}
	return a.setLocked(source, n)
}

// Add records that source would hold d more objects (d < 0: fewer), as
// Set does.
func (a *Account) Add(source string, d int) error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	if a.stopped != nil {
		defer a.mu.Unlock()
		return a.stopped
	}
	return a.setLocked(source, max(0, a.counts[source]+d))
}

// setLocked is Set under a.mu, which it unlocks.
func (a *Account) setLocked(source string, n int) error {
	total := n
	for s, c := range a.counts {
		if s != source {
			total += c
		}
	}
	bytes := int64(total) * a.perObject()
	st := &Stopped{Resource: a.resource, Objects: total, Bytes: bytes, Narrow: a.narrow}
	if own := a.limit.Load(); own > 0 && bytes > own {
		st.Budget = own
		return a.stopLocked(st)
	}
	if a.pool != nil {
		if used, ok := a.pool.add(bytes - a.charged); !ok {
			st.Budget, st.Shared = a.pool.Limit(), true
			st.Others = used - bytes
			return a.stopLocked(st)
		}
	}
	a.charged = bytes
	a.counts[source] = n
	a.mu.Unlock()
	return nil
}

// stopLocked stops the informer with st; it unlocks a.mu.
func (a *Account) stopLocked(st *Stopped) error {
	a.stopped = st
	a.release()
	close(a.done)
	a.wake = make(chan struct{})
	a.mu.Unlock()
	if a.onStop != nil {
		a.onStop(st)
	}
	return st
}

// release gives back what the informer holds of its pool. The caller
// holds a.mu.
func (a *Account) release() {
	if a.pool != nil && a.charged != 0 {
		a.pool.add(-a.charged)
	}
	a.charged = 0
	clear(a.counts)
}

// Charge records that the informer holds d more objects (d < 0: fewer;
// 0: their estimate per object changed) where its budget cannot stop it:
// an informer built by InformerFor's newFunc, whose list and watch are its
// own. Their estimate counts in the pool, so that the pool's other
// informers stop before the sum passes its limit; this one never stops.
// After Close it does nothing.
func (a *Account) Charge(d int) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	n := max(0, a.counts[""]+d)
	a.counts[""] = n
	bytes := int64(n) * a.perObject()
	if a.pool != nil {
		a.pool.used.Add(bytes - a.charged)
	}
	a.charged = bytes
}

// Forget drops what source holds: its namespace is no longer watched.
// The pool's informers stopped over its limit try again, as on Close.
func (a *Account) Forget(source string) {
	if a == nil {
		return
	}
	if a.forget(source) && a.pool != nil {
		a.pool.retryShared()
	}
}

// forget is Forget under a.mu; it reports whether room was given back.
func (a *Account) forget(source string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.counts, source)
	if a.stopped != nil {
		return false
	}
	total := 0
	for _, c := range a.counts {
		total += c
	}
	bytes := int64(total) * a.perObject()
	if a.pool != nil {
		if _, ok := a.pool.add(bytes - a.charged); !ok {
			return false
		}
	}
	freed := bytes < a.charged
	a.charged = bytes
	return freed
}

// Retry makes a stopped informer try again: its waiting lists go on.
func (a *Account) Retry() {
	if a == nil {
		return
	}
	a.mu.Lock()
	if a.stopped == nil {
		a.mu.Unlock()
		return
	}
	a.stopped = nil
	close(a.wake)
	a.done = make(chan struct{})
	a.mu.Unlock()
	if a.onRetry != nil {
		a.onRetry()
	}
}

// Wait returns at once unless the informer stopped; then it calls release
// (which empties the cache) and waits until it is told to retry, or ctx is
// done.
func (a *Account) Wait(ctx context.Context, release func()) error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	stopped, wake := a.stopped != nil, a.wake
	a.mu.Unlock()
	if !stopped {
		return nil
	}
	if release != nil {
		release()
	}
	select {
	case <-wake:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Narrowing says what would narrow an informer, given what it has: the
// remedies it has not used yet.
func Narrowing(namespaced, allNamespaces, selector, keepFields, metadataOnly bool) string {
	var out []string
	if namespaced && allNamespaces {
		out = append(out, "fewer namespaces (WithNamespaces, ResourceOptions.Namespaces)")
	}
	if !selector {
		out = append(out, "a label or field selector (ResourceOptions.LabelSelector, FieldSelector)")
	}
	if !keepFields && !metadataOnly {
		out = append(out, "ResourceOptions.KeepFields", "a metadata-only informer")
	}
	out = append(out, "or raise the budget (SetMemoryBudget, SetResourceMemoryBudget)")
	return strings.Join(out, ", ")
}
