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

package crcache

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kubeinformers/informers"
)

// TestMemoryStatusBudgetOfSeveralSettings: a kind of two namespace
// settings has two informers, each with the cache's one budget, then each
// with the resource's own; MemoryStatus reports that budget, not its sum
// over the settings (which would say the kind may hold twice what it may).
func TestMemoryStatusBudgetOfSeveralSettings(t *testing.T) {
	const pool, own = 1 << 20, 4 << 10
	c, err := NewCache(informers.WithMemoryBudget(pool))(unreachable, cache.Options{
		Mapper: mapper(),
		Scheme: scheme.Scheme,
		DefaultNamespaces: map[string]cache.Config{
			"a": {LabelSelector: labels.SelectorFromSet(labels.Set{"team": "a"})},
			"b": {LabelSelector: labels.SelectorFromSet(labels.Set{"team": "b"})},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, _ := startForTest(t, c)
	if _, err := c.GetInformer(ctx, &corev1.Pod{}, cache.BlockUntilSynced(false)); err != nil {
		t.Fatal(err)
	}
	crc := c.(*Cache)
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	budgetOfPods := func() int64 {
		t.Helper()
		var found []int64
		for id, m := range crc.MemoryStatus() {
			if id.Resource == pods {
				found = append(found, m.Budget)
			}
		}
		if len(found) != 1 {
			t.Fatalf("MemoryStatus has %d entries of the Pods, want 1 (its two settings' informers in one)", len(found))
		}
		return found[0]
	}
	crc.mu.RLock()
	slots := 0
	for _, e := range crc.entries {
		slots += len(e.slots)
	}
	crc.mu.RUnlock()
	if slots != 2 {
		t.Fatalf("the cache's entries have %d namespace settings in all, want the Pods' two", slots)
	}
	// Each setting's factory starts its informer on its own: wait until
	// both report it, so that MemoryStatus merges two.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		started := 0
		crc.mu.RLock()
		factories := crc.liveFactories()
		crc.mu.RUnlock()
		for _, f := range factories {
			started += len(f.MemoryStatus())
		}
		if started == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the two settings' informers started after 10 s", started)
		}
	}
	if got := budgetOfPods(); got != pool {
		t.Errorf("MemoryStatus of the Pods: Budget %d, want the cache's budget %d", got, pool)
	}
	if err := crc.SetResourceMemoryBudget(pods, own); err != nil {
		t.Fatal(err)
	}
	if got := budgetOfPods(); got != own {
		t.Errorf("MemoryStatus of the Pods after SetResourceMemoryBudget: Budget %d, want the resource's budget %d", got, own)
	}
}
