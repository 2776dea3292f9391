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
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const (
	testNS   = "shards"
	testCtrl = "ctrl"
	testD    = 15 * time.Second
	testR    = 5 * time.Second
)

func testConfig(client *fake.Clientset, clk *fakeClock, id string) MembershipConfig {
	return MembershipConfig{Client: client, Namespace: testNS, Controller: testCtrl, Identity: id,
		LeaseDuration: testD, RenewInterval: testR, Clock: clk}
}

type member struct {
	*Membership
	id     string
	cancel context.CancelFunc
	sub    <-chan []Range
}

func startMember(t *testing.T, client *fake.Clientset, clk *fakeClock, id string) *member {
	t.Helper()
	m, err := NewMembership(testConfig(client, clk, id))
	if err != nil {
		t.Fatal(err)
	}
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
	return &member{Membership: m, id: id, cancel: cancel, sub: sub}
}

// eventually polls cond in real time; the membership's own time is the fake
// clock, but informer events arrive asynchronously.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// checkPartition asserts that all members agree on the member list and own
// disjoint ranges whose union is the whole space, in the order of Assign.
func checkPartition(t *testing.T, ms ...*member) bool {
	t.Helper()
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.id)
	}
	return checkView(ids, ms...)
}

// checkView reports whether each of ms sees exactly the members ids and owns
// its range of Assign(ids).
func checkView(ids []string, ms ...*member) bool {
	want := Assign(ids)
	for _, m := range ms {
		if !slices.Equal(m.Members(), sortedUnique(ids)) {
			return false
		}
		if got := m.Ranges(); len(got) != 1 || got[0] != want[m.id] {
			return false
		}
	}
	return true
}

// latest drains sub and returns the newest value received.
func latest(t *testing.T, sub <-chan []Range, want []Range) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got, ok := <-sub:
			if !ok {
				t.Fatalf("subscription closed, want %v", want)
			}
			if slices.Equal(got, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no notification of %v", want)
		}
	}
}

func TestMembershipConfigErrors(t *testing.T) {
	client := fake.NewClientset()
	good := testConfig(client, nil, "a")
	cases := []struct {
		name string
		edit func(*MembershipConfig)
		want string
	}{
		{"nil client", func(c *MembershipConfig) { c.Client = nil }, "Client is nil"},
		{"empty namespace", func(c *MembershipConfig) { c.Namespace = "" }, "Namespace is empty"},
		{"bad namespace", func(c *MembershipConfig) { c.Namespace = "Bad_NS" }, `"Bad_NS"`},
		{"empty controller", func(c *MembershipConfig) { c.Controller = "" }, "Controller is empty"},
		{"bad controller", func(c *MembershipConfig) { c.Controller = "a/b" }, `"a/b"`},
		{"empty identity", func(c *MembershipConfig) { c.Identity = "" }, "Identity is empty"},
		{"bad identity", func(c *MembershipConfig) { c.Identity = "Pod_1" }, `"Pod_1"`},
		{"zero duration", func(c *MembershipConfig) { c.LeaseDuration = 0 }, "LeaseDuration 0s must be positive"},
		{"negative duration", func(c *MembershipConfig) { c.LeaseDuration = -time.Second }, "LeaseDuration -1s must be positive"},
		{"fractional duration", func(c *MembershipConfig) { c.LeaseDuration = 1500 * time.Millisecond }, "1.5s must be a whole number"},
		{"zero renew", func(c *MembershipConfig) { c.RenewInterval = 0 }, "RenewInterval 0s must be positive"},
		{"negative renew", func(c *MembershipConfig) { c.RenewInterval = -time.Second }, "RenewInterval -1s must be positive"},
		{"renew not shorter", func(c *MembershipConfig) { c.RenewInterval = testD }, "RenewInterval 15s must be shorter than LeaseDuration 15s"},
	}
	for _, c := range cases {
		cfg := good
		c.edit(&cfg)
		_, err := NewMembership(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := NewMembership(good); err != nil {
		t.Errorf("good config: %v", err)
	}
}

func TestAssign(t *testing.T) {
	a := Assign([]string{"c", "a", "b", "a"})
	b := Assign([]string{"b", "c", "a"})
	if len(a) != 3 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("assignments differ: %v vs %v", a, b)
	}
	for i, id := range []string{"a", "b", "c"} {
		if r, _ := Split(i, 3); a[id] != r {
			t.Errorf("%s got %s, want %s", id, a[id], r)
		}
	}
	if got := Assign([]string{"solo"}); got["solo"] != Full {
		t.Errorf("single member: %v", got)
	}
	if got := Assign(nil); len(got) != 0 {
		t.Errorf("no members: %v", got)
	}
}

// TestMembershipJoinLeave: members join and each sees the same partition;
// a graceful Stop deletes the Lease and the survivors take over without any
// clock movement, so not through expiry.
func TestMembershipJoinLeave(t *testing.T) {
	client := fake.NewClientset()
	clk := newFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := startMember(t, client, clk, "a")
	latest(t, a.sub, []Range{Full})

	b := startMember(t, client, clk, "b")
	c := startMember(t, client, clk, "c")
	eventually(t, "three members agree", func() bool { return checkPartition(t, a, b, c) })
	r0, _ := Split(0, 3)
	r1, _ := Split(1, 3)
	latest(t, a.sub, []Range{r0})
	latest(t, b.sub, []Range{r1})

	l, err := client.CoordinationV1().Leases(testNS).Get(context.Background(), "ctrl-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Labels[LabelController] != testCtrl || holder(l) != "b" || *l.Spec.LeaseDurationSeconds != 15 || !l.Spec.RenewTime.Time.Equal(clk.Now()) {
		t.Fatalf("lease %+v", l)
	}

	if err := b.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoordinationV1().Leases(testNS).Get(context.Background(), "ctrl-b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("lease of stopped member: %v", err)
	}
	eventually(t, "a and c take over b's range", func() bool { return checkPartition(t, a, c) })
	h0, _ := Split(0, 2)
	latest(t, a.sub, []Range{h0})
	for range b.sub { // closed by Stop
	}
	if err := b.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if ch, _ := b.Subscribe(); func() bool { _, ok := <-ch; return ok }() {
		t.Fatal("Subscribe after Stop: channel open")
	}
	if err := b.Start(context.Background()); err == nil {
		t.Fatal("restart of a stopped membership succeeded")
	}
}

// waitIdle waits until the loops of ms wait in their select: a Step then
// cannot fall between a loop reading the time and arming its wake-up.
func waitIdle(t *testing.T, ms ...*member) {
	t.Helper()
	for _, m := range ms {
		eventually(t, m.id+" idle", m.idle.Load)
	}
}

// stepAll advances the fake clock by d once the loops of live are idle, then
// waits until each has written renewTime = now.
func stepAll(t *testing.T, client *fake.Clientset, clk *fakeClock, d time.Duration, live ...*member) {
	t.Helper()
	waitIdle(t, live...)
	clk.Step(d)
	for _, m := range live {
		eventually(t, m.id+" renewed", func() bool {
			l, err := client.CoordinationV1().Leases(testNS).Get(context.Background(), m.LeaseName(), metav1.GetOptions{})
			return err == nil && l.Spec.RenewTime.Time.Equal(clk.Now())
		})
	}
}

// fakeClock is a manual Clock. k8s.io/utils/clock/testing would do, but
// importing it from the library module would make k8s.io/utils a direct
// requirement of go.mod.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{now: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{at: c.now.Add(d), ch: ch})
	return ch
}

func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}

// TestMembershipExpiry: a member that stops renewing (its context is
// canceled, its Lease stays) is dropped by the others exactly when
// renewTime + leaseDurationSeconds passes: not before, and at that instant
// through the expiry timer, not at the next renewal tick.
func TestMembershipExpiry(t *testing.T) {
	client := fake.NewClientset()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := newFakeClock(t0)
	a := startMember(t, client, clk, "a")
	b := startMember(t, client, clk, "b")
	eventually(t, "two members agree", func() bool { return checkPartition(t, a, b) })
	waitIdle(t, a, b)
	clk.Step(2 * time.Second)             // no tick: a and b renew at t0+5s, +10s, ...
	c := startMember(t, client, clk, "c") // renewTime t0+2s, expires t0+17s
	eventually(t, "three members agree", func() bool { return checkPartition(t, a, b, c) })

	c.cancel()
	for range c.sub { // closed when its loop ends
	}
	if r := c.Ranges(); len(r) != 0 {
		t.Fatalf("canceled member still owns %v", r)
	}
	if _, err := client.CoordinationV1().Leases(testNS).Get(context.Background(), "ctrl-c", metav1.GetOptions{}); err != nil {
		t.Fatalf("canceled member must keep its Lease until expiry: %v", err)
	}
	stepAll(t, client, clk, 3*time.Second, a, b) // t0+5s
	stepAll(t, client, clk, testR, a, b)         // t0+10s
	stepAll(t, client, clk, testR, a, b)         // t0+15s
	if !checkView([]string{"a", "b", "c"}, a, b) {
		t.Fatalf("c dropped 13s after its last renewal: members %v", a.Members())
	}
	// t0+17s: c's renewTime + 15s is not after now. No renewal is due (next
	// at t0+20s) and no Lease is written; only the wake-up at c's expiry
	// can notice. Let the informer events of the t0+15s renewals settle
	// first, so that they cannot be what wakes the loops.
	time.Sleep(200 * time.Millisecond)
	waitIdle(t, a, b)
	clk.Step(2 * time.Second)
	eventually(t, "a and b take over c's range", func() bool { return checkPartition(t, a, b) })
}

// TestMembershipSelfFencing: a member that cannot renew drops its ranges
// when its own Lease expires, and takes them back once it renews again.
func TestMembershipSelfFencing(t *testing.T) {
	client := fake.NewClientset()
	clk := newFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := startMember(t, client, clk, "a")
	latest(t, a.sub, []Range{Full})
	var fail atomic.Bool
	fail.Store(true)
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail.Load() {
			return true, nil, apierrors.NewServiceUnavailable("etcd down")
		}
		return false, nil, nil
	})
	for i := 0; i < 3; i++ {
		waitIdle(t, a)
		clk.Step(testR)
	}
	latest(t, a.sub, []Range{})
	if len(a.Members()) != 0 {
		t.Fatalf("members %v", a.Members())
	}
	fail.Store(false)
	waitIdle(t, a)
	clk.Step(testR)
	latest(t, a.sub, []Range{Full})
}

// TestMembershipConflictRetried: a Conflict (someone wrote our Lease since
// we read it) is answered by a re-read and one more update.
func TestMembershipConflictRetried(t *testing.T) {
	client := fake.NewClientset()
	clk := newFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := startMember(t, client, clk, "a")
	var conflicts atomic.Int32
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts.CompareAndSwap(0, 1) {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "ctrl-a", errors.New("stale"))
		}
		return false, nil, nil
	})
	stepAll(t, client, clk, testR, a)
	if n := conflicts.Load(); n != 1 {
		t.Fatalf("conflicts %d", n)
	}
	var gets int
	for _, act := range client.Actions() {
		if act.GetVerb() == "get" && act.GetResource().Resource == "leases" {
			gets++
		}
	}
	if gets < 2 { // one at Start, one after the conflict
		t.Fatalf("lease re-read %d times, want a Get after the conflict", gets)
	}
}

// TestMembershipStartErrors: a Lease write the server refuses fails Start.
func TestMembershipStartErrors(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "ctrl-a", errors.New("no RBAC"))
	})
	m, err := NewMembership(testConfig(client, newFakeClock(time.Now()), "a"))
	if err != nil {
		t.Fatal(err)
	}
	err = m.Start(context.Background())
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "shards/ctrl-a") {
		t.Fatalf("Start error %v, want Forbidden naming the Lease", err)
	}
}

// TestMembershipIgnoresOtherControllers: Leases of another controller, or
// without a holder, are not members.
func TestMembershipIgnoresOtherControllers(t *testing.T) {
	clk := newFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	dur := int32(15)
	other, empty := "x", ""
	now := metav1.NewMicroTime(clk.Now())
	client := fake.NewClientset(
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "other-x", Namespace: testNS, Labels: map[string]string{LabelController: "other"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &other, LeaseDurationSeconds: &dur, RenewTime: &now}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "ctrl-released", Namespace: testNS, Labels: map[string]string{LabelController: testCtrl}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &empty, LeaseDurationSeconds: &dur, RenewTime: &now}},
	)
	a := startMember(t, client, clk, "a")
	latest(t, a.sub, []Range{Full})
	if got := a.Members(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("members %v", got)
	}
}
