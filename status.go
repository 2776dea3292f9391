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

	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/settle"
)

// This file reports on the factory's informers without making a request:
// Ready, SyncStatus and Notices, and the hooks of each informer they read.

// hooks are what one informer reports to: the health of its sources, the
// sync gate of its first watches (informer.go), its notices, and its
// watch-list streams while they send their initial events. The
// factory makes them for each informer (newHooks) and hands them to the
// build step, which wires them into every list/watch (wire) and watch
// error handler (watchErrors) of the informer; Ready, SyncStatus, Notices,
// WaitForCacheSync and the membership's health check read them. A new
// kind of report (metrics, say) is a field here, set up in newHooks and
// wired in wire.
type hooks struct {
	health  health
	gate    *syncGate // nil for an informer built by InformerFor's newFunc
	notices notices
	metrics metricsHooks // metrics.go
	// streams is how the informer's watch-list streams are doing, so that
	// Ready names a stream that is slow to end or stalled
	// (internal/listwatch/stall.go) instead of a bare "not synced".
	streams listwatch.Streams
	// settle follows each namespace's informer over a fake client, for
	// informertest.Settle (testkit.go); empty over a real client.
	settle []*settle.Informer
}

// newHooks returns the hooks of the informer of spec.
func newHooks(spec *informerSpec) *hooks {
	h := &hooks{}
	if spec.newInformer == nil {
		h.gate = newSyncGate(spec.namespaces)
	}
	return h
}

// wire sets the hooks of one of the informer's list/watch sources (a
// namespace, named only where there are several).
func (h *hooks) wire(cfg *listwatch.Config, source string) {
	cfg.Observe = func(err error) { h.health.observe(source, err) }
	cfg.Watched = h.gate.watched(cfg.Namespace)
	cfg.Notice = func(msg string) { h.notices.list.CompareAndSwap(nil, &msg) }
	cfg.Count, cfg.HandedOver = h.metrics.countRequest, h.metrics.handedOver // metrics.go
	cfg.Streams = &h.streams
}

// watchErrors records the errors of an informer's watch stream, which
// reach the handler rather than the list/watch calls, for Ready; and logs
// them as client-go does.
func (h *hooks) watchErrors(id InformerID, informer cache.SharedIndexInformer, source string) {
	if err := informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		h.health.observe(source, err)
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}); err != nil {
		// Only a running informer refuses, and a new one is not running;
		// without the handler Ready just knows less.
		klog.Background().Error(err, "Cannot watch the errors of an informer", "informer", id)
	}
}

// notices are the conditions an informer reports once each, for Notices.
type notices struct {
	// shard says that the server ignored the shard selector (shard.go).
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

// SyncStatus reports, for every informer Start has run, whether it has
// synced (see [Factory.WaitForCacheSyncWithContext] for what that means).
// Unlike WaitForCacheSync's map it tells resources of the same Go type
// apart, such as two custom resources.
func (f *sharedInformerFactory) SyncStatus() map[InformerID]bool {
	started := f.started()
	out := make(map[InformerID]bool, len(started))
	for _, e := range started {
		out[e.id] = e.informer.HasSynced()
	}
	return out
}

// Ready returns nil when every informer Start has run has synced and its
// last list or watch succeeded. Otherwise it returns one error that names
// each informer that is not ready with the last error it got, such as
//
//	informers not ready: pods (v1): not synced: pods is forbidden: User "x" cannot list resource "pods" ...
//
// An informer that an invalid option keeps from running is named with the
// option's error; one whose watch-list stream is still sending its
// initial events, with the stream's progress ("watch-list stream: 2
// objects received, no end bookmark for 8 s"; see [ListMode] for a stream
// that stalls). Ready makes no request and takes no lock that an
// informer holds, so it can back a /readyz endpoint; see the example of
// [Factory].
func (f *sharedInformerFactory) Ready() error {
	var problems []string
	for _, e := range f.started() {
		if !e.informer.HasSynced() {
			problems = append(problems, describe(e))
		} else if err := e.hooks.health.last(); err != nil {
			problems = append(problems, fmt.Sprintf("%s: failing: %v", e.id, err))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	return fmt.Errorf("informers not ready: %s", strings.Join(problems, "; "))
}

// describe says why e has not synced: the option that keeps it from
// running, its first watch's failure, or the last error it got, if any.
func describe(e *entry) string {
	if e.refused != nil {
		return fmt.Sprintf("%s: %v", e.id, e.refused)
	}
	if e.hooks.gate != nil {
		if err := e.hooks.gate.failure(); err != nil {
			return fmt.Sprintf("%s: not synced: the first watch failed: %v", e.id, err)
		}
	}
	if err := e.hooks.health.last(); err != nil {
		return fmt.Sprintf("%s: not synced: %v", e.id, err)
	}
	if msg := e.hooks.streams.Waiting(); msg != "" {
		return fmt.Sprintf("%s: not synced: %s", e.id, msg)
	}
	return fmt.Sprintf("%s: not synced", e.id)
}

// Notices returns what an operator should know about the factory's
// informers that does not make them unready, such as a server that ignored
// the shard selector (the informers then filter on the client). Each
// informer reports a condition once.
func (f *sharedInformerFactory) Notices() []string {
	f.lock.Lock()
	defer f.lock.Unlock()
	var out []string
	for _, e := range f.all() {
		for _, msg := range e.hooks.notices.all() {
			out = append(out, fmt.Sprintf("%s: %s", e.id, msg))
		}
	}
	out = append(out, f.unservedOptions()...)
	slices.Sort(out)
	return out
}
