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

package informer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/budget"
	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/memsize"
	"github.com/kubeinformers/informers/internal/meter"
	"github.com/kubeinformers/informers/internal/rvwait"
	"github.com/kubeinformers/informers/internal/settle"
)

// Hooks are what one informer reports to: the health of its sources, the
// sync gate of its first watches (syncgate.go), its notices, its metrics
// (internal/meter), and its watch-list streams while they send their
// initial events. The factory makes them for each informer (NewHooks) and
// hands them to Build, which wires them into every list/watch (wire) and
// watch error handler (watchErrors) of the informer; the root's Ready,
// SyncStatus, Notices, WaitForCacheSync and the membership's health check
// read them. A new kind of report is a field here, set up in NewHooks and
// wired in wire.
type Hooks struct {
	health  health
	gate    *syncGate // nil for an informer built by InformerFor's newFunc
	notices notices
	// Metrics are what the informer reports into under a metrics provider.
	Metrics *meter.Hooks
	// Streams is how the informer's watch-list streams are doing, so that
	// Ready names a stream that is slow to end or stalled
	// (internal/listwatch/stall.go) instead of a bare "not synced".
	Streams listwatch.Streams
	// Versions are the caches of each namespace the informer watches,
	// which Build adds, for the factory's WaitForResourceVersion
	// (internal/rvwait).
	Versions rvwait.Sources
	// settle follows each namespace's informer over a fake client, for
	// informertest.Settle (settle.go); empty over a real client, whose
	// client is then kept to name it.
	settle   []*settle.Informer
	settleMu sync.Mutex // guards settle and client, which SetNamespaces changes
	client   any
	// absence is whether the informer's resource is served, under
	// WithAPIDiscovery (absence.go).
	absence absence
	// userWatchErrors is the handler given to the informer's
	// SetWatchErrorHandler, which watchErrors calls in place of
	// client-go's default one.
	userWatchErrors userWatchErrors
	// Memory estimates the heap the informer's cache retains
	// (internal/memsize): its objects are observed as they enter it.
	Memory *memsize.Meter
	// Budget is the informer's memory budget (budget.go).
	Budget *budget.Account
}

// NewHooks returns the hooks of the informer of spec, in a factory whose
// shard metrics shardMetrics points to; metricsOn reports whether a
// metrics provider is installed.
func NewHooks(spec *Spec, shardMetrics *atomic.Pointer[meter.Shard], metricsOn func() bool) *Hooks {
	mem := memsize.NewMeter(len(spec.Indexers))
	h := &Hooks{Metrics: meter.NewHooks(shardMetrics, metricsOn, mem), Memory: mem}
	h.Budget = h.newAccount(spec, mem)
	h.absence.init(spec.Name, spec.Resource, h.Metrics)
	if spec.NewInformer == nil {
		h.gate = newSyncGate(spec.Namespaces)
	}
	return h
}

// NotSynced says why an informer that has not synced has not: refused,
// the option that keeps it from running; its first watch's failure; the
// last error it got; its watch-list stream's progress; or nothing known.
func (h *Hooks) NotSynced(refused error) string {
	if refused != nil {
		return refused.Error()
	}
	if err := h.Stopped(); err != nil {
		return err.Error()
	}
	if h.absence.is() {
		return h.absence.reason()
	}
	if err := h.FirstWatchFailure(); err != nil {
		return fmt.Sprintf("not synced: the first watch failed: %v", err)
	}
	if err := h.Health(); err != nil {
		return fmt.Sprintf("not synced: %v", err)
	}
	if msg := h.Streams.Waiting(); msg != "" {
		return "not synced: " + msg
	}
	return "not synced"
}

// Health returns the last error of each failing list/watch source of the
// informer, or nil.
func (h *Hooks) Health() error { return h.health.last() }

// FirstWatchFailure returns the error that keeps the informer's first
// watch from returning, when no retry will fix it; nil otherwise.
func (h *Hooks) FirstWatchFailure() error {
	if h.gate == nil {
		return nil
	}
	return h.gate.failure()
}

// FirstWatchFailed is closed once FirstWatchFailure has an error; nil for
// an informer built by InformerFor's newFunc.
func (h *Hooks) FirstWatchFailed() <-chan struct{} {
	if h.gate == nil {
		return nil
	}
	return h.gate.failedCh
}

// Notices returns the informer's notices so far, and says when it waits
// for its resource.
func (h *Hooks) Notices() []string {
	out := h.notices.all()
	if st := h.Budget.StoppedAt(); st != nil {
		out = append(out, st.Detail()) // the caller names the informer
	}
	if h.gate == nil && h.Budget.Limited() {
		out = append(out, "built by InformerFor's newFunc, whose list and watch the factory does not run: its estimate counts toward the memory budget, which cannot stop it")
	}
	if h.absence.is() {
		out = append(out, h.absence.reason())
	}
	return out
}

// Absent reports whether the informer waits for its resource, which the
// server does not serve (WithAPIDiscovery): it is then neither synced nor
// failing.
func (h *Hooks) Absent() bool { return h.absence.is() }

// Waiting returns a channel that is closed while the informer waits for
// its resource, or once it starts to.
func (h *Hooks) Waiting() <-chan struct{} { return h.absence.closedWhileWaiting() }

// wire sets the hooks of one of the informer's list/watch sources (a
// namespace, named only where there are several).
func (h *Hooks) wire(cfg *listwatch.Config, source string) {
	cfg.Observe = func(err error) { h.health.observe(source, err) }
	cfg.Watched = h.gate.watched(cfg.Namespace)
	cfg.Notice = func(msg string) { h.notices.list.CompareAndSwap(nil, &msg) }
	cfg.Count, cfg.HandedOver = h.Metrics.CountRequest, h.Metrics.HandedOver
	cfg.Streams = &h.Streams
	cfg.Absent = func(absent bool) { h.absence.set(source, absent) }
	cfg.Forbidden = func(err error) { h.logForbidden(source, err) }
	cfg.Budget, cfg.Released = h.Budget, h.Metrics.Released
}

// watchErrors records the errors of an informer's watch stream, which
// reach the handler rather than the list/watch calls, for Ready; then
// hands them to the handler the user set on the informer
// (SetWatchErrorHandler), or logs them as client-go does.
func (h *Hooks) watchErrors(name string, informer cache.SharedIndexInformer, source string) {
	if err := informer.SetWatchErrorHandlerWithContext(h.watchErrorHandler(source)); err != nil {
		// Only a running informer refuses, and a new one is not running;
		// without the handler Ready just knows less.
		klog.Background().Error(err, "Cannot watch the errors of an informer", "informer", name)
	}
}

// watchErrorHandler is the watch error handler of the informer of source.
func (h *Hooks) watchErrorHandler(source string) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, r *cache.Reflector, err error) {
		if errors.Is(err, listwatch.ErrNotServed) || isOverBudget(err) {
			// The informer relists to empty its cache and waits for its
			// resource, or for a larger budget; absence.go or budget.go
			// logged it once. It is no error.
			return
		}
		h.health.observe(source, err)
		if user := h.userWatchErrors.get(); user != nil {
			user(ctx, r, err)
			return
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}
}

// userWatchErrors is the watch error handler a user sets on an informer,
// which the factory's own handler calls; like client-go's, it can be set
// until the informer starts.
type userWatchErrors struct {
	mu      sync.Mutex
	started bool
	handler cache.WatchErrorHandlerWithContext
}

func (u *userWatchErrors) set(handler cache.WatchErrorHandlerWithContext) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.started {
		return errors.New("informer has already started") // client-go's words
	}
	u.handler = handler
	return nil
}

func (u *userWatchErrors) start() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.started = true
}

func (u *userWatchErrors) get() cache.WatchErrorHandlerWithContext {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.handler
}

// notices are the conditions an informer reports once each, for Notices.
type notices struct {
	// shard says that the server ignored the shard selector
	// (internal/shard).
	shard atomic.Pointer[string]
	// list says that an informer meant to stream lists instead
	// (internal/listwatch).
	list atomic.Pointer[string]
}

// all returns the informer's notices so far.
func (n *notices) all() []string {
	var out []string
	for _, p := range []*atomic.Pointer[string]{&n.shard, &n.list} {
		if msg := p.Load(); msg != nil {
			out = append(out, *msg)
		}
	}
	return out
}

// health is the last error each of an informer's list/watch sources (one
// per namespace) got, until a later list or watch of it succeeds.
type health struct {
	mu   sync.Mutex
	errs map[string]error
}

func (h *health) observe(source string, err error) {
	// An expired resource version (410) is how a watch normally ends
	// after etcd compaction; the reflector relists at once. It says
	// nothing about whether the informer can serve.
	if err != nil && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || errors.Is(err, context.Canceled)) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		delete(h.errs, source)
		return
	}
	if h.errs == nil {
		h.errs = make(map[string]error)
	}
	h.errs[source] = err
}

// of returns the last error of source, or nil.
func (h *health) of(source string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.errs[source]
}

// last returns the errors of the failing sources, or nil.
func (h *health) last() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch len(h.errs) {
	case 0:
		return nil
	case 1:
		for source, err := range h.errs {
			if source == "" {
				return err
			}
		}
	}
	var parts []string
	for _, source := range slices.Sorted(maps.Keys(h.errs)) {
		parts = append(parts, fmt.Sprintf("namespace %s: %v", source, h.errs[source]))
	}
	return errors.New(strings.Join(parts, "; "))
}
