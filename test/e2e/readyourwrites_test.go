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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/readyourwrites"
	"github.com/kubeinformers/informers/sharding"
)

var (
	configMapsResource = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretsResource    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// percentiles returns p50 and p99 of ds, which it sorts.
func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*99/100)]
}

// TestReadYourWrites runs a controller's write-then-read loop against the
// real API server: 200 create, update and delete steps, each followed by a
// lister read. With Writes.Wait before the read, every read is fresh, in
// the typed and the metadata informer, each over two namespaces; without
// it, the stale reads are counted. It prints both, and the wait's latency.
//
// The loop writes ConfigMaps, which this server serves without a watch
// cache (testenv): their watches come from etcd and get no periodic
// bookmark, so the waits for a write no watch receives use Secrets, which
// the watch cache serves, as a default server serves every resource.
func TestReadYourWrites(t *testing.T) {
	c := setup(t)
	before := goleak.IgnoreCurrent()
	idle := c.newNamespace("ryw-idle")     // watched, never written
	unwatched := c.newNamespace("ryw-out") // not watched

	f, err := informers.NewForConfig(c.cfg, 0, informers.WithNamespaces(c.ns, idle))
	if err != nil {
		t.Fatal(err)
	}
	typed := f.Core().V1().ConfigMaps().Lister()
	f.Core().V1().Secrets().Informer()
	meta, err := f.ForMetadata(configMapsResource)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	f.StartWithContext(ctx)
	defer func() {
		cancel()
		f.Shutdown()
		goleak.VerifyNone(t, before)
	}()
	if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatal(err)
	}
	writes := readyourwrites.New(f)
	cms := c.client.CoreV1().ConfigMaps(c.ns)

	// fresh reports whether both listers show name as the loop left it:
	// want nil for deleted, else its data and resource version.
	fresh := func(name string, want *corev1.ConfigMap) bool {
		got, err := typed.ConfigMaps(c.ns).Get(name)
		m, merr := meta.Lister().ByNamespace(c.ns).Get(name)
		if want == nil {
			return apierrors.IsNotFound(err) && apierrors.IsNotFound(merr)
		}
		if err != nil || merr != nil {
			return false
		}
		mo, ok := m.(*metav1.PartialObjectMetadata)
		return ok && got.Data["v"] == want.Data["v"] && got.ResourceVersion == want.ResourceVersion && mo.ResourceVersion == want.ResourceVersion
	}
	// loop runs 200 steps on its own objects and returns its stale reads
	// and, when waiting, how long each wait for a create or update took
	// and each wait for a delete.
	loop := func(prefix string, wait bool) (stale int, writeWaits, deleteWaits []time.Duration) {
		objects := map[string]*corev1.ConfigMap{}
		for i := range 200 {
			name := fmt.Sprintf("%s-%d", prefix, i/3)
			var want *corev1.ConfigMap
			switch i % 3 {
			case 0:
				cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{})
				writes.Wrote(configMapsResource, cm, err)
				if err != nil {
					t.Fatal(err)
				}
				want = cm
			case 1:
				cm := objects[name].DeepCopy()
				cm.Data["v"] = strconv.Itoa(i)
				cm, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
				writes.Wrote(configMapsResource, cm, err)
				if err != nil {
					t.Fatal(err)
				}
				want = cm
			case 2:
				err := cms.Delete(ctx, name, metav1.DeleteOptions{})
				writes.Deleted(configMapsResource, objects[name], err)
				if err != nil {
					t.Fatal(err)
				}
			}
			objects[name] = want
			if wait {
				start := time.Now()
				if err := writes.Wait(ctx, configMapsResource, c.ns); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if want != nil {
					writeWaits = append(writeWaits, time.Since(start))
				} else {
					deleteWaits = append(deleteWaits, time.Since(start))
				}
			}
			if !fresh(name, want) {
				stale++
			}
		}
		return stale, writeWaits, deleteWaits
	}

	staleWithout, _, _ := loop("nowait", false)
	staleWith, writeWaits, deleteWaits := loop("wait", true)
	wp50, wp99 := percentiles(writeWaits)
	dp50, dp99 := percentiles(deleteWaits)
	report := fmt.Sprintf("read-your-writes: 200 create/update/delete steps, each read from the typed and the metadata lister: %d stale reads with Writes.Wait, %d without; "+
		"wait after a create or update the informers receive: p50 %v, p99 %v (n=%d); after a delete: p50 %v, p99 %v (n=%d)",
		staleWith, staleWithout, wp50.Round(10*time.Microsecond), wp99.Round(10*time.Microsecond), len(writeWaits),
		dp50.Round(10*time.Microsecond), dp99.Round(10*time.Microsecond), len(deleteWaits))
	t.Log(report)
	fmt.Println("e2e:", report)
	if staleWith != 0 {
		t.Errorf("%d stale reads after Writes.Wait, want 0", staleWith)
	}

	// A namespace the informers do not watch is an error, at once.
	secret, err := c.client.CoreV1().Secrets(unwatched).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "out"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = f.WaitForResourceVersion(ctx, secretsResource, unwatched, secret.ResourceVersion)
	if err == nil || !strings.Contains(err.Error(), "no informer of it watches that namespace") || !strings.Contains(err.Error(), c.ns) {
		t.Fatalf("wait in an unwatched namespace: %v", err)
	}
	// "" is every watched namespace: a write no watch receives is reflected
	// by each watch's next bookmark.
	start := time.Now()
	short, cancelShort := context.WithTimeout(ctx, 90*time.Second)
	defer cancelShort()
	if err := f.WaitForResourceVersion(short, secretsResource, "", secret.ResourceVersion); err != nil {
		t.Fatalf("wait on every watched namespace: %v", err)
	}
	idleWait := time.Since(start)
	t.Logf("read-your-writes: a write no watch receives, waited for on every watched namespace (two): %v", idleWait.Round(time.Millisecond))
	fmt.Printf("e2e: read-your-writes: a write no watch receives, waited for on every watched namespace (two): %v\n", idleWait.Round(time.Millisecond))
}

// TestReadYourWritesSharded: a sharded informer over several namespaces
// reflects a write of its own shard by the write's event, at once, and a
// write of the other shard, which it never receives, by its watch's next
// bookmark. The API server sends each watch a bookmark every minute from
// the watch's start, whatever events it sends. Each namespace has its own
// watch, so the namespaces sample in parallel; in each, the writes come
// at a random moment (up to a minute after the start, so that they are not
// aligned with the last bookmark), one after the other until one is of the
// other shard, each only after the previous wait has ended, since an event
// the informer receives would reflect it sooner. It runs on Secrets, which the watch cache serves (see
// TestReadYourWrites).
func TestReadYourWritesSharded(t *testing.T) {
	c := setup(t)
	before := goleak.IgnoreCurrent()
	namespaces := []string{c.ns}
	for i := range 11 {
		namespaces = append(namespaces, c.newNamespace(fmt.Sprintf("ryw-shard%d", i)))
	}
	f, err := informers.NewForConfig(c.cfg, 0, informers.WithNamespaces(namespaces...), informers.WithShard(sharding.FieldUID, 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	lister := f.Core().V1().Secrets().Lister()
	ctx, cancel := context.WithCancel(c.ctx)
	f.StartWithContext(ctx)
	defer func() {
		cancel()
		f.Shutdown()
		goleak.VerifyNone(t, before)
	}()
	if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatal(err)
	}
	shard, err := sharding.ForShard(sharding.FieldUID, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	own := shard.APISelector()

	const unseenPerNamespace = 1
	var (
		mu           sync.Mutex
		held, unseen []time.Duration
		wg           sync.WaitGroup
	)
	for n, ns := range namespaces {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(n), uint64(time.Now().UnixNano())))
			// A random pause before the first write and after each wait
			// for a write the shard never receives; a write of its own
			// shard, reflected at once by its event, is followed by the
			// next one at once, still at a random moment of the bookmark
			// schedule, so that a namespace pauses once per unseen write.
			pause := true
			for i, got := 0, 0; got < unseenPerNamespace; i++ {
				if pause {
					select {
					case <-time.After(time.Duration(rnd.Int64N(int64(time.Minute)))):
					case <-ctx.Done():
						return
					}
				}
				secret, err := c.client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i)}}, metav1.CreateOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				in, err := own.Matches(secret)
				if err != nil {
					t.Error(err)
					return
				}
				start := time.Now()
				wctx, wcancel := context.WithTimeout(ctx, 150*time.Second)
				err = f.WaitForResourceVersion(wctx, secretsResource, ns, secret.ResourceVersion)
				d := time.Since(start)
				wcancel()
				if err != nil {
					t.Errorf("namespace %s, secret %s (own shard %v): %v", ns, secret.Name, in, err)
					return
				}
				_, gerr := lister.Secrets(ns).Get(secret.Name)
				if in != (gerr == nil) {
					t.Errorf("after the wait, the lister's %s/%s: %v, want it there only in the informer's shard (%v)", ns, secret.Name, gerr, in)
				}
				mu.Lock()
				if in {
					held = append(held, d)
				} else {
					unseen = append(unseen, d)
					got++
				}
				pause = !in
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	hp50, hp99 := percentiles(held)
	up50, up99 := percentiles(unseen)
	report := fmt.Sprintf("read-your-writes, sharded informer (shard 0 of 2) over %d namespaces: wait after a write of its shard: p50 %v, p99 %v (n=%d); after a write of the other shard, which it never receives: p50 %v, p99 %v, max %v (n=%d)",
		len(namespaces), hp50.Round(10*time.Microsecond), hp99.Round(10*time.Microsecond), len(held), up50.Round(time.Millisecond), up99.Round(time.Millisecond), unseen[len(unseen)-1].Round(time.Millisecond), len(unseen))
	t.Log(report)
	fmt.Println("e2e:", report)
}
