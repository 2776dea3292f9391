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
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

// Two replicas over two namespaces follow one membership: each namespace's
// informer hands over on its own, so when one replica leaves, the other
// owns everything in both, the leaver owns nothing, and its objects reach
// handlers as DeletedFinalStateUnknown; no replica lists pods again except
// for the ranges gained (one list per namespace).
func TestShardHandoverSeveralNamespaces(t *testing.T) {
	ctx := syncCtx(t)
	var objs []runtime.Object
	for _, ns := range []string{"a", "b"} {
		for i := range 40 {
			objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: fmt.Sprintf("p%02d", i),
				UID: types.UID(fmt.Sprintf("%s%07x-0000-4000-8000-%012x", ns, i, i*7919)),
			}})
		}
	}
	client := fake.NewClientset(objs...)
	var podLists atomic.Int32
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		podLists.Add(1)
		return false, nil, nil
	})
	type replica struct {
		m         *sharding.Membership
		f         informers.Factory
		inf       cache.SharedIndexInformer
		tombstone atomic.Int32
	}
	start := func(id string) *replica {
		m, err := sharding.NewMembership(sharding.MembershipConfig{
			Client: client, Namespace: "leases", Controller: "ctl", Identity: id,
			LeaseDuration: 3 * time.Second, RenewInterval: time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		f, err := informers.New(client, 0, informers.WithNamespaces("a", "b"), informers.WithShardMembership(m, sharding.FieldUID))
		if err != nil {
			t.Fatal(err)
		}
		r := &replica{m: m, f: f, inf: f.Core().V1().Pods().Informer()}
		if _, err := r.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
			if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				r.tombstone.Add(1)
			}
		}}); err != nil {
			t.Fatal(err)
		}
		if err := m.Start(ctx); err != nil {
			t.Fatal(err)
		}
		fctx, cancel := context.WithCancel(ctx)
		f.Start(fctx.Done())
		t.Cleanup(func() { cancel(); f.Shutdown() })
		t.Cleanup(func() { _ = m.Stop(context.Background()) })
		return r
	}
	x, y := start("x"), start("y")
	held := func(r *replica) map[string]bool {
		out := map[string]bool{}
		for _, k := range r.inf.GetStore().ListKeys() {
			out[k] = true
		}
		return out
	}
	partitioned := func(rs ...*replica) bool {
		seen := map[string]int{}
		for _, r := range rs {
			for k := range held(r) {
				seen[k]++
			}
		}
		for _, n := range seen {
			if n != 1 {
				return false
			}
		}
		return len(seen) == len(objs)
	}
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return len(x.m.Members()) == 2 && len(y.m.Members()) == 2 && partitioned(x, y), nil
	}); err != nil {
		t.Fatalf("x (%d) and y (%d) do not partition the %d pods of both namespaces", len(held(x)), len(held(y)), len(objs))
	}
	byNamespace := func(r *replica) map[string]int {
		out := map[string]int{}
		for k := range held(r) {
			out[k[:1]]++
		}
		return out
	}
	if n := byNamespace(x); n["a"] == 0 || n["b"] == 0 {
		t.Fatalf("x holds %v pods per namespace; the test needs both namespaces split", n)
	}
	gave := int32(len(held(y)))
	lists := podLists.Load()
	if err := y.m.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return len(held(y)) == 0 && len(held(x)) == len(objs), nil
	}); err != nil {
		t.Fatalf("after y left: x holds %d of %d pods, y %d", len(held(x)), len(objs), len(held(y)))
	}
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return y.tombstone.Load() == gave, nil
	}); err != nil {
		t.Errorf("y's handlers got %d DeletedFinalStateUnknown, want %d (every pod it held)", y.tombstone.Load(), gave)
	}
	if got := podLists.Load() - lists; got != 2 {
		t.Errorf("%d pod lists during the handover, want 2 (x's ranges gained, in each namespace)", got)
	}
}
