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
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// This file abandons a watch-list stream that stalls. client-go's
// reflector waits for the "k8s.io/initial-events-end" bookmark for as long
// as the stream stays open: behind a proxy or a control plane that drops
// that bookmark, an informer never syncs (client-go only logs a warning
// every 10 s, and opens the stream again when the server times it out,
// minutes later). Here a stream that goes StallTimeout without sending an
// object or the end bookmark is ended with an error event; the reflector
// then lists (a consistent LIST, listmode.go) and watches, and every later
// initial sync of the informer lists too.

// StallTimeout is how long a watch-list stream may send neither an object
// nor the end bookmark before it is abandoned.
//
// Why 10 s: a healthy API server streams the initial events from its
// watch cache back to back, milliseconds apart whatever their number, and
// sends the end bookmark at its next bookmark tick, at most about 1.25 s
// after the last object (the cacher's one-second timer, jittered by 25%).
// Its wait for a fresh watch cache (up to 3 s) comes before the response
// starts, so before this clock does. 10 s is eight times the longest
// healthy silence, which leaves room for a loaded client (GC, a starved
// CPU; the time the informer takes to consume an object does not count),
// and it is the interval at which client-go itself starts warning that
// the bookmark is late. A stall costs at most this much before the LIST.
const StallTimeout = 10 * time.Second

// stallTimeout is StallTimeout in nanoseconds; tests of this package
// shorten it while streams of earlier tests may still read it.
var stallTimeout = func() *atomic.Int64 {
	var d atomic.Int64
	d.Store(int64(StallTimeout))
	return &d
}()

// errStreamAbandoned is what a watch-list request of an informer whose
// stream stalled returns, without a request: the reflector lists instead.
var errStreamAbandoned = errors.New("watch-list stream abandoned after a stall; listing instead")

// Streams reports the watch-list streams of one informer (one per
// namespace) while they send their initial events, and those that
// stalled, for the factory's Ready. The zero value is ready to use; a nil
// *Streams records nothing.
type Streams struct {
	mu     sync.Mutex
	states map[string]*streamState
}

type streamState struct {
	start   time.Time
	objects atomic.Int64
	// stalled is set when the stream was abandoned, silence is how long
	// it had been silent then; both under Streams.mu.
	stalled bool
	silence time.Duration
}

// begin records a new stream of namespace and returns its state.
func (s *Streams) begin(namespace string) *streamState {
	st := &streamState{start: time.Now()}
	if s == nil {
		return st
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.states == nil {
		s.states = map[string]*streamState{}
	}
	s.states[namespace] = st
	return st
}

// end forgets st, the stream of namespace, unless a later one replaced it.
func (s *Streams) end(namespace string, st *streamState) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.states[namespace] == st && !st.stalled {
		delete(s.states, namespace)
	}
}

// stall marks st, the stream of namespace, as abandoned.
func (s *Streams) stall(namespace string, st *streamState, silence time.Duration) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st.stalled, st.silence = true, silence
	if s.states == nil {
		s.states = map[string]*streamState{}
	}
	s.states[namespace] = st
}

// Forget forgets the stream of namespace, whose informer has stopped
// because the factory no longer watches it (SetNamespaces).
func (s *Streams) Forget(namespace string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.states, namespace)
}

// Waiting describes the streams that are sending their initial events or
// stalled, such as "watch-list stream: 2 objects received, no end bookmark
// for 8 s", and with several namespaces each prefixed by its namespace; it
// is empty when there is none.
func (s *Streams) Waiting() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var parts []string
	for _, ns := range slices.Sorted(maps.Keys(s.states)) {
		st := s.states[ns]
		n := int(st.objects.Load())
		var msg string
		if st.stalled {
			msg = fmt.Sprintf("watch-list stream stalled (%s received, no end bookmark and nothing for %s); listing instead", objects(n), seconds(st.silence))
		} else {
			msg = fmt.Sprintf("watch-list stream: %s received, no end bookmark for %s", objects(n), seconds(now.Sub(st.start)))
		}
		if ns != "" && len(s.states) > 1 {
			msg = "namespace " + ns + ": " + msg
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}

func objects(n int) string {
	if n == 1 {
		return "1 object"
	}
	return fmt.Sprintf("%d objects", n)
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%d s", int(d.Round(time.Second)/time.Second))
}

// stallWatch passes on the events of a watch-list stream and ends it with
// an error event when it stalls before the end bookmark.
type stallWatch struct {
	inner   watch.Interface
	out     chan watch.Event
	stop    chan struct{}
	stopped sync.Once
	st      *streamState
	bound   time.Duration
	// ended is called once the stream ends its initial events (the end
	// bookmark, an error, or the end of the watch); stalled when it is
	// abandoned.
	ended   func()
	stalled func(objects int, silence time.Duration)
}

// watchStream wraps w, a watch-list stream whose state is st, abandoned
// after bound of silence.
func watchStream(ctx context.Context, w watch.Interface, st *streamState, bound time.Duration, ended func(), stalled func(int, time.Duration)) watch.Interface {
	s := &stallWatch{inner: w, out: make(chan watch.Event), stop: make(chan struct{}), st: st, bound: bound, ended: ended, stalled: stalled}
	go s.run(ctx)
	return s
}

func (s *stallWatch) ResultChan() <-chan watch.Event { return s.out }

func (s *stallWatch) Stop() {
	s.stopped.Do(func() {
		close(s.stop)
		s.inner.Stop()
	})
}

// run forwards events. Until the end bookmark it times the silence of the
// stream: the time spent waiting for the next event, not the time the
// reflector takes to take one. A bookmark without the end annotation is no
// progress: before the end a server sends no other bookmark, so one means
// that something on the way dropped the annotation.
func (s *stallWatch) run(ctx context.Context) {
	defer close(s.out)
	endOnce := sync.Once{}
	end := func() { endOnce.Do(s.ended) }
	defer end()
	in := s.inner.ResultChan()
	bound := s.bound
	timer := time.NewTimer(bound)
	defer timer.Stop()
	ended, n := false, 0
	// silent is how long the stream has waited since its last object.
	var silent time.Duration
	for {
		var timeout <-chan time.Time
		if !ended {
			timer.Reset(bound - silent)
			timeout = timer.C
		}
		waitStart := time.Now()
		select {
		case ev, ok := <-in:
			if !ok {
				return
			}
			silent += time.Since(waitStart)
			switch {
			case ended:
			case ev.Type == watch.Bookmark && isEndBookmark(ev):
				ended = true
				end()
			case ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted:
				n++
				s.st.objects.Store(int64(n))
				silent = 0
			case ev.Type == watch.Error:
				ended = true // the reflector ends the stream itself
				end()
			}
			select {
			case s.out <- ev:
			case <-s.stop:
				return
			}
		case <-timeout:
			silence := silent + time.Since(waitStart)
			s.inner.Stop()
			s.stalled(n, silence)
			status := &metav1.Status{
				Status:  metav1.StatusFailure,
				Code:    http.StatusGatewayTimeout,
				Reason:  metav1.StatusReasonTimeout,
				Message: fmt.Sprintf("watch-list stream stalled: %s received, no end bookmark and nothing for %s", objects(n), seconds(silence)),
			}
			select {
			case s.out <- watch.Event{Type: watch.Error, Object: status}:
			case <-s.stop:
			case <-ctx.Done():
			}
			return
		case <-s.stop:
			return
		}
	}
}

// isEndBookmark reports the bookmark that ends a stream's initial events.
func isEndBookmark(ev watch.Event) bool {
	m, ok := ev.Object.(metav1.Object)
	if !ok {
		return false
	}
	return m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

// stalled records that m's stream, whose state is st, stalled: from now
// on the informer lists. It logs one line and sends the notice.
func (m *listMode) stalled(ctx context.Context, st *streamState, n int, silence time.Duration) {
	m.abandoned.Store(true)
	m.cfg.Streams.stall(m.cfg.Namespace, st, silence)
	what := fmt.Sprintf("watch-list stream stalled (%s received, no end bookmark and nothing for %s); the informer lists instead (a consistent LIST, then a WATCH) for the rest of its life", objects(n), seconds(silence))
	if m.cfg.Namespace != "" {
		what = "namespace " + m.cfg.Namespace + ": " + what
	}
	klog.FromContext(ctx).Info("Warning: watch-list stream stalled, listing instead", "resource", m.cfg.Resource.String(), "namespace", m.cfg.Namespace, "objects", n, "silence", silence.Round(time.Millisecond))
	if m.cfg.Notice != nil && m.noticed.CompareAndSwap(false, true) {
		m.cfg.Notice(what)
	}
}
