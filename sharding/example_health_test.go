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

package sharding_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeinformers/informers/sharding"
)

// A replica that cannot serve gives its share up and takes it back once
// it can. informers.WithShardMembership registers the factory's own
// check; a controller may add its own, here a flag it sets when its
// dependency fails.
func ExampleMembership_AddHealthCheck() {
	client := fake.NewClientset() // kubernetes.NewForConfig in a real controller
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	start := func(identity string) *sharding.Membership {
		m, err := sharding.NewMembership(sharding.MembershipConfig{
			Client: client, Namespace: "kube-system", Controller: "my-controller", Identity: identity,
			// Short, so that the example runs fast; the defaults are
			// DefaultLeaseDuration and DefaultRenewInterval, and the grace
			// defaults to the lease duration.
			LeaseDuration: time.Second, RenewInterval: 100 * time.Millisecond,
		})
		if err != nil {
			panic(err)
		}
		if err := m.Start(ctx); err != nil {
			panic(err)
		}
		return m
	}
	a, b := start("replica-a"), start("replica-b")
	defer func() { _ = a.Stop(ctx); _ = b.Stop(ctx) }()

	var broken atomic.Bool
	b.AddHealthCheck(func() error {
		if broken.Load() {
			return errors.New("cannot reach the database")
		}
		return nil
	})
	waitFor := func(want ...string) {
		for fmt.Sprint(a.Assigned()) != fmt.Sprint(want) || fmt.Sprint(b.Assigned()) != fmt.Sprint(want) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("replica-a", "replica-b")
	fmt.Println("members:", a.Members(), "sharing the space:", a.Assigned())

	broken.Store(true) // for longer than the grace
	waitFor("replica-a")
	fmt.Println("members:", a.Members(), "sharing the space:", a.Assigned(), "a owns:", a.Ranges())
	fmt.Println("b owns:", b.Ranges(), "not ready:", b.Health() != nil)

	broken.Store(false)
	waitFor("replica-a", "replica-b")
	fmt.Println("b back:", b.Ranges())
	// Output:
	// members: [replica-a replica-b] sharing the space: [replica-a replica-b]
	// members: [replica-a replica-b] sharing the space: [replica-a] a owns: [[0x0000000000000000, 0x10000000000000000)]
	// b owns: [] not ready: true
	// b back: [[0x8000000000000000, 0x10000000000000000)]
}
