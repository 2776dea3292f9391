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
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
)

// cmView is a handler's picture of the configmaps: key → resource
// version, and the tombstones it received.
type cmView struct {
	mu         sync.Mutex
	rv         map[string]string
	tombstones map[string]int
}

func (v *cmView) OnAdd(obj any, _ bool) { v.put(obj) }
func (v *cmView) OnUpdate(_, obj any)   { v.put(obj) }
func (v *cmView) OnDelete(obj any) {
	key, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		v.tombstones[strings.Split(key, "/")[0]]++
	}
	delete(v.rv, key)
}

func (v *cmView) put(obj any) {
	cm := obj.(*corev1.ConfigMap)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.rv[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
}

// in returns the keys the handler holds in ns.
func (v *cmView) in(ns string) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for k := range v.rv {
		if strings.HasPrefix(k, ns+"/") {
			out = append(out, k)
		}
	}
	return out
}

// TestSetNamespacesWhileWriting: a writer creates, updates and deletes
// ConfigMaps in namespaces a, b, c and d while SetNamespaces goes {a,b} →
// {a,b,c} → {b,c,d} → {a}. At each step nothing of a removed namespace is
// left in the lister or the handler when SetNamespaces returns (it left
// by tombstones), a kept namespace makes no new LIST or WATCH, and an
// added one's seed objects reach the handler (the latency is printed). At
// the end the handler equals the server for the current set: lost = 0,
// stale = 0.
func TestSetNamespacesWhileWriting(t *testing.T) {
	c := setup(t)
	names := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d"} {
		names[n] = c.newNamespace("setns-" + n)
	}
	const seeds = 20
	for _, ns := range names {
		for i := range seeds {
			mkCM(t, c, ns, fmt.Sprintf("seed-%d", i), nil)
		}
	}
	rec := &recorder{label: "admin"}
	factory, err := informers.NewForConfig(rec.wrap(rest.CopyConfig(c.cfg)), 0, informers.WithNamespaces(names["a"], names["b"]))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer factory.Shutdown()
	defer cancel()
	inf := factory.Core().V1().ConfigMaps().Informer()
	v := &cmView{rv: map[string]string{}, tombstones: map[string]int{}}
	if _, err := inf.AddEventHandler(v); err != nil {
		t.Fatal(err)
	}
	syncFactory(t, ctx, factory)

	// The writer: random creates, updates and deletes of w-0…w-29 in
	// every namespace, whether watched or not.
	var writes atomic.Int64
	writerCtx, stopWriter := context.WithCancel(ctx)
	var writer sync.WaitGroup
	writer.Go(func() {
		cms := c.client.CoreV1()
		for writerCtx.Err() == nil {
			ns := names[[]string{"a", "b", "c", "d"}[rand.IntN(4)]]
			name := fmt.Sprintf("w-%d", rand.IntN(30))
			var err error
			switch rand.IntN(3) {
			case 0:
				_, err = cms.ConfigMaps(ns).Create(writerCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{})
			case 1:
				var cm *corev1.ConfigMap
				if cm, err = cms.ConfigMaps(ns).Get(writerCtx, name, metav1.GetOptions{}); err == nil {
					cm.Data = map[string]string{"n": fmt.Sprint(rand.Int())}
					_, err = cms.ConfigMaps(ns).Update(writerCtx, cm, metav1.UpdateOptions{})
				}
			case 2:
				err = cms.ConfigMaps(ns).Delete(writerCtx, name, metav1.DeleteOptions{})
			}
			if err == nil {
				writes.Add(1)
			} else if !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) && writerCtx.Err() == nil {
				t.Errorf("writer: %v", err)
				return
			}
		}
	})

	// requests counts the LISTs and WATCHes of configmaps in ns so far.
	requests := func(ns string) (lists, watches int) {
		for _, r := range rec.snapshot() {
			if !strings.HasSuffix(r.Path, "/namespaces/"+ns+"/configmaps") {
				continue
			}
			if r.isWatch() {
				watches++
			} else if r.isList() {
				lists++
			}
		}
		return lists, watches
	}
	current := []string{"a", "b"}
	for _, step := range [][]string{{"a", "b", "c"}, {"b", "c", "d"}, {"a"}} {
		time.Sleep(300 * time.Millisecond) // let the writer run in the current set
		var set []string
		before := map[string][2]int{}
		for _, n := range step {
			set = append(set, names[n])
			l, w := requests(names[n])
			before[n] = [2]int{l, w}
		}
		start := time.Now()
		if err := factory.SetNamespaces(set...); err != nil {
			t.Fatalf("SetNamespaces(%v): %v", step, err)
		}
		returned := time.Since(start)
		for _, n := range current {
			if slices.Contains(step, n) {
				continue
			}
			if held := v.in(names[n]); len(held) > 0 {
				t.Errorf("step %v: the handler still holds %d objects of removed namespace %s", step, len(held), n)
			}
			if got, err := factory.Core().V1().ConfigMaps().Lister().ConfigMaps(names[n]).List(everything()); err != nil || len(got) > 0 {
				t.Errorf("step %v: the lister still holds %d objects of removed namespace %s (%v)", step, len(got), n, err)
			}
		}
		for _, n := range step {
			if slices.Contains(current, n) {
				continue
			}
			// Added: wait for its seed objects, which the writer leaves alone.
			if !eventually(30*time.Second, time.Millisecond, func() bool {
				have := 0
				for _, k := range v.in(names[n]) {
					if strings.Contains(k, "/seed-") {
						have++
					}
				}
				return have == seeds
			}) {
				t.Fatalf("step %v: namespace %s's seeds did not reach the handler within 30s", step, n)
			}
			t.Logf("step %v: namespace %s added → its %d seed objects in the handler after %v (SetNamespaces returned after %v)", step, n, seeds, time.Since(start).Round(time.Millisecond), returned.Round(time.Millisecond))
		}
		time.Sleep(300 * time.Millisecond)
		for _, n := range step {
			if !slices.Contains(current, n) {
				continue
			}
			l, w := requests(names[n])
			t.Logf("step %v: kept namespace %s: LIST %d→%d, WATCH %d→%d", step, n, before[n][0], l, before[n][1], w)
			if l != before[n][0] || w != before[n][1] {
				t.Errorf("step %v: kept namespace %s made new requests", step, n)
			}
		}
		for _, n := range current {
			if !slices.Contains(step, n) {
				v.mu.Lock()
				t.Logf("step %v: namespace %s removed: %d tombstones so far", step, n, v.tombstones[names[n]])
				v.mu.Unlock()
			}
		}
		current = step
	}
	stopWriter()
	writer.Wait()

	// The handler against the server, for the current set and outside it.
	var lost, stale int
	compare := func() (lost, stale int) {
		server := map[string]string{}
		for _, n := range current {
			list, err := c.client.CoreV1().ConfigMaps(names[n]).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, cm := range list.Items {
				server[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
			}
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		for k, rv := range server {
			if v.rv[k] != rv {
				lost++
			}
		}
		for k := range v.rv {
			if _, ok := server[k]; !ok {
				stale++
			}
		}
		return lost, stale
	}
	eventually(30*time.Second, 50*time.Millisecond, func() bool {
		lost, stale = compare()
		return lost == 0 && stale == 0
	})
	t.Logf("%d writes; handler vs server for %v: lost=%d stale=%d", writes.Load(), current, lost, stale)
	if lost != 0 || stale != 0 {
		t.Errorf("lost=%d stale=%d, want 0 and 0", lost, stale)
	}
	for _, r := range rec.snapshot() {
		if strings.HasSuffix(r.Path, "/api/v1/configmaps") {
			t.Errorf("a cluster-wide request: %s %s", r.Method, r.Path)
		}
	}
}
