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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// shortStall shortens the stall bound for one test.
func shortStall(t *testing.T, d time.Duration) {
	old := stallTimeout.Swap(int64(d))
	t.Cleanup(func() { stallTimeout.Store(old) })
}

// streamFake is a Requests whose watch-list requests return fake
// watches the test drives; a plain watch returns an empty one.
type streamFake struct {
	fakeRequests
	streams chan *watch.FakeWatcher
}

func (f *streamFake) requests(ns string) Requests {
	r := f.fakeRequests.requests(ns)
	plain := r.Watch
	r.Watch = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		if opts.SendInitialEvents == nil || !*opts.SendInitialEvents {
			return plain(ctx, opts)
		}
		w := watch.NewFakeWithChanSize(10, false)
		f.streams <- w
		return w, nil
	}
	return r
}

func endBookmark() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
}

func streamOpts() metav1.ListOptions {
	yes := true
	return metav1.ListOptions{SendInitialEvents: &yes}
}

func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event in 10 s")
	}
	return watch.Event{}
}

// A stream that sends objects, then a bookmark without the end annotation,
// then nothing, is ended with an error event after the bound; the
// informer lists with a consistent LIST from then on, and a later stream
// request fails at once without reaching the server.
func TestStalledStreamIsAbandoned(t *testing.T) {
	shortStall(t, 200*time.Millisecond)
	f := &streamFake{fakeRequests: fakeRequests{pages: [][]corev1.Pod{{pod("a", "p", "1")}}}, streams: make(chan *watch.FakeWatcher, 2)}
	var notices []string
	streams := &Streams{}
	lw := New(Config{Options: Options{Resource: pods, Requests: f.requests}, Notice: func(m string) { notices = append(notices, m) }, Streams: streams})
	w, err := lw.WatchWithContext(context.Background(), streamOpts())
	if err != nil {
		t.Fatal(err)
	}
	fw := <-f.streams
	p1, p2 := pod("a", "p", "1"), pod("a", "q", "2")
	fw.Add(&p1)
	fw.Add(&p2)
	next(t, w)
	next(t, w)
	if got := streams.Waiting(); got != "watch-list stream: 2 objects received, no end bookmark for 0 s" {
		t.Errorf("Waiting() = %q", got)
	}
	// A bookmark without the end annotation is not progress.
	start := time.Now()
	fw.Action(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "5"}})
	next(t, w)
	ev := next(t, w)
	if ev.Type != watch.Error {
		t.Fatalf("after the stall got %v, want an error event", ev.Type)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("the stall took %v to detect with a 200 ms bound", time.Since(start))
	}
	err = apierrors.FromObject(ev.Object)
	if !apierrors.IsTimeout(err) || !strings.Contains(err.Error(), "watch-list stream stalled: 2 objects received, no end bookmark and nothing for 0 s") {
		t.Errorf("error event: %v", err)
	}
	if !fw.IsStopped() {
		t.Error("the stalled stream was not stopped")
	}
	if _, ok := <-w.ResultChan(); ok {
		t.Error("the watch goes on after the error event")
	}
	if len(notices) != 1 || !strings.HasPrefix(notices[0], "watch-list stream stalled (2 objects received, no end bookmark and nothing for 0 s); the informer lists instead (a consistent LIST, then a WATCH) for the rest of its life") {
		t.Errorf("notices = %q", notices)
	}
	if got := streams.Waiting(); got != "watch-list stream stalled (2 objects received, no end bookmark and nothing for 0 s); listing instead" {
		t.Errorf("Waiting() after the stall = %q", got)
	}

	// The reflector lists: consistently, whatever resourceVersion it asks.
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"}); err != nil {
		t.Fatal(err)
	}
	if got := f.lists[0]; got.ResourceVersion != "" || got.Limit != consistentPageSize {
		t.Errorf("LIST after the stall sent %+v, want a consistent, paged one", got)
	}
	// Its next initial sync does not stream; a plain watch still runs.
	if _, err := lw.WatchWithContext(context.Background(), streamOpts()); !errors.Is(err, errStreamAbandoned) {
		t.Errorf("a stream request after the stall: %v, want errStreamAbandoned", err)
	}
	if len(f.streams) != 0 {
		t.Error("a stream request after the stall reached the server")
	}
	if _, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "10"}); err != nil {
		t.Errorf("plain watch after the stall: %v", err)
	}
	if len(notices) != 1 {
		t.Errorf("notices = %q, want one", notices)
	}
}

// A healthy stream is passed on whole and never timed out after its end
// bookmark; the time the reader takes does not count as silence.
func TestHealthyStreamPassesThrough(t *testing.T) {
	shortStall(t, 300*time.Millisecond)
	f := &streamFake{fakeRequests: fakeRequests{pages: [][]corev1.Pod{{}}}, streams: make(chan *watch.FakeWatcher, 1)}
	streams := &Streams{}
	lw := New(Config{Options: Options{Resource: pods, Requests: f.requests}, Namespace: "a", Streams: streams})
	w, err := lw.WatchWithContext(context.Background(), streamOpts())
	if err != nil {
		t.Fatal(err)
	}
	fw := <-f.streams
	p1 := pod("a", "p", "1")
	fw.Add(&p1)
	fw.Add(&p1)
	next(t, w)
	// A slow reader: the second object waits in the wrapper, not on the
	// server, for twice the bound.
	time.Sleep(600 * time.Millisecond)
	next(t, w)
	fw.Action(watch.Bookmark, endBookmark())
	if ev := next(t, w); ev.Type != watch.Bookmark {
		t.Fatalf("got %v, want the end bookmark", ev.Type)
	}
	if got := streams.Waiting(); got != "" {
		t.Errorf("Waiting() after the end bookmark = %q, want empty", got)
	}
	time.Sleep(600 * time.Millisecond) // silence after the end is normal
	fw.Modify(&p1)
	if ev := next(t, w); ev.Type != watch.Modified {
		t.Fatalf("got %v after a quiet spell, want the update", ev.Type)
	}
	w.Stop()
	w.Stop()
	if !fw.IsStopped() {
		t.Error("Stop did not stop the stream")
	}
	if _, ok := <-w.ResultChan(); ok {
		t.Error("the watch goes on after Stop")
	}
}

// An error event or the end of the stream ends the watch over it: the
// reflector retries or lists on its own.
func TestStreamEndsWithoutStall(t *testing.T) {
	shortStall(t, 100*time.Millisecond)
	for _, end := range []func(*watch.FakeWatcher){
		func(fw *watch.FakeWatcher) { fw.Error(&metav1.Status{Code: 410, Reason: metav1.StatusReasonExpired}) },
		func(fw *watch.FakeWatcher) { fw.Stop() },
	} {
		f := &streamFake{fakeRequests: fakeRequests{pages: [][]corev1.Pod{{}}}, streams: make(chan *watch.FakeWatcher, 1)}
		streams := &Streams{}
		var notices []string
		lw := New(Config{Options: Options{Resource: pods, Requests: f.requests}, Streams: streams, Notice: func(m string) { notices = append(notices, m) }})
		w, err := lw.WatchWithContext(context.Background(), streamOpts())
		if err != nil {
			t.Fatal(err)
		}
		fw := <-f.streams
		end(fw)
		// The reflector stops a watch after its error event.
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				w.Stop()
			}
		}
		time.Sleep(300 * time.Millisecond)
		if got := streams.Waiting(); got != "" || len(notices) != 0 {
			t.Errorf("after the stream ended: Waiting() = %q, notices %q", got, notices)
		}
		// The next stream request goes to the server.
		if _, err := lw.WatchWithContext(context.Background(), streamOpts()); err != nil {
			t.Errorf("stream request after an ended stream: %v", err)
		}
		(<-f.streams).Stop()
	}
}

// Waiting names each namespace's stream when there are several, and a
// nil Streams records nothing.
func TestStreamsWaiting(t *testing.T) {
	s := &Streams{}
	a := s.begin("a")
	a.objects.Store(1)
	b := s.begin("b")
	s.stall("b", b, 12*time.Second)
	want := "namespace a: watch-list stream: 1 object received, no end bookmark for 0 s; namespace b: watch-list stream stalled (0 objects received, no end bookmark and nothing for 12 s); listing instead"
	if got := s.Waiting(); got != want {
		t.Errorf("Waiting() = %q\nwant        %q", got, want)
	}
	s.end("b", b) // a stalled stream stays named
	s.end("a", s.begin("a"))
	s.end("a", a) // replaced: a later stream of a ended, not this one
	if got := s.Waiting(); !strings.HasPrefix(got, "watch-list stream stalled") {
		t.Errorf("Waiting() = %q, want b's stall alone", got)
	}
	var none *Streams
	st := none.begin("a")
	none.end("a", st)
	none.stall("a", st, time.Second)
	if none.Waiting() != "" {
		t.Error("a nil Streams reports a stream")
	}
	fresh := &Streams{}
	fresh.stall("x", &streamState{start: time.Now()}, time.Second)
	if fresh.Waiting() == "" {
		t.Error("a stall recorded on a fresh Streams is not reported")
	}
	if isEndBookmark(watch.Event{Object: &metav1.Status{}}) {
		t.Error("a Status is an end bookmark")
	}
}

// A list after a stream that never reached Replace (refused, or
// abandoned) transforms its objects once, as pages.
func TestPretransformAfterAbandonedStream(t *testing.T) {
	calls := 0
	p := NewPretransform(func(obj any) (any, error) {
		calls++
		return obj, nil
	})
	p.streamStarted("")
	streamed := pod("a", "s", "1")
	if _, err := p.Transform(&streamed); err != nil { // as the stream's temporary store does
		t.Fatal(err)
	}
	p.streamEnded("b") // another source: nothing to forget
	list := &corev1.PodList{Items: []corev1.Pod{pod("a", "p", "2")}}
	if err := p.page("", true, list); err != nil {
		t.Fatal(err)
	}
	calls = 0
	var obj runtime.Object = &list.Items[0]
	if _, err := p.Transform(obj); err != nil {
		t.Fatal(err)
	}
	if calls != 0 {
		t.Errorf("a listed object was transformed again (%d calls) after an abandoned stream", calls)
	}
	if len(p.streaming) != 0 || len(p.streamed) != 0 {
		t.Errorf("the abandoned stream is still recorded: %v, %v", p.streaming, p.streamed)
	}
}
