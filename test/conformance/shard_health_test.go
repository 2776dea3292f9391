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

package conformance

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

// forbidding answers the lists of one resource with 403 while on, and
// counts the lists it refuses.
type forbidding struct {
	on      atomic.Bool
	refused atomic.Int32
}

func (f *forbidding) install(c *fake.Clientset, resource string) {
	c.PrependReactor("list", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		if !f.on.Load() {
			return false, nil, nil
		}
		f.refused.Add(1)
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("RBAC: no list"))
	})
}

// TestShardMembershipHealth: the health check a factory registers with its
// membership. A replica whose sharded pod informer cannot list gives up its
// share to the other member once the grace is over, stays out while the
// informer still fails, and takes a share again once it can list; an
// unsharded informer that fails throughout does not count; neither does a
// failing informer once it is removed.
func TestShardMembershipHealth(t *testing.T) {
	t.Parallel() // most of its time is spent in reflector backoff
	ctx := syncCtx(t)
	pods := shardPods(60)
	client := fake.NewClientset(pods...)
	var podsRBAC, secretsRBAC, servicesRBAC forbidding
	podsRBAC.on.Store(true)
	secretsRBAC.on.Store(true) // for the whole test
	// Every reactor is installed before anything uses the client: the
	// fake's reactor chain is not safe to extend while the memberships
	// renew their Leases through it (a data race under -race).
	podsRBAC.install(client, "pods")
	secretsRBAC.install(client, "secrets")
	servicesRBAC.install(client, "services")
	member := func(id string) *sharding.Membership {
		// A short lease on the real clock: the grace (the lease duration,
		// 1 s) passes within a few renewals.
		m, err := sharding.NewMembership(sharding.MembershipConfig{
			Client: client, Namespace: "leases", Controller: "ctl", Identity: id,
			LeaseDuration: time.Second, RenewInterval: 100 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := member("a"), member("b")
	secrets := corev1.SchemeGroupVersion.WithResource("secrets")
	f, err := informers.New(client, 0, informers.WithShardMembership(a, sharding.FieldUID),
		informers.WithResourceOptions(secrets, informers.ResourceOptions{ShardSelector: apisharding.Everything()}))
	if err != nil {
		t.Fatal(err)
	}
	podInf := f.Core().V1().Pods().Informer()
	f.Core().V1().ConfigMaps().Informer()
	f.Core().V1().Secrets().Informer() // unsharded, and forbidden throughout
	mctx, cancel := context.WithCancel(ctx)
	for _, m := range []*sharding.Membership{a, b} {
		if err := m.Start(mctx); err != nil {
			t.Fatal(err)
		}
	}
	f.Start(mctx.Done())
	defer func() {
		cancel()
		f.Shutdown()
		_ = a.Stop(context.Background())
		_ = b.Stop(context.Background())
	}()

	both := []string{"a", "b"}
	gaveUp := func() bool {
		return a.Health() != nil && slices.Equal(b.Assigned(), []string{"b"}) && slices.Equal(b.Ranges(), []sharding.Range{sharding.Full}) && len(a.Ranges()) == 0
	}
	waitFor(t, ctx, gaveUp)
	if msg := a.Health().Error(); !strings.Contains(msg, "pods (v1)") || !strings.Contains(msg, "forbidden") || strings.Contains(msg, "secrets") {
		t.Fatalf("a.Health: %s; want the pod informer's failure, and not the unsharded secrets'", msg)
	}
	if !slices.Equal(a.Members(), both) {
		t.Fatalf("a is no longer a live member: %v", a.Members())
	}

	// Owning nothing, a still tries to list pods, and fails: it must stay
	// out rather than take its share back on an empty shard's answer.
	refused := podsRBAC.refused.Load()
	waitFor(t, ctx, func() bool { return podsRBAC.refused.Load() > refused || a.Health() == nil })
	if !gaveUp() {
		t.Fatalf("a took a share back while its pod informer still fails (a owns %v, b assigns among %v): owning nothing, the informer must still find out whether it can list", a.Ranges(), b.Assigned())
	}

	// RBAC fixed: a lists its pods again and takes its share back.
	podsRBAC.on.Store(false)
	r0, _ := sharding.Split(0, 2)
	var want []string
	for _, p := range pods {
		if pod := p.(*corev1.Pod); r0.Contains(sharding.Hash(string(pod.UID))) {
			want = append(want, pod.Namespace+"/"+pod.Name)
		}
	}
	slices.Sort(want)
	waitFor(t, ctx, func() bool {
		keys := podInf.GetStore().ListKeys()
		slices.Sort(keys)
		return a.Health() == nil && slices.Equal(b.Assigned(), both) && slices.Equal(a.Ranges(), []sharding.Range{r0}) && slices.Equal(keys, want)
	})

	// A sharded informer started later that cannot list: a gives up again,
	// and rejoins once the informer is removed.
	servicesRBAC.on.Store(true)
	f.Core().V1().Services().Informer()
	f.Start(mctx.Done())
	waitFor(t, ctx, gaveUp)
	if msg := a.Health().Error(); !strings.Contains(msg, "services (v1)") || strings.Contains(msg, "pods") {
		t.Fatalf("a.Health: %s; want the service informer's failure alone", msg)
	}
	if !f.RemoveInformer(corev1.SchemeGroupVersion.WithResource("services")) {
		t.Fatal("RemoveInformer(services) removed nothing")
	}
	waitFor(t, ctx, func() bool { return a.Health() == nil && slices.Equal(b.Assigned(), both) })
}
