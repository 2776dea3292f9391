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
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

const (
	testNS   = "shards"
	testCtrl = "ctrl"
	testD    = 15 * time.Second
	testR    = 5 * time.Second
)

// testConfig is the configuration of member id; with a fake clock, the
// member runs on its own view of it (clk.member(id)).
func testConfig(client *fake.Clientset, clk *fakeClock, id string) MembershipConfig {
	cfg := MembershipConfig{Client: client, Namespace: testNS, Controller: testCtrl, Identity: id,
		LeaseDuration: testD, RenewInterval: testR}
	if clk != nil {
		cfg.Clock = clk.member(id)
	}
	return cfg
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

// eventually waits until cond holds. cond reads what a membership's loop
// changes (its members and ranges, the Leases it writes), and the loop arms
// a wake-up on the fake clock after every change (the loop's last step),
// so cond is evaluated after each wake-up armed and each clock step rather
// than polled. The real-time limit only turns a hang into a failure.
func eventually(t *testing.T, clk *fakeClock, what string, cond func() bool) {
	t.Helper()
	limit := time.NewTimer(10 * time.Second)
	defer limit.Stop()
	for {
		changed := clk.changes()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-limit.C:
			t.Fatalf("timed out waiting for %s", what)
		}
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
		{"duration beyond int32 seconds", func(c *MembershipConfig) { c.LeaseDuration = (1 << 31) * time.Second }, "is too long"},
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
	eventually(t, clk, "three members agree", func() bool { return checkPartition(t, a, b, c) })
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
	eventually(t, clk, "a and c take over b's range", func() bool { return checkPartition(t, a, c) })
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

// waitArmed waits until the loop of each of ms waits for a wake-up at the
// instant at, and no earlier: its next renewal or the next expiry it must
// apply. A Step to at then wakes each of them.
func waitArmed(t *testing.T, clk *fakeClock, at time.Time, ms ...*member) {
	t.Helper()
	for _, m := range ms {
		eventually(t, clk, fmt.Sprintf("%s to wait for %s", m.id, at.Format(time.TimeOnly)), func() bool {
			return clk.armed(m.id).Equal(at)
		})
	}
}

// stepAll advances the fake clock by d, to the next renewal of the live
// members, once each of them waits for exactly that instant; then it waits
// until each has written renewTime = now.
func stepAll(t *testing.T, client *fake.Clientset, clk *fakeClock, d time.Duration, live ...*member) {
	t.Helper()
	waitArmed(t, clk, clk.Now().Add(d), live...)
	clk.Step(d)
	for _, m := range live {
		eventually(t, clk, m.id+" renewed", func() bool {
			return renewTime(client, m.LeaseName()).Equal(clk.Now())
		})
	}
}

// renewTime is spec.renewTime of the Lease name (zero if there is none).
func renewTime(client *fake.Clientset, name string) time.Time {
	l, err := client.CoordinationV1().Leases(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || l.Spec.RenewTime == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Time
}

// fakeClock is a manual clock shared by the members of a test, each through
// its own view (member), so that the test sees what each member's loop
// waits for. k8s.io/utils/clock/testing would not show that, and importing
// it from the library module would make k8s.io/utils a direct requirement
// of go.mod.
//
// Time moves only in Step. A member's After(d) fires at the instant its
// last Now returned plus d: the loop computes d as deadline - Now(), so its
// wake-up is armed at its deadline exactly, even if a Step falls between
// the two calls (a deadline already passed fires at once). Without this, a
// Step concurrent with a busy loop would push its wake-up later by the
// step, and a test would have to wait for the loop to be idle first.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	members map[string]*memberClock
	changed chan struct{} // closed, and replaced, at each After and Step
}

// memberClock is one member's view of a fakeClock; its fields are guarded
// by the fakeClock's mu.
type memberClock struct {
	c    *fakeClock
	read time.Time // what Now last returned
	// The wake-up the member's loop waits for: its last After, unless fired.
	// An earlier one is abandoned: the loop selects only on its last After.
	at time.Time
	ch chan time.Time
}

func newFakeClock(t time.Time) *fakeClock {
	return &fakeClock{now: t, members: map[string]*memberClock{}, changed: make(chan struct{})}
}

// member returns the view of member id, the Clock of its MembershipConfig.
func (c *fakeClock) member(id string) *memberClock {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.members[id] == nil {
		c.members[id] = &memberClock{c: c}
	}
	return c.members[id]
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Step moves the time by d and fires every wake-up due.
func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, m := range c.members {
		if m.ch != nil && !m.at.After(c.now) {
			m.ch <- c.now
			m.ch, m.at = nil, time.Time{}
		}
	}
	c.changedLocked()
}

// armed is the instant member id's loop waits for (zero if none).
func (c *fakeClock) armed(id string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.members[id]; m != nil {
		return m.at
	}
	return time.Time{}
}

// changes returns a channel closed at the next After or Step.
func (c *fakeClock) changes() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

func (c *fakeClock) changedLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (m *memberClock) Now() time.Time {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	m.read = m.c.now
	return m.read
}

func (m *memberClock) After(d time.Duration) <-chan time.Time {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	ch := make(chan time.Time, 1)
	at := m.read.Add(d)
	if m.read.IsZero() {
		at = m.c.now.Add(d)
	}
	if at.After(m.c.now) {
		m.at, m.ch = at, ch
	} else {
		ch <- m.c.now
		m.at, m.ch = time.Time{}, nil
	}
	m.c.changedLocked()
	return ch
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
	eventually(t, clk, "two members agree", func() bool { return checkPartition(t, a, b) })
	waitArmed(t, clk, t0.Add(testR), a, b) // their first renewal
	clk.Step(2 * time.Second)              // no tick: a and b renew at t0+5s, +10s, ...
	c := startMember(t, client, clk, "c")  // renewTime t0+2s, expires t0+17s
	eventually(t, clk, "three members agree", func() bool { return checkPartition(t, a, b, c) })

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
	// at t0+20s) and no Lease is written: each loop must wait for c's
	// expiry, the earliest instant, and apply it when it comes.
	cExpiry := t0.Add(2*time.Second + testD)
	waitArmed(t, clk, cExpiry, a, b)
	clk.Step(2 * time.Second)
	eventually(t, clk, "a and b take over c's range", func() bool { return checkPartition(t, a, b) })
	for _, m := range []*member{a, b} {
		if got, want := renewTime(client, m.LeaseName()), t0.Add(3*testR); !got.Equal(want) {
			t.Errorf("%s renewed at %s, want no renewal since %s", m.id, got.Format(time.TimeOnly), want.Format(time.TimeOnly))
		}
	}
	waitArmed(t, clk, t0.Add(4*testR), a, b) // back to the renewal schedule
}

// TestMembershipSelfFencing: a member that cannot renew drops its ranges
// when its own Lease expires, and takes them back once it renews again.
func TestMembershipSelfFencing(t *testing.T) {
	client := fake.NewClientset()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := newFakeClock(t0)
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
	// Renewals fail at t0+5s, +10s and +15s, when a's own Lease expires.
	for i := 1; i <= 3; i++ {
		waitArmed(t, clk, t0.Add(time.Duration(i)*testR), a)
		clk.Step(testR)
	}
	latest(t, a.sub, []Range{})
	if len(a.Members()) != 0 {
		t.Fatalf("members %v", a.Members())
	}
	fail.Store(false)
	waitArmed(t, clk, t0.Add(4*testR), a) // it keeps trying at every interval
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

// TestMembershipLeaseShapes: Leases of the controller that name no holder,
// have no renewTime or a non-positive duration are not members.
func TestMembershipLeaseShapes(t *testing.T) {
	clk := newFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewMicroTime(clk.Now())
	dur, zero := int32(15), int32(0)
	x, y, z := "x", "y", "z"
	lease := func(name string, spec coordinationv1.LeaseSpec) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: map[string]string{LabelController: testCtrl}}, Spec: spec}
	}
	client := fake.NewClientset(
		lease("ctrl-none", coordinationv1.LeaseSpec{LeaseDurationSeconds: &dur, RenewTime: &now}),
		lease("ctrl-x", coordinationv1.LeaseSpec{HolderIdentity: &x, LeaseDurationSeconds: &dur}),
		lease("ctrl-y", coordinationv1.LeaseSpec{HolderIdentity: &y, RenewTime: &now}),
		lease("ctrl-z", coordinationv1.LeaseSpec{HolderIdentity: &z, LeaseDurationSeconds: &zero, RenewTime: &now}),
	)
	a := startMember(t, client, clk, "a")
	latest(t, a.sub, []Range{Full})
	if got := a.Members(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("members %v, want only a", got)
	}
}

// TestMembershipSubscribe: a subscription taken while running receives the
// current ranges at once; cancel closes it; one taken after Stop is closed.
func TestMembershipSubscribe(t *testing.T) {
	client := fake.NewClientset()
	clk := newFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := startMember(t, client, clk, "a")
	latest(t, a.sub, []Range{Full})
	sub, cancel := a.Subscribe()
	if got := <-sub; !slices.Equal(got, []Range{Full}) {
		t.Fatalf("late subscription received %v first, want the current ranges", got)
	}
	cancel()
	if _, ok := <-sub; ok {
		t.Fatal("canceled subscription still open")
	}
	cancel() // a second cancel is harmless
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	sub, cancel = a.Subscribe()
	if _, ok := <-sub; ok {
		t.Fatal("subscription taken after Stop is open")
	}
	cancel()
}

// TestMembershipStopBeforeStart: Stop of a membership never started writes
// nothing and closes its subscriptions; it cannot be started afterwards.
func TestMembershipStopBeforeStart(t *testing.T) {
	client := fake.NewClientset()
	m, err := NewMembership(testConfig(client, newFakeClock(time.Now()), "a"))
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := m.Subscribe()
	if err := m.Stop(context.Background()); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	if _, ok := <-sub; ok {
		t.Error("subscription open after Stop")
	}
	if err := m.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "starts once") {
		t.Errorf("Start after Stop: %v, want an error", err)
	}
	if acts := client.Actions(); len(acts) != 0 {
		t.Errorf("requests %v, want none", acts)
	}
}

// TestMembershipStartFailures: Start reports a Lease it cannot read, and a
// member list it cannot get before its context ends; either way the
// membership is stopped and its subscriptions closed.
func TestMembershipStartFailures(t *testing.T) {
	leases := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	t.Run("get", func(t *testing.T) {
		client := fake.NewClientset()
		client.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("etcd down")
		})
		m, err := NewMembership(testConfig(client, newFakeClock(time.Now()), "a"))
		if err != nil {
			t.Fatal(err)
		}
		sub, _ := m.Subscribe()
		if err := m.Start(context.Background()); !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "shards/ctrl-a") {
			t.Fatalf("Start error %v, want ServiceUnavailable naming the Lease", err)
		}
		if _, ok := <-sub; ok {
			t.Error("subscription open after a failed Start")
		}
	})
	t.Run("list", func(t *testing.T) {
		client := fake.NewClientset()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// The member list never arrives; the caller gives up.
		refuse := func(k8stesting.Action) (bool, runtime.Object, error) {
			cancel()
			return true, nil, apierrors.NewForbidden(leases, "", errors.New("no list"))
		}
		client.PrependReactor("list", "leases", refuse)
		client.PrependWatchReactor("leases", func(a k8stesting.Action) (bool, watch.Interface, error) {
			_, _, err := refuse(a)
			return true, nil, err
		})
		m, err := NewMembership(testConfig(client, newFakeClock(time.Now()), "a"))
		if err != nil {
			t.Fatal(err)
		}
		sub, _ := m.Subscribe()
		err = m.Start(ctx)
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "list Leases") {
			t.Fatalf("Start error %v, want one about listing Leases, wrapping context.Canceled", err)
		}
		if _, ok := <-sub; ok {
			t.Error("subscription open after a failed Start")
		}
		// Its Lease was written: Stop still releases it.
		if err := m.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoordinationV1().Leases(testNS).Get(context.Background(), "ctrl-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("Lease after Stop: %v, want NotFound", err)
		}
	})
}

// TestMembershipStopRelease: Stop succeeds when the Lease is already gone,
// and reports a deletion the server refuses.
func TestMembershipStopRelease(t *testing.T) {
	clk := newFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset()
	a := startMember(t, client, clk, "a")
	if err := client.CoordinationV1().Leases(testNS).Delete(context.Background(), a.LeaseName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(context.Background()); err != nil {
		t.Errorf("Stop with the Lease gone: %v", err)
	}

	b := startMember(t, client, clk, "b")
	client.PrependReactor("delete", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "ctrl-b", errors.New("no RBAC"))
	})
	err := b.Stop(context.Background())
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "release Lease shards/ctrl-b") {
		t.Errorf("Stop error %v, want Forbidden naming the Lease", err)
	}
	if len(b.Ranges()) != 0 || len(b.Members()) != 0 {
		t.Errorf("after a failed release: ranges %v, members %v; want none", b.Ranges(), b.Members())
	}
}

// TestMembershipLongIntervals: the renewal schedule follows the
// configuration, here intervals longer than a renewal request may take.
func TestMembershipLongIntervals(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := newFakeClock(t0)
	client := fake.NewClientset()
	cfg := testConfig(client, clk, "a")
	cfg.LeaseDuration, cfg.RenewInterval = time.Minute, 20*time.Second
	m, err := NewMembership(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Stop(context.Background()) }()
	a := &member{Membership: m, id: "a"}
	l, err := client.CoordinationV1().Leases(testNS).Get(context.Background(), m.LeaseName(), metav1.GetOptions{})
	if err != nil || *l.Spec.LeaseDurationSeconds != 60 {
		t.Fatalf("Lease %+v, %v; want leaseDurationSeconds 60", l, err)
	}
	waitArmed(t, clk, t0.Add(20*time.Second), a)
	clk.Step(20 * time.Second)
	eventually(t, clk, "a renewed", func() bool { return renewTime(client, m.LeaseName()).Equal(clk.Now()) })
}

// TestMembershipSlowRenewal: a renewal that takes a whole interval is
// followed by the next one at once, so the Lease never falls an interval
// behind.
func TestMembershipSlowRenewal(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := newFakeClock(t0)
	client := fake.NewClientset()
	a := startMember(t, client, clk, "a")
	var slow atomic.Bool
	slow.Store(true)
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if slow.CompareAndSwap(true, false) {
			clk.Step(testR) // the server answers an interval later
		}
		return false, nil, nil
	})
	waitArmed(t, clk, t0.Add(testR), a)
	clk.Step(testR)
	// The renewal started at t0+5s and ended at t0+10s, when the next was due.
	eventually(t, clk, "a renewed at t0+10s", func() bool { return renewTime(client, a.LeaseName()).Equal(t0.Add(2 * testR)) })
	if now := clk.Now(); !now.Equal(t0.Add(2 * testR)) {
		t.Fatalf("clock at %s", now.Format(time.TimeOnly))
	}
}
