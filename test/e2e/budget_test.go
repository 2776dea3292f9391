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
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	upstreamcorev1 "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/crcache"
)

// The memory budget on the real server (issue 50, item 2): 300 Secrets of
// 2 KiB each do not fit in a budget of 128 KiB; a few ConfigMaps do.

const budgetSecrets = 300

// mkBudgetSecrets creates budgetSecrets Secrets of 2 KiB in ns.
func mkBudgetSecrets(t *testing.T, c *tcx, ns string) {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	errs := make(chan error, budgetSecrets)
	for i := range budgetSecrets {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("big-%d", i)},
				Data: map[string][]byte{"blob": []byte(strings.Repeat("x", 2048))}}
			if _, err := c.client.CoreV1().Secrets(ns).Create(c.ctx, s, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatalf("create secrets: %v", err)
	}
}

// budgetFactory sets up the test with budgetSecrets Secrets and 5
// ConfigMaps (their keys) in its namespace, and a factory of that
// namespace with a 128 KiB budget.
func budgetFactory(t *testing.T) (*tcx, informers.Factory, []string) {
	t.Helper()
	c := setup(t)
	checkLeaks(t)
	mkBudgetSecrets(t, c, c.ns)
	keys := mkConfigMaps(t, c, c.ns, "small", 5)
	f, err := informers.New(c.client, 0, informers.WithNamespace(c.ns), informers.WithMemoryBudget(128<<10))
	if err != nil {
		t.Fatal(err)
	}
	return c, f, keys
}

// TestMemoryBudgetFactory: the Secret informer of a factory with a
// 128 KiB budget stops while it fills, with Ready and its lister saying
// why; the ConfigMap informer syncs and keeps following changes; raising
// the budget brings the Secrets back.
func TestMemoryBudgetFactory(t *testing.T) {
	c, f, keys := budgetFactory(t)
	secrets, cms := f.Core().V1().Secrets(), f.Core().V1().ConfigMaps()
	secrets.Informer()
	cms.Informer()
	stop := make(chan struct{})
	f.Start(stop)
	defer f.Shutdown()
	defer close(stop)

	if !eventually(60*time.Second, 10*time.Millisecond, func() bool { return errors.Is(f.Ready(), informers.ErrOverMemoryBudget) }) {
		t.Fatalf("the Secret informer did not stop over its budget: Ready() = %v", f.Ready())
	}
	ready := f.Ready().Error()
	for _, want := range []string{"secrets (v1): stopped over its memory budget", "objects seen", "budget 131072 bytes", "KeepFields", "selector"} {
		if !strings.Contains(ready, want) {
			t.Errorf("Ready() = %q, lacks %q", ready, want)
		}
	}
	if strings.Contains(ready, "configmaps") {
		t.Errorf("Ready() names the ConfigMaps, which fit: %q", ready)
	}
	if _, err := secrets.Lister().Secrets(c.ns).Get("big-1"); !errors.Is(err, informers.ErrOverMemoryBudget) {
		t.Errorf("Secret lister Get: %v, want the stop", err)
	}
	if n := len(secrets.Informer().GetStore().ListKeys()); n != 0 {
		t.Errorf("the stopped informer holds %d Secrets, want 0", n)
	}
	if !eventually(30*time.Second, 10*time.Millisecond, cms.Informer().HasSynced) {
		t.Fatal("the ConfigMaps did not sync beside the stopped Secrets")
	}
	mkConfigMaps(t, c, c.ns, "later", 1)
	if !eventually(30*time.Second, 10*time.Millisecond, func() bool {
		list, _ := cms.Lister().ConfigMaps(c.ns).List(everything())
		return len(list) == len(keys)+1
	}) {
		t.Fatal("a ConfigMap created after the stop did not reach the cache")
	}

	if err := f.SetMemoryBudget(64 << 20); err != nil {
		t.Fatal(err)
	}
	if !eventually(60*time.Second, 10*time.Millisecond, func() bool { return f.Ready() == nil }) {
		t.Fatalf("not ready after the budget was raised: %v", f.Ready())
	}
	if list, err := secrets.Lister().Secrets(c.ns).List(everything()); err != nil || len(list) != budgetSecrets {
		t.Errorf("Secrets after the raise: %d, %v; want %d", len(list), err, budgetSecrets)
	}
}

// TestMemoryBudgetManager: a manager whose crcache has a 128 KiB budget
// reconciles ConfigMaps while the Secret informer is stopped; a cached
// read of a Secret returns why; raising the budget brings them back.
func TestMemoryBudgetManager(t *testing.T) {
	c := setup(t)
	checkLeaks(t)
	mkBudgetSecrets(t, c, c.ns)
	keys := mkConfigMaps(t, c, c.ns, "small", 5)

	mgr := newManager(t, rest.CopyConfig(c.cfg), manager.Options{
		NewCache: crcache.NewCache(informers.WithMemoryBudget(128 << 10)),
		Cache:    cache.Options{DefaultNamespaces: map[string]cache.Config{c.ns: {}}},
	})
	crc := crCache(t, mgr)
	if _, err := crc.GetInformer(c.ctx, &corev1.Secret{}); err != nil {
		t.Fatal(err)
	}
	r := newReconciles()
	configMapController(t, mgr, "configmaps-budget", r, nil)
	stop, _ := runManager(t, c.ctx, mgr)

	if !eventually(60*time.Second, 10*time.Millisecond, func() bool { return errors.Is(crc.Ready(), informers.ErrOverMemoryBudget) }) {
		t.Fatalf("the Secret informer did not stop over its budget: Ready() = %v", crc.Ready())
	}
	if !strings.Contains(crc.Ready().Error(), "secrets (v1): stopped over its memory budget") {
		t.Errorf("Ready() = %v, want it to name the Secrets' stop", crc.Ready())
	}
	if !strings.Contains(strings.Join(crc.Notices(), "\n"), "stopped over its memory budget") {
		t.Errorf("Notices() = %q, lacks the stop", crc.Notices())
	}
	if !eventually(60*time.Second, 10*time.Millisecond, func() bool { n, _ := r.seen(keys...); return n == len(keys) }) {
		t.Fatalf("ConfigMaps not reconciled beside the stopped Secrets: %v", r.keys())
	}
	var s corev1.Secret
	if err := mgr.GetClient().Get(c.ctx, types.NamespacedName{Namespace: c.ns, Name: "big-1"}, &s); !errors.Is(err, informers.ErrOverMemoryBudget) {
		t.Errorf("cached Get of a Secret: %v, want the stop", err)
	}
	var list corev1.SecretList
	if err := mgr.GetClient().List(c.ctx, &list); !errors.Is(err, informers.ErrOverMemoryBudget) {
		t.Errorf("cached List of Secrets: %v (%d items), want the stop", err, len(list.Items))
	}

	if err := crc.SetMemoryBudget(64 << 20); err != nil {
		t.Fatal(err)
	}
	if !eventually(60*time.Second, 10*time.Millisecond, func() bool {
		return mgr.GetClient().Get(c.ctx, types.NamespacedName{Namespace: c.ns, Name: "big-1"}, &s) == nil
	}) {
		t.Fatalf("Secrets not served after the budget was raised: Ready() = %v", crc.Ready())
	}
	if err := mgr.GetClient().List(c.ctx, &list); err != nil || len(list.Items) != budgetSecrets {
		t.Errorf("Secrets after the raise: %d, %v; want %d", len(list.Items), err, budgetSecrets)
	}
	later := mkConfigMaps(t, c, c.ns, "later", 1)
	if !eventually(30*time.Second, 10*time.Millisecond, func() bool { n, _ := r.seen(later...); return n == 1 }) {
		t.Error("a ConfigMap created after the raise was not reconciled")
	}
	stop()
}

// TestMemoryBudgetRemovedKindGivesBack: crcache's RemoveInformer shuts
// down the removed kind's factory, which gives back what its informers
// held of the cache's budget: the kind asked for again fits in a budget
// of one and a half times its estimate. Before, the removed Secrets' bytes
// stayed charged to the budget, and the new Secret informer stopped.
func TestMemoryBudgetRemovedKindGivesBack(t *testing.T) {
	c := setup(t)
	checkLeaks(t)
	mkBudgetSecrets(t, c, c.ns)

	mgr := newManager(t, rest.CopyConfig(c.cfg), manager.Options{
		NewCache: crcache.NewCache(informers.WithMemoryBudget(64 << 20)),
		Cache:    cache.Options{DefaultNamespaces: map[string]cache.Config{c.ns: {}}},
	})
	crc := crCache(t, mgr)
	stop, _ := runManager(t, c.ctx, mgr)
	secretsServed := func() bool {
		var list corev1.SecretList
		return mgr.GetClient().List(c.ctx, &list) == nil && len(list.Items) == budgetSecrets
	}
	if _, err := crc.GetInformer(c.ctx, &corev1.Secret{}); err != nil {
		t.Fatal(err)
	}
	if !eventually(60*time.Second, 10*time.Millisecond, secretsServed) {
		t.Fatalf("Secrets not served under a 64 MiB budget: Ready() = %v", crc.Ready())
	}
	var held int64
	for id, st := range crc.MemoryStatus() {
		if id.Resource.Resource == "secrets" {
			held += st.Bytes
		}
	}
	if held <= 0 {
		t.Fatalf("MemoryStatus() = %+v: no estimate for the Secrets", crc.MemoryStatus())
	}
	if err := crc.SetMemoryBudget(held * 3 / 2); err != nil {
		t.Fatal(err)
	}
	if err := crc.RemoveInformer(c.ctx, &corev1.Secret{}); err != nil {
		t.Fatal(err)
	}
	if _, err := crc.GetInformer(c.ctx, &corev1.Secret{}); err != nil {
		t.Fatal(err)
	}
	if !eventually(60*time.Second, 10*time.Millisecond, func() bool { return secretsServed() && crc.Ready() == nil }) {
		t.Fatalf("the Secrets asked for again, in a budget of %d bytes (1.5 times their %d): Ready() = %v", held*3/2, held, crc.Ready())
	}
	stop()
}

// TestMemoryBudgetNewFuncInformer: an informer built by InformerFor's
// newFunc (client-go's own Secret informer) counts toward the factory's
// budget, which cannot stop it: it serves its 300 Secrets, Notices says
// so, and the ConfigMap informer started after it, which the rest of the
// budget cannot hold, stops, naming what the others hold; raising the
// budget brings the ConfigMaps.
func TestMemoryBudgetNewFuncInformer(t *testing.T) {
	c, f, keys := budgetFactory(t)
	secrets := f.InformerFor(&corev1.Secret{}, func(client kubernetes.Interface, resync time.Duration) toolscache.SharedIndexInformer {
		return upstreamcorev1.NewSecretInformer(client, c.ns, resync, toolscache.Indexers{})
	})
	stop := make(chan struct{})
	f.Start(stop)
	defer f.Shutdown()
	defer close(stop)
	if !eventually(60*time.Second, 10*time.Millisecond, func() bool { return len(secrets.GetStore().ListKeys()) == budgetSecrets }) {
		t.Fatalf("the newFunc Secret informer did not fill: %d Secrets, Ready() = %v", len(secrets.GetStore().ListKeys()), f.Ready())
	}
	cms := f.Core().V1().ConfigMaps()
	cms.Informer()
	f.Start(stop)
	if !eventually(60*time.Second, 10*time.Millisecond, func() bool { return errors.Is(f.Ready(), informers.ErrOverMemoryBudget) }) {
		t.Fatalf("the ConfigMap informer did not stop beside the Secrets' estimate: Ready() = %v, MemoryStatus() = %+v", f.Ready(), f.MemoryStatus())
	}
	ready := f.Ready().Error()
	if !strings.Contains(ready, "configmaps (v1): stopped over its memory budget") || !strings.Contains(ready, "held by other informers") || strings.Contains(ready, "secrets") {
		t.Errorf("Ready() = %q, want the ConfigMaps' stop beside the Secrets' share", ready)
	}
	if n := strings.Join(f.Notices(), "\n"); !strings.Contains(n, "secrets (v1): built by InformerFor's newFunc") {
		t.Errorf("Notices() = %q, lacks that the budget cannot stop the Secrets", n)
	}
	if n := len(secrets.GetStore().ListKeys()); n != budgetSecrets {
		t.Errorf("the newFunc Secret informer holds %d, want %d", n, budgetSecrets)
	}

	if err := f.SetMemoryBudget(64 << 20); err != nil {
		t.Fatal(err)
	}
	if !eventually(60*time.Second, 10*time.Millisecond, func() bool {
		list, _ := cms.Lister().ConfigMaps(c.ns).List(everything())
		return f.Ready() == nil && len(list) == len(keys)
	}) {
		t.Fatalf("the ConfigMaps after the raise: Ready() = %v", f.Ready())
	}
}
