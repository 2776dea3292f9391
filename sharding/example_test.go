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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeinformers/informers/sharding"
)

// Shard 1 of 3 by UID: the selector to send and the client-side filter.
func ExampleForShard() {
	sel, err := sharding.ForShard(sharding.FieldUID, 1, 3)
	if err != nil {
		panic(err)
	}
	opts := metav1.ListOptions{}
	sel.TweakListOptions(&opts)
	fmt.Println(opts.ShardSelector)

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "000a84f4-1d53-4a8e-9d4b-d1a6e3c1b0f2"}}
	fmt.Printf("hash %#016x in shard: %v\n", sharding.Hash(string(pod.UID)), sel.Matches(pod))

	_, err = sharding.Split(3, 3)
	fmt.Println(err)
	// Output:
	// shardRange(object.metadata.uid, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')
	// hash 0x63a2fd23679556a0 in shard: true
	// sharding: shard index 3 out of range [0, 3)
}

// Two replicas of one controller, each following its own ranges.
func ExampleMembership() {
	client := fake.NewClientset() // kubernetes.NewForConfig in a real controller
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	start := func(identity string) (*sharding.Membership, <-chan []sharding.Range) {
		m, err := sharding.NewMembership(sharding.MembershipConfig{
			Client:        client,
			Namespace:     "kube-system",
			Controller:    "my-controller",
			Identity:      identity, // the pod name
			LeaseDuration: sharding.DefaultLeaseDuration,
			RenewInterval: sharding.DefaultRenewInterval,
		})
		if err != nil {
			panic(err)
		}
		ranges, _ := m.Subscribe()
		if err := m.Start(ctx); err != nil {
			panic(err)
		}
		return m, ranges
	}
	a, aRanges := start("replica-a")
	fmt.Println("alone:", <-aRanges)

	b, _ := start("replica-b")
	for r := range aRanges { // a sees b's Lease and gives up half
		if len(r) == 1 && r[0] != sharding.Full {
			fmt.Println("with b:", r)
			break
		}
	}

	_ = b.Stop(ctx) // graceful: deletes b's Lease, a takes over at once
	fmt.Println("b left:", <-aRanges)
	_ = a.Stop(ctx)
	// Output:
	// alone: [[0x0000000000000000, 0x10000000000000000)]
	// with b: [[0x0000000000000000, 0x8000000000000000)]
	// b left: [[0x0000000000000000, 0x10000000000000000)]
}
