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

package multinamespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// appIndex indexes pods by their "app" label: the custom index of the
// differential tests.
const appIndex = "app"

func appIndexFunc(obj interface{}) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	if v, ok := m.GetLabels()["app"]; ok {
		return []string{v}, nil
	}
	return nil, nil
}

func metaOf(obj interface{}) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object meta", obj)
	}
	return m, nil
}

func testIndexers() cache.Indexers {
	return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, appIndex: appIndexFunc}
}

// source is one namespace's list and watch calls on a fake clientset
// ("" = all namespaces), with counters and faults to inject.
type source struct {
	client kubernetes.Interface
	ns     string

	lists    atomic.Int32
	failList atomic.Bool
	// block, if set, holds every List until it is closed.
	block chan struct{}

	mu       sync.Mutex
	watchers []*injectWatcher
}

func (s *source) listWatcher() cache.ListerWatcher {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			s.lists.Add(1)
			if s.block != nil {
				select {
				case <-s.block:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			if s.failList.Load() {
				return nil, errors.New("injected outage")
			}
			return s.client.CoreV1().Pods(s.ns).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if s.failList.Load() {
				return nil, errors.New("injected outage")
			}
			w, err := s.client.CoreV1().Pods(s.ns).Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			iw := newInjectWatcher(w)
			s.mu.Lock()
			s.watchers = append(s.watchers, iw)
			s.mu.Unlock()
			return iw, nil
		},
	}
	// The fake clientset has no watch-list support; this tells the
	// reflector so, as client-go's own informers do.
	return cache.ToListWatcherWithWatchListSemantics(lw, s.client)
}

// expire sends a 410 Gone to the current watch, which makes the reflector
// relist this namespace.
func (s *source) expire(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	var w *injectWatcher
	if n := len(s.watchers); n > 0 {
		w = s.watchers[n-1]
	}
	s.mu.Unlock()
	if w == nil {
		t.Fatalf("namespace %q has no watch to expire", s.ns)
	}
	status := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "injected: too old resource version"}
	select {
	case w.inject <- watch.Event{Type: watch.Error, Object: status}:
	case <-time.After(10 * time.Second):
		t.Fatalf("namespace %q: the watch did not take the injected 410", s.ns)
	}
}

// injectWatcher forwards a watch and lets the test inject events into it.
type injectWatcher struct {
	inner  watch.Interface
	out    chan watch.Event
	inject chan watch.Event
	stop   chan struct{}
	once   sync.Once
}

func newInjectWatcher(inner watch.Interface) *injectWatcher {
	w := &injectWatcher{inner: inner, out: make(chan watch.Event), inject: make(chan watch.Event), stop: make(chan struct{})}
	go w.run()
	return w
}

func (w *injectWatcher) run() {
	defer close(w.out)
	in := w.inner.ResultChan()
	for {
		var ev watch.Event
		select {
		case e, ok := <-in:
			if !ok {
				return
			}
			ev = e
		case ev = <-w.inject:
		case <-w.stop:
			return
		}
		select {
		case w.out <- ev:
		case <-w.stop:
			return
		}
	}
}

func (w *injectWatcher) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}

func (w *injectWatcher) ResultChan() <-chan watch.Event { return w.out }

func newInformer(s *source) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(s.listWatcher(), &corev1.Pod{}, 0, testIndexers())
}

// fixture is a composite over some namespaces and its sources and
// sub-informers.
type fixture struct {
	inf     cache.SharedIndexInformer
	sources map[string]*source
	subs    map[string]cache.SharedIndexInformer
}

func newFixture(client kubernetes.Interface, namespaces ...string) *fixture {
	f := &fixture{sources: map[string]*source{}, subs: map[string]cache.SharedIndexInformer{}}
	for _, ns := range namespaces {
		f.sources[ns] = &source{client: client, ns: ns}
		f.subs[ns] = newInformer(f.sources[ns])
	}
	f.inf = New(f.subs)
	return f
}

// run runs inf until the test ends, and makes the test wait for Run to
// return.
func run(t *testing.T, inf cache.SharedInformer) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("Run did not return after its context was canceled")
		}
	})
	return cancel
}

func waitSynced(t *testing.T, checkers ...cache.DoneChecker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !cache.WaitFor(ctx, "", checkers...) {
		t.Fatalf("not synced within 30s")
	}
}

// eventually polls cond until it returns "" or the time is up, and then
// fails with its last answer.
func eventually(t *testing.T, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recorder records a handler's events as "add ns/name", "update ns/name",
// "delete ns/name" and checks that calls never overlap.
type recorder struct {
	mu      sync.Mutex
	events  []string
	adds    map[string]int
	inside  atomic.Int32
	overlap atomic.Bool
}

func newRecorder() *recorder { return &recorder{adds: map[string]int{}} }

func (r *recorder) record(kind string, obj interface{}) {
	if r.inside.Add(1) > 1 {
		r.overlap.Store(true)
	}
	defer r.inside.Add(-1)
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	key, _ := cache.MetaNamespaceKeyFunc(obj)
	// A little work inside the call, so that concurrent calls would be
	// seen overlapping.
	time.Sleep(50 * time.Microsecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, kind+" "+key)
	if kind == "add" {
		r.adds[key]++
	}
}

func (r *recorder) OnAdd(obj interface{}, _ bool) { r.record("add", obj) }
func (r *recorder) OnUpdate(_, obj interface{})   { r.record("update", obj) }
func (r *recorder) OnDelete(obj interface{})      { r.record("delete", obj) }

// sorted returns the events whose key's namespace passes keep, sorted:
// the multiset to compare, since namespaces are not ordered with each
// other.
func (r *recorder) sorted(keep func(ns string) bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		_, key, _ := cutSpace(e)
		if keep(namespaceOfKey(key)) {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

func (r *recorder) addsOf(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.adds[key]
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

func cutSpace(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func pod(ns, name, app string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if app != "" {
		p.Labels = map[string]string{"app": app}
	}
	return p
}
