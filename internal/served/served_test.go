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

package served

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

type fakeDiscovery struct {
	mu     sync.Mutex
	served bool
	fail   bool
	asked  atomic.Int32
	times  []time.Time // of each request
}

func (d *fakeDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	now := time.Now()
	d.asked.Add(1)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.times = append(d.times, now)
	switch {
	case d.fail:
		return nil, errors.New("connection refused")
	case !d.served || gv != widgets.GroupVersion().String():
		return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
	}
	return &metav1.APIResourceList{APIResources: []metav1.APIResource{{Name: "widgets/status", Kind: "Widget"}, {Name: "widgets/scale", Kind: "Scale"}, {Name: "widgets", Kind: "Widget"}}}, nil
}

func (d *fakeDiscovery) set(served, fail bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.served, d.fail = served, fail
}

func TestServed(t *testing.T) {
	d := &fakeDiscovery{}
	c := New(d)
	if ok, err := c.Served(widgets); ok || err != nil {
		t.Errorf("not served: Served = %v, %v", ok, err)
	}
	d.set(true, false)
	if ok, err := c.Served(widgets); !ok || err != nil {
		t.Errorf("served: Served = %v, %v", ok, err)
	}
	if ok, err := c.Served(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}); ok || err != nil {
		t.Errorf("another resource of a served group: Served = %v, %v", ok, err)
	}
	d.set(true, true)
	if _, err := c.Served(widgets); err == nil {
		t.Error("a failing discovery: no error")
	}
}

// TestWait: waiters of one group version share one poller, which stops
// when the last returns; a failing discovery keeps them waiting.
func TestWait(t *testing.T) {
	d := &fakeDiscovery{}
	c := NewWithIntervals(d, time.Millisecond, 5*time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- c.Wait(ctx, widgets) }()
	}
	// A failing discovery keeps them waiting: after many more requests,
	// none has returned.
	d.set(false, true)
	for d.asked.Load() < 20 {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-errs:
		t.Fatalf("a waiter returned while discovery failed: %v", err)
	default:
	}
	c.mu.Lock()
	pollers := len(c.pollers)
	c.mu.Unlock()
	if pollers != 1 {
		t.Errorf("%d pollers for one group version, want 1", pollers)
	}
	d.set(true, false)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	pollers = len(c.pollers)
	c.mu.Unlock()
	if pollers != 0 {
		t.Errorf("%d pollers left after every waiter returned", pollers)
	}

	// A cancelled wait returns the context's cause.
	d.set(false, false)
	cause := errors.New("the informer stopped")
	cctx, ccancel := context.WithCancelCause(ctx)
	ccancel(cause)
	if err := c.Wait(cctx, widgets); !errors.Is(err, cause) {
		t.Errorf("Wait with a cancelled context = %v, want its cause", err)
	}
}

// TestWaitKind: a waiter for a kind returns once a resource of that kind
// is served; a subresource's kind (Scale) is no resource of it.
func TestWaitKind(t *testing.T) {
	d := &fakeDiscovery{}
	c := NewWithIntervals(d, time.Millisecond, 5*time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	widget := widgets.GroupVersion().WithKind("Widget")
	scale := widgets.GroupVersion().WithKind("Scale")
	widgetDone := make(chan error, 1)
	go func() { widgetDone <- c.WaitKind(ctx, widget) }()
	sctx, scancel := context.WithCancel(ctx)
	scaleDone := make(chan error, 1)
	go func() { scaleDone <- c.WaitKind(sctx, scale) }()
	for d.asked.Load() < 5 {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-widgetDone:
		t.Fatalf("WaitKind returned before the kind was served: %v", err)
	default:
	}
	d.set(true, false)
	if err := <-widgetDone; err != nil {
		t.Fatalf("WaitKind(Widget) = %v", err)
	}
	for n := d.asked.Load() + 5; d.asked.Load() < n; {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-scaleDone:
		t.Fatalf("WaitKind(Scale) returned for a subresource: %v", err)
	default:
	}
	scancel()
	if err := <-scaleDone; !errors.Is(err, context.Canceled) {
		t.Errorf("WaitKind(Scale) after cancel = %v", err)
	}
}

// requestTimes returns the times of the requests made so far.
func (d *fakeDiscovery) requestTimes() []time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Time(nil), d.times...)
}

// TestWaitKeepsThePace: a waiter that comes after the last one left (an
// informer whose resource discovery lists, but whose request answered 404
// again) does not start a poller that asks at once: the requests for a
// group version keep their growing interval across pollers, Served's
// included, and it starts again at the first interval only after twice
// the longest without a request.
func TestWaitKeepsThePace(t *testing.T) {
	const first, most = 100 * time.Millisecond, 400 * time.Millisecond
	d := &fakeDiscovery{}
	d.set(true, false)
	c := NewWithIntervals(d, first, most)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	// Served asks at once; each Wait after it asks once, when the pace
	// allows.
	if ok, err := c.Served(widgets); !ok || err != nil {
		t.Fatalf("Served = %v, %v", ok, err)
	}
	want := []time.Duration{first, 2 * first, most, most}
	for range want {
		if err := c.Wait(ctx, widgets); err != nil {
			t.Fatal(err)
		}
	}
	times := d.requestTimes()
	if len(times) != len(want)+1 {
		t.Fatalf("%d requests, want %d: one by Served, one per Wait", len(times), len(want)+1)
	}
	for i, gap := range want {
		// A quarter of slack for the time between the pace's clock and
		// the fake's; a new poller that asked at once would be ~0.
		if got := times[i+1].Sub(times[i]); got < gap*3/4 {
			t.Errorf("request %d came %v after the one before, want at least %v", i+2, got, gap)
		}
	}

	// After twice the longest interval without a request, the pace starts
	// again from the first.
	time.Sleep(2*most + first)
	if err := c.Wait(ctx, widgets); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	gap := c.paces[widgets.GroupVersion()].gap
	c.mu.Unlock()
	if gap != first {
		t.Errorf("after a quiet spell the interval is %v, want %v", gap, first)
	}
}
