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
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubeinformers/informers/crcache"
)

// TestControllerRuntimeReadYourWrites runs controller-runtime v0.25's
// read-your-writes client over crcache.New against the real API server: 200
// ConfigMap creates, each followed at once by a List of the namespace
// through the same client, counting the stale reads (a list that lacks the
// ConfigMap just created). With EnableReadYourWritesConsistency every list
// holds it; without, as a control, the same loop on the same cache reads
// some stale. It prints both counts and the consistent List's latency.
//
// The cache watches every namespace, as a manager's does by default.
func TestControllerRuntimeReadYourWrites(t *testing.T) {
	c := setup(t)
	ctrllog.SetLogger(logr.Discard()) // controller-runtime's log, else it warns that none is set
	before := goleak.IgnoreCurrent()

	crc, err := crcache.New(c.cfg, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- crc.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("cache.Start: %v", err)
		}
		goleak.VerifyNone(t, before)
	}()
	if !crc.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	newClient := func(consistent bool) client.Client {
		cl, err := client.New(c.cfg, client.Options{Cache: &client.CacheOptions{
			Reader:                          crc,
			EnableReadYourWritesConsistency: ptr.To(consistent),
		}})
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}

	// loop creates n ConfigMaps through cl, each followed by a List of the
	// namespace through cl, and returns the stale lists and each List's
	// latency.
	const n = 200
	loop := func(cl client.Client, prefix string) (stale int, lists []time.Duration) {
		for i := range n {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: fmt.Sprintf("%s-%d", prefix, i)}}
			if err := cl.Create(ctx, cm); err != nil {
				t.Fatalf("%s: create %d: %v", prefix, i, err)
			}
			var list corev1.ConfigMapList
			start := time.Now()
			if err := cl.List(ctx, &list, client.InNamespace(c.ns)); err != nil {
				t.Fatalf("%s: list after create %d: %v", prefix, i, err)
			}
			lists = append(lists, time.Since(start))
			if !slices.ContainsFunc(list.Items, func(item corev1.ConfigMap) bool { return item.Name == cm.Name }) {
				stale++
			}
		}
		return stale, lists
	}

	staleWithout, plainLists := loop(newClient(false), "plain")
	staleWith, consistentLists := loop(newClient(true), "ryw")
	pp50, pp99 := percentiles(plainLists)
	cp50, cp99 := percentiles(consistentLists)
	report := fmt.Sprintf("controller-runtime read-your-writes over crcache.New: %d ConfigMap creates, each followed by a List through the same client: "+
		"%d stale lists with EnableReadYourWritesConsistency (List p50 %v, p99 %v), %d without (List p50 %v, p99 %v)",
		n, staleWith, cp50.Round(10*time.Microsecond), cp99.Round(10*time.Microsecond),
		staleWithout, pp50.Round(10*time.Microsecond), pp99.Round(10*time.Microsecond))
	t.Log(report)
	fmt.Println("e2e:", report)
	if staleWith != 0 {
		t.Errorf("%d stale lists with EnableReadYourWritesConsistency, want 0", staleWith)
	}
}
