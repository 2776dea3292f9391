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

package budget

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fixedMeter estimates every object at per bytes.
type fixedMeter struct {
	per      int64
	observed atomic.Uint64
}

func (m *fixedMeter) PerObject() int64 { return m.per }
func (m *fixedMeter) Observe(any)      { m.observed.Add(1) }
func (m *fixedMeter) Observed() uint64 { return m.observed.Load() }

func TestAccountStopsBeforePassing(t *testing.T) {
	stops := 0
	a := NewAccount(Config{Resource: "pods (v1)", Narrow: "a selector", Limit: 1000, Meter: &fixedMeter{per: 100}, OnStop: func(*Stopped) { stops++ }})
	if err := a.Set("", 10); err != nil {
		t.Fatalf("10 objects of 100 bytes within a budget of 1000: %v", err)
	}
	err := a.Set("", 11)
	var st *Stopped
	if !errors.As(err, &st) || !errors.Is(err, ErrOverBudget) {
		t.Fatalf("11 objects: got %v, want a *Stopped wrapping ErrOverBudget", err)
	}
	if st.Objects != 11 || st.Bytes != 1100 || st.Budget != 1000 || st.Shared {
		t.Errorf("stop = %+v, want 11 objects, 1100 bytes, budget 1000, not shared", st)
	}
	for _, want := range []string{"pods (v1): stopped over its memory budget", "11 objects seen", "estimated 1100 bytes, budget 1000 bytes", "a selector", "released"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	select {
	case <-a.Done():
	default:
		t.Error("Done is not closed after the stop")
	}
	if a.Stopped() == nil || stops != 1 {
		t.Errorf("Stopped() = %v, OnStop called %d times; want the stop, once", a.Stopped(), stops)
	}
	if err := a.Add("", -5); err == nil {
		t.Error("a stopped account accepted a change")
	}
}

func TestPoolIsShared(t *testing.T) {
	p := NewPool(1000)
	a := NewAccount(Config{Resource: "a", Pool: p, Meter: &fixedMeter{per: 100}})
	b := NewAccount(Config{Resource: "b", Pool: p, Meter: &fixedMeter{per: 100}})
	if err := a.Set("x", 3); err != nil {
		t.Fatal(err)
	}
	if err := a.Set("y", 3); err != nil { // another namespace of a
		t.Fatal(err)
	}
	err := b.Set("", 5)
	var st *Stopped
	if !errors.As(err, &st) || !st.Shared || st.Others != 600 || st.Bytes != 500 || st.Budget != 1000 {
		t.Fatalf("b's 5 objects beside a's 6 in a pool of 1000: got %#v (%v)", st, err)
	}
	if a.Stopped() != nil || p.Used() != 600 {
		t.Errorf("a stopped = %v, pool used = %d; want a serving and 600 used", a.Stopped(), p.Used())
	}
	a.Forget("y")
	if p.Used() != 300 {
		t.Errorf("after a forgot a namespace of 3 objects the pool holds %d, want 300", p.Used())
	}
	a.Close()
	if p.Used() != 0 {
		t.Errorf("after a closed the pool holds %d, want 0", p.Used())
	}
	p.SetLimit(2000)
	if b.Stopped() != nil {
		t.Errorf("raising the pool did not retry b: %v", b.Stopped())
	}
	if err := b.Set("", 15); err != nil {
		t.Errorf("15 objects in a pool of 2000: %v", err)
	}
}

func TestWaitUntilRetry(t *testing.T) {
	a := NewAccount(Config{Resource: "r", Limit: 100, Meter: &fixedMeter{per: 100}})
	if err := a.Wait(context.Background(), func() { t.Error("released while not stopped") }); err != nil {
		t.Fatal(err)
	}
	_ = a.Set("", 2)
	released := make(chan struct{})
	done := make(chan error)
	go func() { done <- a.Wait(context.Background(), func() { close(released) }) }()
	<-released
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v before the budget was raised", err)
	case <-time.After(50 * time.Millisecond):
	}
	a.SetLimit(1000)
	if err := <-done; err != nil {
		t.Fatalf("Wait after SetLimit: %v", err)
	}
	if err := a.Set("", 5); err != nil {
		t.Errorf("after raising: %v", err)
	}

	_ = a.Set("", 11)
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { done <- a.Wait(ctx, nil) }()
	cancel(errors.New("shut down"))
	if err := <-done; err == nil || err.Error() != "shut down" {
		t.Errorf("Wait on a done context = %v, want its cause", err)
	}
}

func TestFromCgroup(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	limited := write("limited", "1073741824\n")
	if got, err := FromCgroup(limited, 0.5); err != nil || got != 512<<20 {
		t.Errorf("half of 1 GiB = %d, %v; want %d", got, err, 512<<20)
	}
	if _, err := FromCgroup(write("max", "max\n"), 0.5); !errors.Is(err, ErrNoLimit) {
		t.Errorf("memory.max \"max\": %v, want ErrNoLimit", err)
	}
	if _, err := FromCgroup(filepath.Join(dir, "absent"), 0.5); !errors.Is(err, ErrNoLimit) {
		t.Errorf("no memory.max: %v, want ErrNoLimit", err)
	}
	bad := write("bad", "lots")
	if _, err := FromCgroup(bad, 0.5); err == nil || errors.Is(err, ErrNoLimit) || !strings.Contains(err.Error(), bad) {
		t.Errorf("memory.max %q: %v, want an error naming the file", "lots", err)
	}
	for _, f := range []float64{0, -0.5, 1.5, math.NaN(), math.Inf(1)} {
		if _, err := FromCgroup(limited, f); err == nil || !strings.Contains(err.Error(), "not in (0, 1]") {
			t.Errorf("fraction %v: %v, want an error", f, err)
		}
	}
}

func TestNarrowing(t *testing.T) {
	all := Narrowing(true, true, false, false, false)
	for _, want := range []string{"namespaces", "selector", "KeepFields", "metadata-only", "SetMemoryBudget"} {
		if !strings.Contains(all, want) {
			t.Errorf("%q lacks %q", all, want)
		}
	}
	used := Narrowing(true, false, true, true, false)
	for _, not := range []string{"namespaces", "selector", "KeepFields", "metadata-only"} {
		if strings.Contains(used, not) {
			t.Errorf("%q suggests %q, which the informer uses already", used, not)
		}
	}
}

// TestChoose: a factory's first budget option is its pool; a second, or a
// bad one, leaves the pool it had and names the option.
func TestChoose(t *testing.T) {
	first, second := NewPool(1<<20), NewPool(2<<20)
	if got, err := Choose(nil, first, nil, "WithMemoryBudget", 1<<20); got != first || err != nil {
		t.Fatalf("first option: %p, %v; want the first pool, no error", got, err)
	}
	got, err := Choose(first, second, nil, "WithMemoryBudget", 2<<20)
	if got != first || err == nil || !strings.Contains(err.Error(), "WithMemoryBudget(2097152): a memory budget was given already") {
		t.Errorf("second option: %p, %v; want the first pool and an error naming the option", got, err)
	}
	bad := errors.New("not positive")
	got, err = Choose(nil, nil, bad, "WithMemoryBudgetFraction", 1.5)
	if got != nil || !errors.Is(err, bad) || !strings.Contains(err.Error(), "WithMemoryBudgetFraction(1.5)") {
		t.Errorf("bad option: %p, %v; want no pool and the error naming the option", got, err)
	}
}

// TestChargeNeverStops: an account that is charged (an informer the budget
// cannot stop) counts in its pool past the limit without stopping, and
// stops the pool's others; its estimate per object is charged anew on
// each change; once closed, it gives all back and is charged no more.
func TestChargeNeverStops(t *testing.T) {
	p := NewPool(1000)
	m := &fixedMeter{per: 100}
	own := NewAccount(Config{Resource: "own", Pool: p, Limit: 500, Meter: m})
	other := NewAccount(Config{Resource: "other", Pool: p, Meter: &fixedMeter{per: 100}})
	for range 12 {
		own.Charge(1)
	}
	if own.Stopped() != nil || p.Used() != 1200 {
		t.Fatalf("12 objects charged: stopped %v, pool used %d; want not stopped, 1200", own.Stopped(), p.Used())
	}
	if err := other.Set("", 1); !errors.Is(err, ErrOverBudget) {
		t.Errorf("another informer's first object in a pool already over: %v, want a stop", err)
	}
	own.Charge(-4)
	m.per = 50
	own.Charge(0)
	if p.Used() != 400 {
		t.Errorf("8 objects at 50 bytes: pool used %d, want 400", p.Used())
	}
	own.Close()
	own.Charge(3)
	if p.Used() != 0 {
		t.Errorf("closed: pool used %d, want 0", p.Used())
	}
}

// TestCloseRetriesTheShared: an informer stopped over the pool's limit
// tries again when another one closes and gives back what it held; one
// stopped over its own budget does not.
func TestCloseRetriesTheShared(t *testing.T) {
	p := NewPool(1000)
	a := NewAccount(Config{Resource: "a", Pool: p, Meter: &fixedMeter{per: 100}})
	b := NewAccount(Config{Resource: "b", Pool: p, Meter: &fixedMeter{per: 100}})
	own := NewAccount(Config{Resource: "own", Pool: p, Limit: 200, Meter: &fixedMeter{per: 100}})
	if err := a.Set("", 6); err != nil {
		t.Fatal(err)
	}
	if err := b.Set("", 5); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("b beside a: %v, want a stop", err)
	}
	if err := own.Set("", 3); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("own over its 200 bytes: %v, want a stop", err)
	}
	a.Close()
	if b.Stopped() != nil {
		t.Errorf("a closed, giving back 600 bytes: b still stopped: %v", b.Stopped())
	}
	if own.Stopped() == nil {
		t.Error("a closed: own, stopped over its own budget, tries again")
	}
	if err := b.Set("", 5); err != nil {
		t.Errorf("b's 5 objects alone in the pool: %v", err)
	}
}

// TestForgetRetriesTheShared: an informer that stops watching a namespace
// gives back that namespace's share of the pool, and the pool's informers
// stopped over its limit try again, as on Close.
func TestForgetRetriesTheShared(t *testing.T) {
	p := NewPool(1000)
	a := NewAccount(Config{Resource: "a", Pool: p, Meter: &fixedMeter{per: 100}})
	b := NewAccount(Config{Resource: "b", Pool: p, Meter: &fixedMeter{per: 100}})
	for _, ns := range []string{"ns1", "ns2"} {
		if err := a.Set(ns, 3); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Set("", 5); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("b beside a's 600 bytes: %v, want a stop", err)
	}
	a.Forget("ns2")
	if got := p.Used(); got != 300 {
		t.Errorf("after a forgot ns2 the pool holds %d bytes, want a's 300", got)
	}
	if b.Stopped() != nil {
		t.Errorf("a forgot ns2, giving back 300 bytes: b still stopped: %v", b.Stopped())
	}
	if err := b.Set("", 5); err != nil {
		t.Errorf("b's 5 objects beside a's 3: %v", err)
	}
}
