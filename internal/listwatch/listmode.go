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
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/kubeinformers/informers/internal/settle"
)

// Mode is how an informer gets its initial state: client-go's reflector
// either opens a watch-list stream (a watch with sendInitialEvents) or
// lists, page by page. The reflector decides once, when it is built:
// it streams only if client-go's WatchListClient feature gate is on (the
// default in v0.37) and its ListerWatcher does not declare that it lacks
// watch-list semantics. A ListerWatcher can turn the stream off, never on;
// so ModeStream streams only where the gate allows it.
type Mode int

const (
	// ModeAuto is client-go's process-wide choice: the stream if the
	// WatchListClient gate is on, else a LIST with resourceVersion=0.
	ModeAuto Mode = iota
	// ModeStream is the watch-list stream. Without the gate, or when the
	// server refuses the stream, the reflector lists instead (ModeList),
	// and the list/watch says so once through Config.Notice.
	ModeStream
	// ModeList is client-go's LIST: the first request has
	// resourceVersion=0 and a limit, so the API server may answer from its
	// watch cache, possibly slightly stale, and often in one page.
	ModeList
	// ModeConsistentList is a LIST whose first request has no
	// resourceVersion: a consistent read, paged (limit 500).
	ModeConsistentList
)

// String names the mode as the root package's ListMode does.
func (m Mode) String() string {
	switch m {
	case ModeAuto:
		return "Auto"
	case ModeStream:
		return "Stream"
	case ModeList:
		return "List"
	case ModeConsistentList:
		return "ConsistentList"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// StreamGate reports whether client-go's WatchListClient feature gate is
// on in this process: without it no reflector streams.
func StreamGate() bool {
	return clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)
}

// Semantics returns what to pass as the client to
// [cache.ToListWatcherWithWatchListSemantics] for an informer in mode:
// client itself, or for the LIST modes a value that declares the lack of
// watch-list semantics, which is how a reflector is told to list; or, for
// a fake client that informertest.ServeWatchList made stream watch lists
// (internal/settle), a value that declares nothing, so that the
// reflector streams as over a server.
func Semantics(client any, mode Mode) any {
	if mode == ModeList || mode == ModeConsistentList {
		return noStream{}
	}
	if !settle.IsFake(client) {
		return client
	}
	if v := settle.WatchListOf(client); v != nil {
		return streamingFake{v}
	}
	return client
}

// streamingFake is the watch-list semantics of a fake client that streams
// watch lists: nothing declared, as a real client; v makes the streams.
type streamingFake struct{ v *settle.Streaming }

// FakeWatchList returns what makes the watch-list streams of an informer
// whose semantics (from Semantics) are those of a fake client that
// streams them, or nil. The informer's follower
// (internal/informer/settle.go) makes them when and only when the
// reflector was told that it streams.
func FakeWatchList(semantics any) *settle.Streaming {
	if s, ok := semantics.(streamingFake); ok {
		return s.v
	}
	return nil
}

// lacksStream reports whether client declares that it cannot stream, and
// was not made to (Semantics).
func lacksStream(client any) bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(client) && settle.WatchListOf(client) == nil
}

// noStream declares that a ListerWatcher has no watch-list semantics
// (k8s.io/client-go/util/watchlist).
type noStream struct{}

func (noStream) IsWatchListSemanticsUnSupported() bool { return true }

// listMode is the state of one list/watch's mode: the request rewrite of
// ModeConsistentList and the stream-fallback notice.
type listMode struct {
	cfg *Config
	// noticed is set once the stream fallback was reported.
	noticed atomic.Bool
	// streamErr is the last error of a watch-list stream request.
	streamErr atomic.Pointer[error]
	// abandoned is set once a stream stalled (stall.go): the informer
	// lists from then on, with a consistent LIST.
	abandoned atomic.Bool
	// absence, if set, says whether the resource is served (absent.go):
	// a stream that fails or a list made because the resource is gone is
	// not a stream the server refused.
	absence *absence
	// fake is whether the client is one of client-go's fakes, which the
	// test kit may make stream watch lists (settle.IsFake).
	fake bool
}

// watchStream watches over w, a watch-list stream the server accepted.
func (m *listMode) watchStream(ctx context.Context, w watch.Interface) watch.Interface {
	st := m.cfg.Streams.begin(m.cfg.Namespace)
	bound := time.Duration(stallTimeout.Load())
	if m.fake {
		if v := settle.WatchListOf(m.cfg.Client); v != nil && v.StallTimeout() > 0 {
			bound = v.StallTimeout() // informertest.WatchList.SetStallTimeout
		}
	}
	return watchStream(ctx, w, st, bound,
		func() { m.cfg.Streams.end(m.cfg.Namespace, st) },
		func(n int, silence time.Duration) { m.stalled(ctx, st, n, silence) })
}

// expectsStream reports whether the informer was meant to stream; a
// fake client (no watch-list semantics) is meant to list in ModeAuto.
func (m *listMode) expectsStream() bool {
	switch m.cfg.Mode {
	case ModeStream:
		return true
	case ModeAuto:
		return StreamGate() && !lacksStream(m.cfg.Client)
	}
	return false
}

// watched records the outcome of a watch request.
func (m *listMode) watched(opts metav1.ListOptions, err error) {
	if err != nil && opts.SendInitialEvents != nil && *opts.SendInitialEvents && !errors.Is(err, ErrNotServed) {
		m.streamErr.Store(&err)
	}
}

// list adjusts the options of a list request, and reports a stream
// fallback: an informer meant to stream lists only when it could not.
// Under ModeConsistentList, and under ModeAuto with PagedFallback, the
// reflector's first list is made a consistent paged one. A list made
// after the informer waited over its memory budget (budget.go) reports no
// fallback: its stream was ended on purpose.
func (m *listMode) list(opts *metav1.ListOptions, overBudget bool) {
	if opts.Continue != "" {
		return
	}
	paged := m.cfg.Mode == ModeAuto && m.cfg.PagedFallback
	if (m.cfg.Mode == ModeConsistentList || paged || m.abandoned.Load()) && opts.ResourceVersion == "0" {
		// The reflector's first list asks for resourceVersion=0 (any
		// state, from the watch cache, in one page); ask for the current
		// one, in pages. An informer whose stream stalled wanted a
		// consistent read, so it gets one too.
		opts.ResourceVersion = ""
		if opts.Limit == 0 {
			opts.Limit = consistentPageSize
		}
	}
	if overBudget || m.cfg.Notice == nil || m.noticed.Load() || !m.expectsStream() && !paged || m.absence != nil && m.absence.absent.Load() {
		return
	}
	var why string
	switch {
	case !StreamGate():
		why = "client-go's WatchListClient feature gate is off in this process"
	case lacksStream(m.cfg.Client):
		why = "its client does not support watch-list semantics"
	case m.streamErr.Load() != nil:
		why = fmt.Sprintf("the server refused it: %v", *m.streamErr.Load())
	default:
		why = "the stream did not start"
	}
	msg := fmt.Sprintf("list mode %s: no watch-list stream (%s); listing instead, as client-go does", m.cfg.Mode, why)
	if paged {
		msg = fmt.Sprintf("list mode %s: no watch-list stream (%s); a lean, projected or metadata-only cache lists in pages of %d with a consistent read (as ListModeConsistentList) instead of client-go's one resourceVersion=0 LIST", m.cfg.Mode, why, consistentPageSize)
	}
	if m.noticed.CompareAndSwap(false, true) {
		m.cfg.Notice(msg)
	}
}

// consistentPageSize is the page size of ModeConsistentList, client-go's
// pager default.
const consistentPageSize = 500

// Pretransform applies an informer's transform to each page of a list as
// it arrives, instead of to the whole list once the pager has gathered it:
// a page's full objects become garbage before the next page is decoded, so
// the peak heap of a LIST follows the transformed cache, as a watch-list
// stream's does. Objects it transformed are marked, and Transform, the
// informer's transform, passes them on unchanged: each object is
// transformed exactly once, on the full object as decoded, so the
// transform need not be idempotent.
//
// A transform that fails, or returns a value that does not fit the list's
// items (another type), leaves the object as listed: the informer then
// transforms it, as without a Pretransform.
type Pretransform struct {
	fn cache.TransformFunc
	// stopped is set by Stop: the informer's transform is no longer
	// Transform, so pages are left as listed.
	stopped atomic.Bool

	mu sync.Mutex
	// done holds the objects transformed, by key, until the informer sees
	// them; the value is the source (namespace of the list/watch) that
	// listed them.
	done map[doneKey]string
	// streaming holds the sources (namespaces) whose watch-list stream is
	// sending its initial events, and streamed the objects Transform made
	// of those events, by identity: client-go's reflector transforms each
	// initial event into a temporary store, then hands the very same
	// objects to the FIFO's Replace, which would transform them again.
	streaming map[string]bool
	streamed  map[any]struct{}
}

// streamStarted says that source's watch-list stream (re)starts: objects
// of an earlier, failed stream will never reach Replace.
func (p *Pretransform) streamStarted(source string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.streaming == nil {
		p.streaming = map[string]bool{}
	}
	p.streaming[source] = true
	for o := range p.streamed {
		if p.sourceOf(o) == source {
			delete(p.streamed, o)
		}
	}
}

// streamEnded says that source lists: a stream of it that the server
// refused, or that was abandoned (stall.go), will never reach Replace,
// and the objects of the list must be transformed once, not as streamed.
func (p *Pretransform) streamEnded(source string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.streaming[source] {
		return
	}
	for o := range p.streamed {
		if p.sourceOf(o) == source {
			delete(p.streamed, o)
		}
	}
	delete(p.streaming, source)
}

// sourceOf is the source that lists obj: its namespace when that has a
// stream of its own, else the one of all namespaces. The caller holds mu.
func (p *Pretransform) sourceOf(obj any) string {
	if m, err := meta.Accessor(obj); err == nil {
		if _, ok := p.streaming[m.GetNamespace()]; ok {
			return m.GetNamespace()
		}
	}
	return ""
}

type doneKey struct {
	namespace, name, uid, resourceVersion string
}

// NewPretransform returns the Pretransform of fn.
func NewPretransform(fn cache.TransformFunc) *Pretransform {
	return &Pretransform{fn: fn, done: map[doneKey]string{}}
}

// Stop leaves every later page as listed: the informer's transform has
// been replaced (SharedInformer.SetTransform, before the informer starts),
// and the new one sees each object whole.
func (p *Pretransform) Stop() { p.stopped.Store(true) }

// Transform is the informer's transform.
func (p *Pretransform) Transform(obj any) (any, error) {
	// Only pointers are looked up: a map lookup hashes its key, which
	// panics for a value that is not comparable.
	streamed := false
	p.mu.Lock()
	if obj != nil && reflect.TypeOf(obj).Kind() == reflect.Pointer {
		_, streamed = p.streamed[obj]
	}
	if streamed {
		// Replace after a stream: the stream's transform made obj. The
		// stream's initial events are over.
		delete(p.streamed, obj)
		delete(p.streaming, p.sourceOf(obj))
		if len(p.streamed) == 0 {
			p.streamed = nil
		}
		p.mu.Unlock()
		return obj, nil
	}
	record := len(p.streaming) > 0 && p.streaming[p.sourceOf(obj)]
	p.mu.Unlock()
	if record {
		out, err := p.fn(obj)
		if err == nil && out != nil && reflect.TypeOf(out).Kind() == reflect.Pointer {
			p.mu.Lock()
			if p.streaming[p.sourceOf(out)] {
				if p.streamed == nil {
					p.streamed = map[any]struct{}{}
				}
				p.streamed[out] = struct{}{}
			}
			p.mu.Unlock()
		}
		return out, err
	}
	if k, ok := keyOf(obj); ok {
		p.mu.Lock()
		_, done := p.done[k]
		if done {
			delete(p.done, k)
			if len(p.done) == 0 {
				// A Go map keeps its buckets when emptied: drop them,
				// or they stay as large as the largest list.
				p.done = map[doneKey]string{}
			}
		}
		p.mu.Unlock()
		if done {
			return obj, nil
		}
	}
	return p.fn(obj)
}

func keyOf(obj any) (doneKey, bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return doneKey{}, false
	}
	return doneKey{m.GetNamespace(), m.GetName(), string(m.GetUID()), m.GetResourceVersion()}, true
}

// page transforms the items of one page of a list by source. The first
// page of a list forgets what an earlier list of source marked and the
// informer did not see (a list that failed part-way).
func (p *Pretransform) page(source string, first bool, list runtime.Object) error {
	if first {
		p.streamEnded(source)
	}
	if p.stopped.Load() {
		return nil
	}
	if first {
		p.mu.Lock()
		for k, s := range p.done {
			if s == source {
				delete(p.done, k)
			}
		}
		if len(p.done) == 0 {
			p.done = map[doneKey]string{}
		}
		p.mu.Unlock()
	}
	var keys []doneKey
	if u, ok := list.(interface {
		EachListItem(func(runtime.Object) error) error
	}); ok && isUnstructuredList(list) {
		// Items of an UnstructuredList are edited in place.
		err := u.EachListItem(func(o runtime.Object) error {
			if k, ok := p.apply(o, reflect.Value{}); ok {
				keys = append(keys, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
	} else {
		itemsPtr, err := meta.GetItemsPtr(list)
		if err != nil {
			return err
		}
		items := reflect.ValueOf(itemsPtr).Elem()
		for i := range items.Len() {
			slot := items.Index(i)
			var o any
			switch slot.Kind() {
			case reflect.Pointer, reflect.Interface:
				o = slot.Interface()
			default:
				o = slot.Addr().Interface()
			}
			if k, ok := p.apply(o, slot); ok {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	p.mu.Lock()
	for _, k := range keys {
		p.done[k] = source
	}
	p.mu.Unlock()
	return nil
}

// apply transforms o, the item in slot (invalid for an unstructured list,
// whose items are edited in place), and stores the result in slot. It
// returns the key of the object transformed.
func (p *Pretransform) apply(o any, slot reflect.Value) (doneKey, bool) {
	out, err := p.fn(o)
	if err != nil || out == nil {
		return doneKey{}, false
	}
	if out != o {
		v := reflect.ValueOf(out)
		switch {
		case !slot.IsValid():
			return doneKey{}, false
		case slot.Kind() == reflect.Pointer || slot.Kind() == reflect.Interface:
			if !v.Type().AssignableTo(slot.Type()) {
				return doneKey{}, false
			}
			slot.Set(v)
		case v.Kind() == reflect.Pointer && v.Type().Elem() == slot.Type() && !v.IsNil():
			slot.Set(v.Elem())
		default:
			return doneKey{}, false
		}
	}
	return keyOf(out)
}

func isUnstructuredList(list runtime.Object) bool {
	_, ok := list.(runtime.Unstructured)
	return ok
}
