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
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// LabelController is the label on every member Lease; its value is
// [MembershipConfig.Controller]. Members of one controller list and watch the
// Leases with their value, so several controllers can share a namespace.
const LabelController = "sharding.kubeinformers.io/controller"

// AnnotationNotReady is on the Lease of a member that has given up its
// share because its health checks have failed for longer than
// [MembershipConfig.HealthGrace]; its value is the failure. See the Health
// section of [Membership].
const AnnotationNotReady = "sharding.kubeinformers.io/not-ready"

// Defaults suggested for [MembershipConfig]: a member that dies is replaced
// after at most DefaultLeaseDuration; renewing every third of it leaves two
// renewals of slack for a slow API server.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewInterval = 5 * time.Second
)

// MembershipConfig configures a [Membership]. Every field but Clock is
// required.
type MembershipConfig struct {
	// Client reaches the API server; only its coordination.k8s.io/v1 Leases
	// are used (get, create, update, delete, list and watch in Namespace).
	Client kubernetes.Interface
	// Namespace holds the member Leases.
	Namespace string
	// Controller names the sharded controller; its members are the Leases
	// labeled LabelController=Controller. It must be a valid label value.
	Controller string
	// Identity names this member, unique among the members: the pod name
	// is a good choice. Two live processes with one Identity share one Lease
	// and own the same ranges.
	Identity string
	// LeaseDuration is how long a member stays live after its last renewal:
	// a whole number of seconds, at least one.
	LeaseDuration time.Duration
	// RenewInterval is how often this member renews its Lease; it must be
	// shorter than LeaseDuration (a third of it is a good value).
	RenewInterval time.Duration
	// HealthGrace is how long this member's health checks
	// ([Membership.AddHealthCheck]) may fail before it gives up its share;
	// see the Health section of [Membership]. Zero means LeaseDuration; a
	// negative value turns the rule off: the member always takes a share.
	HealthGrace time.Duration
	// Clock is the time source; nil means the real clock. Tests inject a
	// fake one.
	Clock Clock
}

// Clock is the time source of a [Membership]. k8s.io/utils/clock.RealClock
// and its testing.FakeClock satisfy it. A Membership reads Now, then waits
// with After for the time left until its next deadline (a renewal or a
// Lease's expiry), from one goroutine.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Membership is one member of a sharded controller. It holds its own
// coordination.k8s.io/v1 Lease, renews it, watches the other members' Leases
// and tells subscribers which hash ranges this member owns.
//
// # Members
//
// A Lease labeled [LabelController] with the controller's name is a live
// member while renewTime + leaseDurationSeconds is after the observer's
// clock; its identity is spec.holderIdentity. A member counts itself live
// while the renewTime of its own last successful write is unexpired by the
// same rule, so a member that cannot renew drops its ranges at the same
// instant (up to clock skew) at which the others consider it gone.
// Expiry is evaluated at the next expiry instant, not on a poll.
//
// # Assignment
//
// See [Assign]: the live identities are sorted and member i of n owns
// [Split](i, n). Every member that sees the same live Leases computes the same
// assignment; no leader, no consensus: the Leases and the API server's
// optimistic concurrency (each update carries the Lease's resourceVersion)
// are the whole protocol.
//
// # Bounds
//
// Let D be the lease duration, ε the clock skew between members, W the time
// the slowest member takes to see a Lease write through its watch (assumed
// shorter than D), and L one relist: the time a factory takes to list a
// range it has gained. A membership change takes effect at an instant t:
// when a Lease is created (join) or deleted (graceful [Membership.Stop]),
// or at renewTime + D (expiry). Each member applies a write between t and
// t + W; an expiry is applied from the clock, within ε of t, by every member
// whose cache holds the expired Lease's last renewTime. Because ranges are
// contiguous, one change may move ranges between any two members. So:
//
//   - Owned twice: at most W per change (ε for an expiry), the time between
//     the first and the last member applying it; plus one relist L if the
//     old owner's factory keeps a range until the informers for its new
//     ranges have synced.
//   - Owned by nobody: a range dropped by its old owner is taken by its new
//     owner at most W (ε for an expiry) later and covered one relist after
//     that: at most W + L per change. A member that dies unannounced last
//     renewed at some r no later than its death, so its Lease expires at
//     most D after the death, and its ranges are covered at most D + ε + L
//     after it. A graceful Stop deletes the Lease first, so the others take
//     over within W + L instead. A member that cannot renew stops owning at
//     its own expiry, the instant the others take over (up to ε).
//
// Subscribers see ranges, not objects: the factory is responsible for
// switching its informers and for the delete and add notifications of
// objects that leave or join its shard.
//
// # Health
//
// A member takes a share only while it can serve it. The rule, in full:
//
//   - Health checks ([Membership.AddHealthCheck]; the factory of
//     informers.WithShardMembership registers one) are called at every
//     renewal, just before the Lease is written.
//   - A member is unhealthy once some check has returned an error at
//     every renewal for at least [MembershipConfig.HealthGrace] (default:
//     the lease duration), counted from the first of those renewals whose
//     write reached the API server. It then publishes itself not ready:
//     the Lease it writes carries [AnnotationNotReady] with the error. It
//     keeps renewing, so it stays a live member. (A member that cannot
//     write its Lease loses its share at the Lease's expiry anyway; and
//     when the API server comes back from an outage, which every member's
//     informers failed through, each has the grace from its first
//     successful renewal for its informers to list again.)
//   - Every member assigns the hash space over the ready live members only
//     ([Membership.Assigned]), so a not-ready member owns nothing and its
//     ranges go to the others.
//   - At the first renewal at which every check passes, the member drops
//     the annotation and takes a share again.
//   - If no live member is ready, the space is assigned over all live
//     members, as if no member had a health check. A cluster-wide outage
//     (the API server failing every list, a resource missing or forbidden
//     everywhere) makes every member unhealthy; giving up then would leave
//     the whole space unowned, while keeping it loses nothing: the members
//     serve again as soon as the server does.
//
// Bounds, with R the renew interval and G the grace: checks that fail from
// t on are first seen failing at the renewal after t, at most R later, and
// the member publishes itself not ready at the first renewal at least G
// after that one: by t + G + R when G is a multiple of R (as with the
// default G = D and R = D/3), by t + G + 2R otherwise. The others apply it
// W later and cover its ranges one relist L after that. A member whose
// checks pass again rejoins at its next renewal, at most R later, plus W.
//
// The default G = D treats a member that cannot serve like one that
// crashed: its share is served again about one lease duration later.
// A shorter grace would make errors that fix themselves (an API server
// restart, an etcd leader election, the first retries of a reflector's
// backoff, 0.8 s, 1.6 s, 3.2 s, ...) move ranges, and every move, out and
// back, makes every member relist the ranges it gains.
type Membership struct {
	cfg       MembershipConfig
	clock     Clock
	grace     time.Duration // HealthGrace with its default; < 0: off
	leases    coordinationv1client.LeaseInterface
	leaseName string
	durSec    int32

	changed chan struct{} // informer events, capacity 1

	// lifecycle serializes Start and Stop, so Stop never races a Start
	// that is still writing the Lease or listing the members.
	lifecycle sync.Mutex

	mu        sync.Mutex
	state     int // stateNew, stateRunning, stateStopped
	lease     *coordinationv1.Lease
	lastRenew time.Time // renewTime of our last successful write
	computed  bool      // the first assignment is known
	members   []string
	assigned  []string // the members the space is divided among
	ranges    []Range
	checks    map[int]func() error
	nextCheck int
	// failingSince is the renewal from which some check has failed at
	// every renewal; zero while they pass.
	failingSince time.Time
	subs         map[int]chan []Range
	nextSub      int
	informer     cache.SharedIndexInformer
	cancel       context.CancelFunc
	done         chan struct{}
}

const (
	stateNew = iota
	stateRunning
	stateStopped
)

// NewMembership validates cfg and returns a Membership that has not yet
// written its Lease; call [Membership.Start].
func NewMembership(cfg MembershipConfig) (*Membership, error) {
	if cfg.Client == nil {
		return nil, errors.New("sharding: MembershipConfig.Client is nil")
	}
	if cfg.Namespace == "" {
		return nil, errors.New("sharding: MembershipConfig.Namespace is empty")
	}
	if errs := validation.IsDNS1123Label(cfg.Namespace); len(errs) > 0 {
		return nil, fmt.Errorf("sharding: MembershipConfig.Namespace %q: %v", cfg.Namespace, errs)
	}
	if cfg.Controller == "" {
		return nil, errors.New("sharding: MembershipConfig.Controller is empty")
	}
	if errs := validation.IsValidLabelValue(cfg.Controller); len(errs) > 0 {
		return nil, fmt.Errorf("sharding: MembershipConfig.Controller %q is not a valid label value: %v", cfg.Controller, errs)
	}
	if cfg.Identity == "" {
		return nil, errors.New("sharding: MembershipConfig.Identity is empty")
	}
	leaseName := cfg.Controller + "-" + cfg.Identity
	if errs := validation.IsDNS1123Subdomain(leaseName); len(errs) > 0 {
		return nil, fmt.Errorf("sharding: Lease name %q (controller-identity) for identity %q: %v", leaseName, cfg.Identity, errs)
	}
	if cfg.LeaseDuration <= 0 {
		return nil, fmt.Errorf("sharding: MembershipConfig.LeaseDuration %v must be positive", cfg.LeaseDuration)
	}
	if cfg.LeaseDuration%time.Second != 0 {
		// Lease.spec.leaseDurationSeconds is whole seconds; rounding would make
		// this member and the others disagree on its expiry.
		return nil, fmt.Errorf("sharding: MembershipConfig.LeaseDuration %v must be a whole number of seconds", cfg.LeaseDuration)
	}
	if cfg.LeaseDuration/time.Second > 1<<31-1 {
		return nil, fmt.Errorf("sharding: MembershipConfig.LeaseDuration %v is too long", cfg.LeaseDuration)
	}
	if cfg.RenewInterval <= 0 {
		return nil, fmt.Errorf("sharding: MembershipConfig.RenewInterval %v must be positive", cfg.RenewInterval)
	}
	if cfg.RenewInterval >= cfg.LeaseDuration {
		return nil, fmt.Errorf("sharding: MembershipConfig.RenewInterval %v must be shorter than LeaseDuration %v", cfg.RenewInterval, cfg.LeaseDuration)
	}
	clk := cfg.Clock
	if clk == nil {
		clk = realClock{}
	}
	grace := cfg.HealthGrace
	if grace == 0 {
		grace = cfg.LeaseDuration
	}
	return &Membership{
		cfg:       cfg,
		clock:     clk,
		grace:     grace,
		leases:    cfg.Client.CoordinationV1().Leases(cfg.Namespace),
		leaseName: leaseName,
		durSec:    int32(cfg.LeaseDuration / time.Second),
		changed:   make(chan struct{}, 1),
		subs:      map[int]chan []Range{},
		checks:    map[int]func() error{},
	}, nil
}

// Assign is the assignment every member computes: the distinct identities in
// members, sorted, and member i of n owning [Split](i, n). It returns one
// Range per identity.
//
// Contiguous equal ranges were chosen over rendezvous hashing of many small
// slots: each member's shard is one shardRange clause (the shortest
// selector and exactly what a static WithShard(field, i, n) sends), and shards are
// equal to within one hash value, so memory per replica is 1/n. The price
// is movement: a join or leave shifts the boundaries of most members, so
// about half of the space changes owner and each member relists once. Joins
// and leaves are rare next to the events a controller handles, and one
// relist is what a restart would cost anyway.
func Assign(members []string) map[string]Range {
	ids := sortedUnique(members)
	out := make(map[string]Range, len(ids))
	for i, id := range ids {
		r, _ := Split(i, len(ids)) // 0 <= i < len(ids): cannot fail
		out[id] = r
	}
	return out
}

func sortedUnique(members []string) []string {
	ids := slices.Clone(members)
	sort.Strings(ids)
	return slices.Compact(ids)
}

// Start writes this member's Lease, waits until the other members' Leases
// are listed, computes the first assignment and starts renewing. It returns
// the first error writing the Lease (for example Forbidden) without retrying.
//
// ctx bounds the membership's life: canceling it stops renewal without
// releasing the Lease, like a crash (the others take over after the lease
// duration). Call [Membership.Stop] to hand over at once.
func (m *Membership) Start(ctx context.Context) error {
	m.lifecycle.Lock()
	defer m.lifecycle.Unlock()
	m.mu.Lock()
	if m.state != stateNew {
		m.mu.Unlock()
		return fmt.Errorf("sharding: membership %s/%s already started or stopped; a Membership starts once", m.cfg.Namespace, m.leaseName)
	}
	m.state = stateRunning
	m.mu.Unlock()

	if err := m.renew(ctx); err != nil {
		m.mu.Lock()
		m.state = stateStopped
		m.closeSubsLocked()
		m.mu.Unlock()
		return err
	}

	runCtx, cancel := context.WithCancel(ctx)
	sel := LabelController + "=" + m.cfg.Controller
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return m.leases.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return m.leases.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, m.cfg.Client), &coordinationv1.Lease{}, 0, cache.Indexers{})
	signal := func() {
		select {
		case m.changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { signal() },
		UpdateFunc: func(interface{}, interface{}) { signal() },
		DeleteFunc: func(interface{}) { signal() },
	}); err != nil {
		cancel()
		return fmt.Errorf("sharding: watch Leases: %w", err)
	}
	done := make(chan struct{})
	m.mu.Lock()
	m.informer, m.cancel, m.done = inf, cancel, done
	m.mu.Unlock()

	infDone := make(chan struct{})
	go func() {
		defer close(infDone)
		inf.RunWithContext(runCtx)
	}()
	if !cache.WaitForCacheSync(runCtx.Done(), inf.HasSynced) {
		cancel()
		<-infDone
		close(done)
		m.mu.Lock()
		m.state = stateStopped
		m.closeSubsLocked()
		m.mu.Unlock()
		return fmt.Errorf("sharding: list Leases %q in namespace %s: %w", sel, m.cfg.Namespace, context.Cause(runCtx))
	}
	m.recompute()
	go func() {
		defer close(done)
		defer func() { <-infDone }()
		m.loop(runCtx)
	}()
	return nil
}

func (m *Membership) loop(ctx context.Context) {
	logger := klog.FromContext(ctx)
	m.mu.Lock()
	nextRenew := m.lastRenew.Add(m.cfg.RenewInterval) // Start has just renewed
	m.mu.Unlock()
	for {
		now := m.clock.Now()
		if !now.Before(nextRenew) {
			if err := m.renew(ctx); err != nil && ctx.Err() == nil {
				logger.Error(err, "Renewing shard membership Lease failed; retrying at the next interval", "namespace", m.cfg.Namespace, "lease", m.leaseName)
			}
			nextRenew = now.Add(m.cfg.RenewInterval)
		}
		// Wake at the next renewal or the next expiry of any live Lease,
		// ours included, so an expiry is applied when it happens rather than
		// at the next renewal; informer events wake the loop in between.
		deadline := nextRenew
		if next := m.recompute(); !next.IsZero() && next.Before(deadline) {
			deadline = next
		}
		wait := deadline.Sub(m.clock.Now())
		if wait <= 0 {
			continue
		}
		after := m.clock.After(wait)
		select {
		case <-ctx.Done():
			m.mu.Lock()
			if m.state == stateRunning {
				// Canceled without Stop: no longer a member here, and the
				// Lease expires for the others.
				m.state = stateStopped
				m.ranges, m.members, m.assigned = nil, nil, nil
				m.closeSubsLocked()
			}
			m.mu.Unlock()
			return
		case <-after:
		case <-m.changed:
		}
	}
}

// renew creates or updates this member's Lease with renewTime = now. The
// update carries the resourceVersion last read, so a concurrent writer of the
// same Lease makes it fail with a Conflict instead of being overwritten
// blindly; it is then re-read and written once more.
func (m *Membership) renew(ctx context.Context) error {
	// The server stores renewTime in microseconds; truncating here keeps our
	// own expiry identical to the one the others compute from the Lease.
	now := m.clock.Now().Truncate(time.Microsecond)
	notReady, failing := m.checkHealth(now)
	m.mu.Lock()
	cur := m.lease.DeepCopy()
	m.mu.Unlock()

	timeout := m.cfg.RenewInterval
	if timeout > 10*time.Second {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var written *coordinationv1.Lease
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if cur == nil {
			cur, err = m.leases.Get(ctx, m.leaseName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				cur, err = nil, nil
			}
			if err != nil {
				break
			}
		}
		if cur == nil {
			written, err = m.leases.Create(ctx, m.newLease(now, notReady), metav1.CreateOptions{})
		} else {
			written, err = m.leases.Update(ctx, m.updatedLease(cur, now, notReady), metav1.UpdateOptions{})
		}
		retry := apierrors.IsConflict(err) || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err)
		if !retry {
			break // success, or an error a re-read cannot fix
		}
		cur = nil // re-read and retry once
	}
	if err != nil {
		return fmt.Errorf("sharding: renew Lease %s/%s: %w", m.cfg.Namespace, m.leaseName, err)
	}
	m.mu.Lock()
	was := notReadyOf(m.lease)
	m.lease = written
	m.lastRenew = now
	if failing && m.failingSince.IsZero() {
		m.failingSince = now // a streak starts at a renewal that reached the server
	}
	m.mu.Unlock()
	switch is := notReadyOf(written); {
	case is != "" && was == "":
		klog.FromContext(ctx).Info("Giving up this member's shard share: its health checks have failed for longer than the grace", "namespace", m.cfg.Namespace, "lease", m.leaseName, "grace", m.grace, "reason", is)
	case is == "" && was != "":
		klog.FromContext(ctx).Info("Taking a shard share again: the health checks pass", "namespace", m.cfg.Namespace, "lease", m.leaseName)
	}
	return nil
}

// maxNotReady bounds the failure written in AnnotationNotReady.
const maxNotReady = 1024

// checkHealth calls the health checks, outside m.mu (a check may take its
// own locks), and applies the rule of Membership's Health section at the
// renewal now: it returns the failure to publish ("" for ready), and
// whether a check failed. A passing renewal ends a streak of failures; a
// failing one starts it only once its write succeeds (renew).
func (m *Membership) checkHealth(now time.Time) (string, bool) {
	if m.grace < 0 {
		return "", false
	}
	m.mu.Lock()
	ids := slices.Sorted(maps.Keys(m.checks))
	checks := make([]func() error, 0, len(ids))
	for _, id := range ids {
		checks = append(checks, m.checks[id])
	}
	m.mu.Unlock()
	var failed error
	for _, check := range checks {
		if failed = check(); failed != nil {
			break
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if failed == nil {
		m.failingSince = time.Time{}
		return "", false
	}
	if m.failingSince.IsZero() || now.Sub(m.failingSince) < m.grace {
		return "", true
	}
	msg := fmt.Sprintf("health check failing since %s: %v", m.failingSince.UTC().Format(time.RFC3339), failed)
	if len(msg) > maxNotReady {
		msg = strings.ToValidUTF8(msg[:maxNotReady-3], "") + "..."
	}
	return msg, true
}

// notReadyOf is the failure a member's Lease publishes, "" if it is ready.
func notReadyOf(l *coordinationv1.Lease) string {
	if l == nil {
		return ""
	}
	msg, ok := l.Annotations[AnnotationNotReady]
	if ok && msg == "" {
		return "not ready" // written by hand, or by another tool
	}
	return msg
}

func (m *Membership) newLease(now time.Time, notReady string) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: m.leaseName, Namespace: m.cfg.Namespace}}
	l.Spec.AcquireTime = ptrMicro(now)
	return m.updatedLease(l, now, notReady)
}

func (m *Membership) updatedLease(l *coordinationv1.Lease, now time.Time, notReady string) *coordinationv1.Lease {
	l = l.DeepCopy()
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[LabelController] = m.cfg.Controller
	if notReady != "" {
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[AnnotationNotReady] = notReady
	} else {
		delete(l.Annotations, AnnotationNotReady)
	}
	id, dur := m.cfg.Identity, m.durSec
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != id || l.Spec.AcquireTime == nil {
		l.Spec.AcquireTime = ptrMicro(now)
	}
	l.Spec.HolderIdentity = &id
	l.Spec.LeaseDurationSeconds = &dur
	l.Spec.RenewTime = ptrMicro(now)
	return l
}

func ptrMicro(t time.Time) *metav1.MicroTime {
	mt := metav1.NewMicroTime(t)
	return &mt
}

// recompute derives the live members and this member's ranges, notifies
// subscribers when the ranges changed, and returns the next expiry instant
// (zero if none).
func (m *Membership) recompute() time.Time {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != stateRunning {
		return time.Time{}
	}
	var next time.Time
	earliest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	var live, ready []string
	for _, obj := range m.informer.GetStore().List() {
		l, ok := obj.(*coordinationv1.Lease)
		if !ok || l.Labels[LabelController] != m.cfg.Controller {
			continue
		}
		id := holder(l)
		if id == "" || id == m.cfg.Identity {
			continue // ours is judged by our own last successful write below
		}
		if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds <= 0 {
			continue
		}
		exp := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
		if exp.After(now) {
			live = append(live, id)
			if notReadyOf(l) == "" {
				ready = append(ready, id)
			}
			earliest(exp)
		}
	}
	if exp := m.lastRenew.Add(m.cfg.LeaseDuration); exp.After(now) {
		live = append(live, m.cfg.Identity)
		if notReadyOf(m.lease) == "" {
			ready = append(ready, m.cfg.Identity)
		}
		earliest(exp)
	}
	live = sortedUnique(live)
	// The Health rule: the ready members share the space; if none is
	// ready, all live members do.
	assigned := sortedUnique(ready)
	if len(assigned) == 0 {
		assigned = live
	}
	var ranges []Range
	if r, ok := Assign(assigned)[m.cfg.Identity]; ok {
		ranges = []Range{r}
	}
	if !slices.Equal(live, m.members) || !slices.Equal(assigned, m.assigned) {
		klog.V(2).InfoS("Shard membership changed", "namespace", m.cfg.Namespace, "controller", m.cfg.Controller, "identity", m.cfg.Identity, "members", live, "assigned", assigned, "ranges", fmt.Sprint(ranges))
	}
	m.members, m.assigned = live, assigned
	if !m.computed || !slices.Equal(ranges, m.ranges) {
		m.computed = true
		m.ranges = ranges
		for _, ch := range m.subs {
			sendLatest(ch, slices.Clone(ranges))
		}
	}
	return next
}

// holder is the member identity of a Lease: spec.holderIdentity.
func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// sendLatest replaces any unread value in ch (capacity 1) with v, so a slow
// subscriber never blocks the membership and always reads the newest ranges.
// Callers hold m.mu, the only sender.
func sendLatest(ch chan []Range, v []Range) {
	select {
	case <-ch:
	default:
	}
	ch <- v
}

func (m *Membership) closeSubsLocked() {
	for id, ch := range m.subs {
		close(ch)
		delete(m.subs, id)
	}
}

// Subscribe returns a channel that receives this member's ranges: the
// current ones at once if the membership is running, then each change. An
// empty slice means this member owns nothing (it is not live, for example
// because it could not renew its Lease): its informers must stop rather
// than send an empty shard selector, which would select everything. Only the
// newest value is kept for a slow reader. The channel is closed when the
// membership stops; cancel unsubscribes and closes it early.
func (m *Membership) Subscribe() (<-chan []Range, func()) {
	ch := make(chan []Range, 1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == stateStopped {
		close(ch)
		return ch, func() {}
	}
	id := m.nextSub
	m.nextSub++
	m.subs[id] = ch
	if m.state == stateRunning && m.computed {
		ch <- slices.Clone(m.ranges)
	}
	return ch, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if c, ok := m.subs[id]; ok {
			close(c)
			delete(m.subs, id)
		}
	}
}

// Ranges is this member's current ranges (empty when it owns nothing).
func (m *Membership) Ranges() []Range {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.ranges)
}

// Members is the sorted identities of the live members, this one included
// while its Lease is fresh; ready or not (see [Membership.Assigned]).
func (m *Membership) Members() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.members)
}

// Assigned is the sorted identities among which the hash space is divided:
// the live members that are ready, or all live members when none is (see
// the Health section of [Membership]). Member i of Assigned owns
// [Split](i, len(Assigned)).
func (m *Membership) Assigned() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.assigned)
}

// Health returns why this member has given up its share, as its Lease
// says since its last successful renewal, or nil while it takes one. It
// makes no request.
func (m *Membership) Health() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if msg := notReadyOf(m.lease); msg != "" {
		return fmt.Errorf("sharding: member %s/%s is not ready: %s", m.cfg.Namespace, m.leaseName, msg)
	}
	return nil
}

// AddHealthCheck registers check, which tells whether this member can
// serve its share: nil if it can. It is called at every renewal, from the
// membership's goroutine and without any of its locks held; it must not
// block, and should make no request (the factory's check reads what its
// informers last observed). The Health section of [Membership] says how
// failures are counted. remove unregisters it; it can be called more than
// once, and from check itself.
func (m *Membership) AddHealthCheck(check func() error) (remove func()) {
	if check == nil {
		return func() {}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.nextCheck
	m.nextCheck++
	m.checks[id] = check
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.checks, id)
	}
}

// LeaseName is the name of this member's Lease: Controller-Identity.
func (m *Membership) LeaseName() string { return m.leaseName }

// Stop hands over gracefully: it stops renewing, deletes this member's Lease
// (so the others take its ranges over as soon as they see the deletion, not
// after the lease duration) and closes the subscriber channels. It can be
// called after ctx of Start was canceled, and more than once; ctx bounds the
// deletion.
func (m *Membership) Stop(ctx context.Context) error {
	m.lifecycle.Lock()
	defer m.lifecycle.Unlock()
	m.mu.Lock()
	if m.state == stateNew {
		m.state = stateStopped
		m.closeSubsLocked()
		m.mu.Unlock()
		return nil
	}
	cancel, done := m.cancel, m.done
	m.state = stateStopped
	m.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done // the loop must not renew (recreate) the Lease after the delete
	}

	m.mu.Lock()
	lease := m.lease
	m.lease = nil
	m.mu.Unlock()
	var err error
	if lease != nil {
		// Preconditions: never delete a Lease someone else recreated under
		// the same name since our last write.
		uid := lease.UID
		err = m.leases.Delete(ctx, m.leaseName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			err = nil
		}
	}
	m.mu.Lock()
	m.ranges, m.members, m.assigned = nil, nil, nil
	m.closeSubsLocked()
	m.mu.Unlock()
	if err != nil {
		return fmt.Errorf("sharding: release Lease %s/%s: %w", m.cfg.Namespace, m.leaseName, err)
	}
	return nil
}
