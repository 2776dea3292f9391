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

package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

// shards is how many replicas the sharding section splits pods between.
const shards = 2

// showSharded splits the pods between two factories, as two replicas of a
// controller would, with WithShardSelector, client-go v0.38's option: each
// caches only the pods whose UID hashes into its half of the hash space.
// examples/sharded does the same with Leases, for replicas that come and
// go.
func (t *tour) showSharded() error {
	heading(t.out, "7. Sharding: WithShardSelector, client-go v0.38's option")
	all, err := t.pods.List(labels.Everything())
	if err != nil {
		return err
	}
	seen := map[string]int{}
	for i := range shards {
		names, err := t.shard(i, shards)
		if err != nil {
			return err
		}
		for _, name := range names {
			seen[name]++
		}
	}
	inBoth := 0
	for _, n := range seen {
		if n > 1 {
			inBoth++
		}
	}
	fmt.Fprintf(t.out, "  together: %d pods, %d of them in both shards; unsharded: %d\n", len(seen), inBoth, len(all))
	return nil
}

// shard runs a factory that caches shard index of count and prints the
// pods it holds and its notices. It returns the pods' names.
func (t *tour) shard(index, count int) ([]string, error) {
	// On apimachinery v0.38: apisharding.NewShardRangeSelector("object.metadata.uid", index, count).
	sel, err := sharding.ForShard(sharding.FieldUID, index, count)
	if err != nil {
		return nil, err
	}
	factory, err := t.c.newFactory(informers.WithShardSelector(sel.APISelector()))
	if err != nil {
		return nil, err
	}
	lister := factory.Core().V1().Pods().Lister()
	ctx, cancel := context.WithCancel(t.ctx)
	factory.StartWithContext(ctx)
	defer factory.Shutdown()
	defer cancel()
	if err := waitForSync(ctx, factory); err != nil {
		return nil, err
	}

	pods, err := lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(t.out, "  shard %d of %d, %s: %d pods\n", index, count, sel, len(pods))
	printSorted(t.out, "    ", pods, func(p *corev1.Pod) string { return key(p) })
	// A server without the ShardedListAndWatch feature, like the fake,
	// ignores the selector; the factory then filters on the client.
	for _, notice := range factory.Notices() {
		fmt.Fprintf(t.out, "    notice: %s\n", notice)
	}
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = key(p)
	}
	return names, nil
}
