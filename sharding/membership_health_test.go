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

package sharding

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// These tests drive the Health rule of Membership on the fake clock: the
// members renew every testR (5 s) with a lease of testD (15 s), so the
// default grace is three renewals.

// probe is a health check a test turns on and off; it counts its calls.
type probe struct {
	failing atomic.Bool
	calls   atomic.Int32
}

func (p *probe) check() error {
	p.calls.Add(1)
	if p.failing.Load() {
		return errors.New("configmaps is forbidden")
	}
	return nil
}

// startChecked starts member id with a health check, after edit (if any)
// changed its configuration.
func startChecked(t *testing.T, client *fake.Clientset, clk *fakeClock, id string, edit func(*MembershipConfig)) (*member, *probe) {
	t.Helper()
	cfg := testConfig(client, clk, id)
	if edit != nil {
		edit(&cfg)
	}
	m, err := NewMembership(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &probe{}
	m.AddHealthCheck(p.check)
	sub, unsub := m.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.Start(ctx); err != nil {
		cancel()
		t.Fatalf("start %s: %v", id, err)
	}
	t.Cleanup(func() {
		unsub()
		_ = m.Stop(context.Background())
		cancel()
	})
	return &member{Membership: m, id: id, cancel: cancel, sub: sub}, p
}

// checkAssigned reports whether each of ms sees exactly the live members
// live, divides the space among exactly assigned, and owns its range of
// Assign(assigned), or nothing if it is not in assigned.
func checkAssigned(live, assigned []string, ms ...*member) bool {
	want := Assign(assigned)
	for _, m := range ms {
		if !slices.Equal(m.Members(), sortedUnique(live)) || !slices.Equal(m.Assigned(), sortedUnique(assigned)) {
			return false
		}
		r, ok := want[m.id]
		got := m.Ranges()
		if ok != (len(got) == 1) || (ok && got[0] != r) {
			return false
		}
	}
	return true
}

// notReadyAnnotation is the AnnotationNotReady of the Lease name, and
// whether it is there.
func notReadyAnnotation(t *testing.T, client *fake.Clientset, name string) (string, bool) {
	t.Helper()
	l, err := client.CoordinationV1().Leases(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := l.Annotations[AnnotationNotReady]
	return v, ok
}

// TestMembershipHealthGivesUpShare: a member whose check fails at every
// renewal for the grace (the lease duration) publishes itself not ready at
// that renewal, not before; the others divide the space without it while
// it stays a live member that owns nothing; at the first renewal at which
// its check passes, it takes its share back.
func TestMembershipHealthGivesUpShare(t *testing.T) {
	client := fake.NewClientset()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := newFakeClock(t0)
	a, pa := startChecked(t, client, clk, "a", nil)
	b, _ := startChecked(t, client, clk, "b", nil)
	c, pc := startChecked(t, client, clk, "c", nil)
	all := []string{"a", "b", "c"}
	eventually(t, clk, "three members agree", func() bool { return checkAssigned(all, all, a, b, c) })
	r2, _ := Split(2, 3)
	latest(t, c.sub, []Range{r2})

	pc.failing.Store(true)
	// Failing at the renewals of t0+5s (the streak starts), +10s and +15s:
	// 10 s of failure, less than the grace.
	for range 3 {
		stepAll(t, client, clk, testR, a, b, c)
		if _, ok := notReadyAnnotation(t, client, c.LeaseName()); ok {
			t.Fatalf("c published itself not ready at %s, before the grace", clk.Now().Format(time.TimeOnly))
		}
		if err := c.Health(); err != nil {
			t.Fatalf("c.Health at %s: %v", clk.Now().Format(time.TimeOnly), err)
		}
	}
	if !checkAssigned(all, all, a, b, c) {
		t.Fatalf("c lost its share within the grace: c owns %v, a assigns among %v", c.Ranges(), a.Assigned())
	}
	// t0+20s: 15 s of failure at every renewal.
	stepAll(t, client, clk, testR, a, b, c)
	msg, ok := notReadyAnnotation(t, client, c.LeaseName())
	if !ok || !strings.Contains(msg, "configmaps is forbidden") || !strings.Contains(msg, t0.Add(testR).Format(time.RFC3339)) {
		t.Fatalf("c's Lease after the grace: annotation %q (present %v), want the failure and its start", msg, ok)
	}
	// The Lease is written before c records the write.
	eventually(t, clk, "c.Health to report the failure", func() bool { return c.Health() != nil })
	if err := c.Health(); !strings.Contains(err.Error(), "shards/ctrl-c is not ready") || !strings.Contains(err.Error(), "configmaps is forbidden") {
		t.Fatalf("c.Health: %v", err)
	}
	eventually(t, clk, "a and b divide the space without c", func() bool {
		return checkAssigned(all, []string{"a", "b"}, a, b, c)
	})
	latest(t, c.sub, []Range{})
	h0, _ := Split(0, 2)
	latest(t, a.sub, []Range{h0})
	if pa.calls.Load() == 0 {
		t.Fatal("a's check was never called")
	}

	// Still failing: c stays live but out, and keeps renewing.
	stepAll(t, client, clk, testR, a, b, c)
	if !checkAssigned(all, []string{"a", "b"}, a, b, c) {
		t.Fatalf("a assigns among %v, c owns %v", a.Assigned(), c.Ranges())
	}

	// The check passes: c rejoins at its next renewal.
	pc.failing.Store(false)
	stepAll(t, client, clk, testR, a, b, c)
	if _, ok := notReadyAnnotation(t, client, c.LeaseName()); ok {
		t.Fatal("c's Lease still says not ready after a passing check")
	}
	eventually(t, clk, "c takes its share back", func() bool { return checkAssigned(all, all, a, b, c) })
	latest(t, c.sub, []Range{r2})
	if err := c.Health(); err != nil { // c's ranges follow its own write
		t.Fatalf("c.Health after recovery: %v", err)
	}
}

// TestMembershipHealthAllNotReady: when every live member is unhealthy (a
// cluster-wide outage), the space stays divided among all of them; once one
// recovers it takes the whole space, and the other rejoins when it does.
func TestMembershipHealthAllNotReady(t *testing.T) {
	client := fake.NewClientset()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := newFakeClock(t0)
	a, pa := startChecked(t, client, clk, "a", nil)
	b, pb := startChecked(t, client, clk, "b", nil)
	both := []string{"a", "b"}
	eventually(t, clk, "two members agree", func() bool { return checkAssigned(both, both, a, b) })
	pa.failing.Store(true)
	pb.failing.Store(true)
	for range 4 { // t0+5s .. t0+20s: both reach the grace together
		stepAll(t, client, clk, testR, a, b)
	}
	for _, m := range []*member{a, b} {
		if _, ok := notReadyAnnotation(t, client, m.LeaseName()); !ok {
			t.Fatalf("%s is not published as not ready", m.id)
		}
	}
	eventually(t, clk, "both keep their shares", func() bool { return checkAssigned(both, both, a, b) })
	for range 2 {
		stepAll(t, client, clk, testR, a, b)
		if !checkAssigned(both, both, a, b) {
			t.Fatalf("at %s: a owns %v, b owns %v; want both to keep their shares", clk.Now().Format(time.TimeOnly), a.Ranges(), b.Ranges())
		}
	}

	pa.failing.Store(false)
	stepAll(t, client, clk, testR, a, b)
	eventually(t, clk, "a, the only ready member, owns everything", func() bool {
		return checkAssigned(both, []string{"a"}, a, b)
	})
	latest(t, a.sub, []Range{Full})
	latest(t, b.sub, []Range{})

	pb.failing.Store(false)
	stepAll(t, client, clk, testR, a, b)
	eventually(t, clk, "b rejoins", func() bool { return checkAssigned(both, both, a, b) })
}

// TestMembershipHealthGrace: failures count only when they are seen at
// every renewal; a grace that is not a multiple of the renew interval ends
// at the first renewal past it; a negative grace turns the rule off, and a
// removed check no longer counts.
func TestMembershipHealthGrace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	t.Run("a passing renewal restarts the streak", func(t *testing.T) {
		client := fake.NewClientset()
		clk := newFakeClock(t0)
		a, pa := startChecked(t, client, clk, "a", nil)
		// Failing at t0+5s and +10s, passing at +15s, failing from +20s:
		// not ready at +35s, 15 s after the streak began again.
		steps := []bool{true, true, false, true, true, true}
		for _, fail := range steps {
			pa.failing.Store(fail)
			stepAll(t, client, clk, testR, a)
			if _, ok := notReadyAnnotation(t, client, a.LeaseName()); ok {
				t.Fatalf("not ready at %s", clk.Now().Sub(t0))
			}
		}
		stepAll(t, client, clk, testR, a) // t0+35s
		if _, ok := notReadyAnnotation(t, client, a.LeaseName()); !ok {
			t.Fatalf("ready at %s after failing at every renewal since t0+20s", clk.Now().Sub(t0))
		}
		// Alone and not ready: it keeps the whole space.
		eventually(t, clk, "a keeps everything", func() bool { return checkAssigned([]string{"a"}, []string{"a"}, a) })
	})

	t.Run("grace between renewals", func(t *testing.T) {
		client := fake.NewClientset()
		clk := newFakeClock(t0)
		a, pa := startChecked(t, client, clk, "a", func(c *MembershipConfig) { c.HealthGrace = 7 * time.Second })
		pa.failing.Store(true)
		stepAll(t, client, clk, testR, a) // t0+5s: the streak starts
		stepAll(t, client, clk, testR, a) // t0+10s: 5 s
		if _, ok := notReadyAnnotation(t, client, a.LeaseName()); ok {
			t.Fatal("not ready 5 s into a 7 s grace")
		}
		stepAll(t, client, clk, testR, a) // t0+15s: 10 s
		if _, ok := notReadyAnnotation(t, client, a.LeaseName()); !ok {
			t.Fatal("ready 10 s into a 7 s grace")
		}
	})

	t.Run("negative grace", func(t *testing.T) {
		client := fake.NewClientset()
		clk := newFakeClock(t0)
		a, pa := startChecked(t, client, clk, "a", func(c *MembershipConfig) { c.HealthGrace = -1 })
		b, _ := startChecked(t, client, clk, "b", nil)
		pa.failing.Store(true)
		for range 5 {
			stepAll(t, client, clk, testR, a, b)
		}
		if _, ok := notReadyAnnotation(t, client, a.LeaseName()); ok {
			t.Fatal("not ready with the rule off")
		}
		if n := pa.calls.Load(); n != 0 {
			t.Fatalf("check called %d times with the rule off", n)
		}
		if !checkAssigned([]string{"a", "b"}, []string{"a", "b"}, a, b) {
			t.Fatalf("a owns %v, b owns %v", a.Ranges(), b.Ranges())
		}
	})

	t.Run("long failure", func(t *testing.T) {
		client := fake.NewClientset()
		clk := newFakeClock(t0)
		a, _ := startChecked(t, client, clk, "a", func(c *MembershipConfig) { c.HealthGrace = time.Nanosecond })
		a.AddHealthCheck(func() error { return errors.New(strings.Repeat("é", 1000)) }) // 2,000 bytes
		stepAll(t, client, clk, testR, a)
		stepAll(t, client, clk, testR, a)
		msg, ok := notReadyAnnotation(t, client, a.LeaseName())
		if !ok || len(msg) > maxNotReady || !utf8.ValidString(msg) || !strings.HasSuffix(msg, "...") {
			t.Fatalf("annotation of %d bytes (valid UTF-8: %v): %.80q...", len(msg), utf8.ValidString(msg), msg)
		}
	})

	t.Run("renewals failing too", func(t *testing.T) {
		// The API server is down: the check and the renewals fail. The
		// streak starts at the first renewal that reaches the server again.
		client := fake.NewClientset()
		clk := newFakeClock(t0)
		a, pa := startChecked(t, client, clk, "a", nil)
		var down atomic.Bool
		client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			if down.Load() {
				return true, nil, apierrors.NewServiceUnavailable("apiserver down")
			}
			return false, nil, nil
		})
		down.Store(true)
		pa.failing.Store(true)
		for i := 1; i <= 3; i++ { // t0+5s, +10s, +15s: a's Lease expires
			waitArmed(t, clk, t0.Add(time.Duration(i)*testR), a)
			clk.Step(testR)
		}
		latest(t, a.sub, []Range{})
		down.Store(false)
		stepAll(t, client, clk, testR, a) // t0+20s: back, the streak starts
		latest(t, a.sub, []Range{Full})
		stepAll(t, client, clk, testR, a) // t0+25s
		stepAll(t, client, clk, testR, a) // t0+30s
		if _, ok := notReadyAnnotation(t, client, a.LeaseName()); ok {
			t.Fatal("not ready 10 s after the first renewal that reached the server")
		}
		stepAll(t, client, clk, testR, a) // t0+35s
		if msg, ok := notReadyAnnotation(t, client, a.LeaseName()); !ok || !strings.Contains(msg, t0.Add(4*testR).Format(time.RFC3339)) {
			t.Fatalf("annotation %q (present %v), want a streak from t0+20s", msg, ok)
		}
	})

	t.Run("removed check", func(t *testing.T) {
		client := fake.NewClientset()
		clk := newFakeClock(t0)
		a, _ := startChecked(t, client, clk, "a", nil)
		b, _ := startChecked(t, client, clk, "b", nil)
		var calls atomic.Int32
		remove := b.AddHealthCheck(func() error {
			calls.Add(1)
			return errors.New("broken")
		})
		if b.AddHealthCheck(nil) == nil {
			t.Fatal("AddHealthCheck(nil) returned a nil remove")
		}
		for range 4 {
			stepAll(t, client, clk, testR, a, b)
		}
		eventually(t, clk, "b out", func() bool { return checkAssigned([]string{"a", "b"}, []string{"a"}, a, b) })
		remove()
		remove() // harmless
		n := calls.Load()
		stepAll(t, client, clk, testR, a, b)
		eventually(t, clk, "b back", func() bool { return checkAssigned([]string{"a", "b"}, []string{"a", "b"}, a, b) })
		if calls.Load() != n {
			t.Fatal("a removed check was called")
		}
	})
}

// TestMembershipHealthHandWritten: a Lease another tool marked not ready
// with an empty annotation is not assigned a share.
func TestMembershipHealthHandWritten(t *testing.T) {
	client := fake.NewClientset()
	clk := newFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a, _ := startChecked(t, client, clk, "a", nil)
	b, _ := startChecked(t, client, clk, "b", nil)
	both := []string{"a", "b"}
	eventually(t, clk, "two members agree", func() bool { return checkAssigned(both, both, a, b) })
	l, err := client.CoordinationV1().Leases(testNS).Get(context.Background(), b.LeaseName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Annotations = map[string]string{AnnotationNotReady: ""}
	if _, err := client.CoordinationV1().Leases(testNS).Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, clk, "a assigns without b", func() bool {
		return slices.Equal(a.Assigned(), []string{"a"}) && slices.Equal(a.Ranges(), []Range{Full})
	})
}
