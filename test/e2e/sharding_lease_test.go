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

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeinformers/informers/sharding"
)

const (
	shardLeaseDuration = 4 * time.Second
	shardRenewInterval = 1 * time.Second
)

type shardMember struct {
	*sharding.Membership
	id     string
	cancel context.CancelFunc
}

func startShardMember(t *testing.T, c *tcx, id string) *shardMember {
	t.Helper()
	m, err := sharding.NewMembership(sharding.MembershipConfig{
		Client: c.client, Namespace: c.ns, Controller: "e2e-sharded", Identity: id,
		LeaseDuration: shardLeaseDuration, RenewInterval: shardRenewInterval,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	if err := m.Start(ctx); err != nil {
		cancel()
		t.Fatalf("start member %s: %v", id, err)
	}
	t.Cleanup(func() {
		_ = m.Stop(context.Background())
		cancel()
	})
	return &shardMember{Membership: m, id: id, cancel: cancel}
}

// partitioned reports whether ms agree on exactly their own identities as the
// members and own pairwise disjoint ranges whose union is [0, 2^64).
func partitioned(ms ...*shardMember) bool {
	var ids []string
	var all []sharding.Range
	for _, m := range ms {
		ids = append(ids, m.id)
		all = append(all, m.Ranges()...)
	}
	sort.Strings(ids)
	for _, m := range ms {
		if !slices.Equal(m.Members(), ids) {
			return false
		}
	}
	return tiles(all)
}

// tiles reports whether rs, sorted, follow each other without gap or overlap
// from 0 to 2^64.
func tiles(rs []sharding.Range) bool {
	rs = slices.Clone(rs)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
	next := new(big.Int)
	end := func(r sharding.Range) *big.Int {
		if r.End == 0 {
			return new(big.Int).Lsh(big.NewInt(1), 64)
		}
		return new(big.Int).SetUint64(r.End)
	}
	for _, r := range rs {
		if new(big.Int).SetUint64(r.Start).Cmp(next) != 0 {
			return false
		}
		next = end(r)
	}
	return next.Cmp(new(big.Int).Lsh(big.NewInt(1), 64)) == 0
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// TestShardingLeaseMembership runs Lease-based membership on the real server:
// three members converge, an expired member is replaced only after its lease
// duration, a graceful stop hands over at once, and a fourth member joins.
func TestShardingLeaseMembership(t *testing.T) {
	c := setup(t)
	start := time.Now()
	r0 := startShardMember(t, c, "r0")
	r1 := startShardMember(t, c, "r1")
	r2 := startShardMember(t, c, "r2")
	waitFor(t, "3 members to converge", 30*time.Second, func() bool { return partitioned(r0, r1, r2) })
	converge := time.Since(start)
	t.Logf("3 members: converged %v after the first Start; ranges r0=%v r1=%v r2=%v", converge, r0.Ranges(), r1.Ranges(), r2.Ranges())
	for i, m := range []*shardMember{r0, r1, r2} {
		if want, _ := sharding.Split(i, 3); !slices.Equal(m.Ranges(), []sharding.Range{want}) {
			t.Fatalf("%s owns %v, want %v", m.id, m.Ranges(), want)
		}
	}

	// Stop r1's renewal; its Lease stays until it expires.
	r1.cancel()
	waitFor(t, "r1's loop to stop", 10*time.Second, func() bool { return len(r1.Ranges()) == 0 })
	lease, err := c.client.CoordinationV1().Leases(c.ns).Get(c.ctx, r1.LeaseName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("r1's Lease must survive a canceled context: %v", err)
	}
	expiry := lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)
	canceled := time.Now()
	waitFor(t, "r0 and r2 to take over r1's range", 30*time.Second, func() bool { return partitioned(r0, r2) })
	takeover := time.Now()
	// Functional, not a timing target: the others may not drop a member
	// whose Lease has not expired yet.
	if takeover.Before(expiry) {
		t.Fatalf("r1 dropped at %v, before its Lease expired at %v", takeover, expiry)
	}
	t.Logf("expiry: r0,r2 took over %v after r1 stopped renewing (%v after renewTime+leaseDuration; lease duration %v)",
		takeover.Sub(canceled).Round(time.Millisecond), takeover.Sub(expiry).Round(time.Millisecond), shardLeaseDuration)

	// Graceful stop: the Lease is deleted and r0 takes over before r2's
	// Lease could have expired.
	lease, err = c.client.CoordinationV1().Leases(c.ns).Get(c.ctx, r2.LeaseName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2Expiry := lease.Spec.RenewTime.Add(shardLeaseDuration)
	stopAt := time.Now()
	if err := r2.Stop(c.ctx); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	if _, err := c.client.CoordinationV1().Leases(c.ns).Get(c.ctx, r2.LeaseName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("r2's Lease after Stop: %v", err)
	}
	waitFor(t, "r0 to own everything", 30*time.Second, func() bool { return partitioned(r0) })
	handover := time.Now()
	if !handover.Before(r2Expiry) {
		t.Fatalf("graceful handover at %v, not before r2's Lease expiry %v: the deletion was not observed", handover, r2Expiry)
	}
	t.Logf("graceful stop: r0 took over %v after Stop was called (r2's Lease would have expired %v later)",
		handover.Sub(stopAt).Round(time.Millisecond), r2Expiry.Sub(handover).Round(time.Millisecond))

	// A fourth member joins.
	joinAt := time.Now()
	r3 := startShardMember(t, c, "r3")
	waitFor(t, "r0 and r3 to converge", 30*time.Second, func() bool { return partitioned(r0, r3) })
	t.Logf("join: r0,r3 converged %v after r3's Start began", time.Since(joinAt).Round(time.Millisecond))
}

// TestShardingServerSelector checks the selector formatter and the client-side
// filter against the real server's LIST and WATCH filtering.
func TestShardingServerSelector(t *testing.T) {
	c := setup(t)
	const n = 90
	for i := 0; i < n; i++ {
		lbl := map[string]string{"half": fmt.Sprint(i % 2)}
		if _, err := c.client.CoreV1().ConfigMaps(c.ns).Create(c.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i), Labels: lbl}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := c.client.CoreV1().ConfigMaps(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if all.ShardInfo != nil {
		t.Fatalf("unsharded list has ShardInfo %+v", all.ShardInfo)
	}

	check := func(name string, sel sharding.Selector, opts metav1.ListOptions, filter func(*corev1.ConfigMap) bool) []string {
		t.Helper()
		sel.TweakListOptions(&opts)
		got, err := c.client.CoreV1().ConfigMaps(c.ns).List(c.ctx, opts)
		if err != nil {
			t.Fatalf("%s: list with shardSelector %q: %v", name, opts.ShardSelector, err)
		}
		if got.ShardInfo == nil || got.ShardInfo.Selector != sel.String() {
			t.Fatalf("%s: ShardInfo %+v, want selector %q", name, got.ShardInfo, sel.String())
		}
		var want, have []string
		for i := range all.Items {
			if sel.Matches(&all.Items[i]) && filter(&all.Items[i]) {
				want = append(want, all.Items[i].Name)
			}
		}
		for i := range got.Items {
			have = append(have, got.Items[i].Name)
			if !sel.Matches(&got.Items[i]) {
				t.Errorf("%s: server returned %s, outside the shard", name, got.Items[i].Name)
			}
		}
		sort.Strings(want)
		sort.Strings(have)
		if !slices.Equal(want, have) {
			t.Fatalf("%s: server returned %d objects %v, client-side Matches selects %d %v", name, len(have), have, len(want), want)
		}
		return have
	}
	everything := func(*corev1.ConfigMap) bool { return true }

	for _, count := range []int{1, 3, 5} {
		seen := map[string]int{}
		var sizes []int
		for i := 0; i < count; i++ {
			sel, err := sharding.ForShard(sharding.FieldUID, i, count)
			if err != nil {
				t.Fatal(err)
			}
			got := check(fmt.Sprintf("uid %d/%d", i, count), sel, metav1.ListOptions{}, everything)
			sizes = append(sizes, len(got))
			for _, n := range got {
				seen[n]++
			}
		}
		for name, k := range seen {
			if k != 1 {
				t.Fatalf("count %d: %s in %d shards", count, name, k)
			}
		}
		if len(seen) != len(all.Items) {
			t.Fatalf("count %d: shards hold %d objects, the namespace %d", count, len(seen), len(all.Items))
		}
		t.Logf("count %d: server shard sizes %v of %d, disjoint and complete", count, sizes, len(all.Items))
	}

	// Several ranges joined with ||, and a label selector ANDed with it.
	q0, _ := sharding.Split(0, 4)
	q2, _ := sharding.Split(2, 4)
	multi, err := sharding.NewSelector(sharding.FieldUID, q2, q0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(multi.String(), " || ") {
		t.Fatalf("selector %q has one range", multi.String())
	}
	check("two ranges", multi, metav1.ListOptions{}, everything)
	check("two ranges AND half=1", multi, metav1.ListOptions{LabelSelector: "half=1"}, func(cm *corev1.ConfigMap) bool { return cm.Labels["half"] == "1" })

	// Namespace hash: every object of the namespace is in or out together.
	for i := 0; i < 2; i++ {
		sel, _ := sharding.ForShard(sharding.FieldNamespace, i, 2)
		got := check(fmt.Sprintf("namespace %d/2", i), sel, metav1.ListOptions{}, everything)
		if len(got) != 0 && len(got) != len(all.Items) {
			t.Fatalf("namespace shard split one namespace: %d of %d", len(got), len(all.Items))
		}
	}

	// The server filters the WATCH too.
	half, _ := sharding.ForShard(sharding.FieldUID, 0, 2)
	opts := metav1.ListOptions{ResourceVersion: all.ResourceVersion}
	half.TweakListOptions(&opts)
	w, err := c.client.CoreV1().ConfigMaps(c.ns).Watch(c.ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var wantEvents []string
	for i := 0; i < 30; i++ {
		cm, err := c.client.CoreV1().ConfigMaps(c.ns).Create(c.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w-%03d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if half.Matches(cm) {
			wantEvents = append(wantEvents, cm.Name)
		}
	}
	// A last object inside the shard marks the end of the stream we expect.
	var marker *corev1.ConfigMap
	for i := 0; marker == nil; i++ {
		cm, err := c.client.CoreV1().ConfigMaps(c.ns).Create(c.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("z-%03d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if half.Matches(cm) {
			marker = cm
		}
	}
	var gotEvents []string
	timeout := time.After(30 * time.Second)
loop:
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			if ev.Type != watch.Added {
				continue
			}
			cm := ev.Object.(*corev1.ConfigMap)
			if !half.Matches(cm) {
				t.Fatalf("watch delivered %s, outside the shard", cm.Name)
			}
			if cm.Name == marker.Name {
				break loop
			}
			if strings.HasPrefix(cm.Name, "w-") {
				gotEvents = append(gotEvents, cm.Name)
			}
		case <-timeout:
			t.Fatalf("watch: got %v before timeout, want %v", gotEvents, wantEvents)
		}
	}
	if !slices.Equal(gotEvents, wantEvents) {
		t.Fatalf("watch delivered %v, want %v", gotEvents, wantEvents)
	}
	t.Logf("watch: %d of 30 creations delivered, all inside the shard", len(gotEvents))

	// The short form from the field's godoc is rejected.
	statusCode, msg := rejectStatus(t, c.client, c.ns, "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')")
	t.Logf("invalid selector '0x0': HTTP %d: %s", statusCode, msg)
	if want := invalidShardSelectorStatus(t, c.client); statusCode != want {
		t.Fatalf("invalid selector: HTTP %d, want %d", statusCode, want)
	}
	if !strings.Contains(msg, "16-digit hex") {
		t.Fatalf("invalid selector: message %q does not explain the bound format", msg)
	}
	// Our bounds for the same range are accepted (the watch part added
	// objects: list them again first).
	if all, err = c.client.CoreV1().ConfigMaps(c.ns).List(c.ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	ok, _ := sharding.NewSelector(sharding.FieldUID, sharding.Range{Start: 0, End: 1 << 63})
	check("long form of the rejected range", ok, metav1.ListOptions{}, everything)
}

// invalidShardSelectorStatus is the HTTP status the server answers for a
// shard selector it cannot parse: kube-apiserver v1.37 answers 500
// (Internal Server Error), v1.38 400 (Bad Request), with the same message.
func invalidShardSelectorStatus(t *testing.T, client kubernetes.Interface) int {
	t.Helper()
	v, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("/version: %v", err)
	}
	minor, err := strconv.Atoi(strings.TrimSuffix(v.Minor, "+"))
	if err != nil {
		t.Fatalf("/version: minor %q: %v", v.Minor, err)
	}
	if v.Major == "1" && minor < 38 {
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// rejectStatus lists with a selector the server must refuse and returns the
// HTTP status code and message.
func rejectStatus(t *testing.T, client kubernetes.Interface, ns, selector string) (int, string) {
	t.Helper()
	_, err := client.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{ShardSelector: selector})
	if err == nil {
		t.Fatalf("selector %q accepted", selector)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("selector %q: error %v is not an API status", selector, err)
	}
	return int(status.Status().Code), status.Status().Message
}
