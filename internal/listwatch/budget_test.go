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
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/budget"
)

var sendInitial = true

// fixedMeter estimates every object at per bytes.
type fixedMeter struct {
	per      int64
	observed atomic.Uint64
}

func (m *fixedMeter) PerObject() int64 { return m.per }
func (m *fixedMeter) Observe(any)      { m.observed.Add(1) }
func (m *fixedMeter) Observed() uint64 { return m.observed.Load() }

func podPages(pages, per int) [][]corev1.Pod {
	out := make([][]corev1.Pod, pages)
	for i := range out {
		for j := range per {
			out[i] = append(out[i], corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d-%d", i, j)}})
		}
	}
	return out
}

// TestBudgetStopsPagedListPerPage: a LIST of three pages of 10 objects
// against a budget of 25 objects fails at the third page, before the
// reflector has the whole list; the next list empties the cache and makes
// no request until the budget is raised.
func TestBudgetStopsPagedListPerPage(t *testing.T) {
	f := &fakeRequests{pages: podPages(3, 10)}
	a := budget.NewAccount(budget.Config{Resource: "pods (v1)", Limit: 2500, Meter: &fixedMeter{per: 100}})
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	_ = store.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "old"}})
	lw := New(Config{Options: Options{Resource: pods, Requests: f.requests, Mode: ModeConsistentList}, Budget: a, Store: func() cache.Store { return store }})
	ctx := t.Context()
	for i, cont := range []string{"", "1"} {
		if _, err := lw.ListWithContext(ctx, metav1.ListOptions{Limit: 10, Continue: cont}); err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
	}
	_, err := lw.ListWithContext(ctx, metav1.ListOptions{Limit: 10, Continue: "2"})
	var st *budget.Stopped
	if !errors.As(err, &st) || st.Objects != 30 || st.Budget != 2500 {
		t.Fatalf("third page: %v, want a stop at 30 objects over 2500 bytes", err)
	}
	if n := len(f.lists); n != 3 {
		t.Fatalf("%d list requests, want 3", n)
	}

	listed := make(chan error, 1)
	go func() {
		_, err := lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 10})
		listed <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(store.ListKeys()) > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if keys := store.ListKeys(); len(keys) > 0 {
		t.Fatalf("the stopped informer's cache still holds %v", keys)
	}
	select {
	case err := <-listed:
		t.Fatalf("the list of a stopped informer returned (%v) before the budget was raised", err)
	case <-time.After(100 * time.Millisecond):
	}
	f.mu.Lock()
	requests := len(f.lists)
	f.mu.Unlock()
	if requests != 3 {
		t.Fatalf("the stopped informer made %d list requests, want none after the stop", requests-3)
	}
	a.SetLimit(10000)
	if err := <-listed; err != nil {
		t.Fatalf("the list after the budget was raised: %v", err)
	}
}

// TestBudgetEndsStream: a watch-list stream is ended with an error event
// at the object that would pass the budget, which the reflector does not
// get; the next watch request of the stopped informer fails at once.
func TestBudgetEndsStream(t *testing.T) {
	fw := watch.NewFakeWithChanSize(100, false)
	var watches atomic.Int32
	req := func(string) Requests {
		return Requests{
			List: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return &corev1.PodList{}, nil },
			Watch: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
				watches.Add(1)
				return fw, nil
			},
		}
	}
	a := budget.NewAccount(budget.Config{Resource: "pods (v1)", Limit: 2500, Meter: &fixedMeter{per: 100}})
	lw := New(Config{Options: Options{Resource: pods, Requests: req}, Budget: a})
	w, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{SendInitialEvents: &sendInitial, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, p := range podPages(1, 40)[0] {
		fw.Add(p.DeepCopy())
	}
	added := 0
	for ev := range w.ResultChan() {
		if ev.Type == watch.Added {
			added++
			continue
		}
		status, ok := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || !ok || status.Reason != StatusReasonOverBudget {
			t.Fatalf("event %s %#v, want the over-budget error", ev.Type, ev.Object)
		}
		break
	}
	if added != 25 {
		t.Errorf("%d objects reached the reflector, want the 25 within the budget", added)
	}
	if _, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{SendInitialEvents: &sendInitial}); !errors.Is(err, budget.ErrOverBudget) {
		t.Errorf("watch of a stopped informer: %v, want the stop", err)
	}
	if n := watches.Load(); n != 1 {
		t.Errorf("%d watch requests, want 1", n)
	}
}

// TestBudgetEndsWatchOnGrowth: after the initial list, a watch's additions
// count; the one that would pass the budget ends the watch.
func TestBudgetEndsWatchOnGrowth(t *testing.T) {
	fw := watch.NewFakeWithChanSize(100, false)
	f := &fakeRequests{pages: podPages(1, 20)}
	req := func(ns string) Requests {
		r := f.requests(ns)
		r.Watch = func(context.Context, metav1.ListOptions) (watch.Interface, error) { return fw, nil }
		return r
	}
	a := budget.NewAccount(budget.Config{Resource: "pods (v1)", Limit: 2500, Meter: &fixedMeter{per: 100}})
	lw := New(Config{Options: Options{Resource: pods, Requests: req}, Budget: a})
	if _, err := lw.ListWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "0"}); err != nil {
		t.Fatal(err)
	}
	w, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "10"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	fresh := podPages(2, 10)[1]
	fw.Delete(&f.pages[0][0])
	for i := range fresh {
		fw.Add(&fresh[i])
	}
	var types []watch.EventType
	for ev := range w.ResultChan() {
		types = append(types, ev.Type)
		if ev.Type == watch.Error {
			break
		}
	}
	// 20 listed, one deleted: 6 additions fit in 25 objects, the 7th not.
	if len(types) != 8 || types[0] != watch.Deleted || types[7] != watch.Error {
		t.Errorf("events %v, want a deletion, 6 additions and the error", types)
	}
}
