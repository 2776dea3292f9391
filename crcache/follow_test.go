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
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	fakeclientset "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	informers "github.com/kubeinformers/informers"
)

// laterMapper knows its kinds once served is set, as a mapper does once a
// CRD is installed.
type laterMapper struct {
	meta.RESTMapper
	served atomic.Bool
}

func (m *laterMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if !m.served.Load() {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// TestFollowAttachesEveryHandlerOnce: handlers added while a waiting kind
// becomes served, before, during and after its informer is built, each get
// the kind's object once: none is lost, none doubled.
func TestFollowAttachesEveryHandlerOnce(t *testing.T) {
	m := &laterMapper{RESTMapper: mapper()}
	// The factories' discovery says Pods are served.
	_, inf, ctx := waitingPods(t, m, servingPods(fakeclientset.NewClientset()))

	var mu sync.Mutex
	adds := map[int]int{} // handler -> adds of object "a"
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var handlers int
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				mu.Lock()
				handlers = i
				mu.Unlock()
				return
			default:
			}
			mu.Lock()
			adds[i] = 0
			mu.Unlock()
			if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
				if o.(metav1.Object).GetName() == "a" {
					mu.Lock()
					adds[i]++
					mu.Unlock()
				}
			}}); err != nil {
				t.Errorf("AddEventHandler: %v", err)
			}
			time.Sleep(time.Millisecond)
		}
	})
	time.Sleep(100 * time.Millisecond)
	m.served.Store(true)
	// resolve asks every 500 ms at first: keep adding through it.
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	for {
		mu.Lock()
		var missing, doubled int
		for _, n := range adds {
			switch {
			case n == 0:
				missing++
			case n > 1:
				doubled++
			}
		}
		mu.Unlock()
		if doubled > 0 {
			t.Fatalf("%d of %d handlers got the object more than once", doubled, handlers)
		}
		if missing == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d handlers never got the object", missing, handlers)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if handlers < 10 {
		t.Fatalf("only %d handlers were added", handlers)
	}
}

// TestFollowNoWindowBeforeAttach: once a waiting kind's informers are
// built, nobody that reads the cache's entries (under c.mu, as reads and
// HasSynced do) sees them before the follow informer has switched to them.
// In such a window HasSynced said synced (the follow informer still had
// no informer: the kind "not served") while reads already went to the new,
// empty informers. The test holds the follow informer's own lock, which
// the switch (attach) needs, while the kind becomes served: with the
// switch inside the build's critical section, c.mu stays held until it is
// done; with the switch after it, the built slots show while the switch
// waits.
func TestFollowNoWindowBeforeAttach(t *testing.T) {
	m := &laterMapper{RESTMapper: mapper()}
	c, inf, ctx := waitingPods(t, m, servingPods(fakeclientset.NewClientset()))
	f, ok := inf.(*followInformer)
	if !ok {
		t.Fatalf("GetInformer of a kind not served returned a %T, not the follow informer", inf)
	}

	f.mu.Lock()
	m.served.Store(true)
	var blocked int
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if !c.mu.TryRLock() {
			blocked++ // the build holds c.mu, waiting for f.mu to switch
			continue
		}
		built, switched := len(f.e.slots) > 0, f.served != nil
		c.mu.RUnlock()
		if built && !switched {
			f.mu.Unlock()
			t.Fatal("the kind's informers were built and visible under c.mu before the follow informer switched to them")
		}
	}
	f.mu.Unlock()
	if blocked == 0 {
		t.Fatal("the kind did not start to build within 2 s of being served: nothing was checked")
	}
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return f.current() != nil, nil
	}); err != nil {
		t.Fatal("the follow informer never switched to the built informers")
	}
}

// countingMapper counts the mappings asked of it.
type countingMapper struct {
	laterMapper
	asked atomic.Int32
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.asked.Add(1)
	return m.laterMapper.RESTMapping(gk, versions...)
}

// TestFollowWaitsThroughDiscovery: a kind waiting to be served waits on
// the discovery poller the factories share (internal/served), and asks the
// mapper only once discovery serves a resource of it, not on a timer of
// its own.
func TestFollowWaitsThroughDiscovery(t *testing.T) {
	m := &countingMapper{laterMapper: laterMapper{RESTMapper: mapper()}}
	// Its discovery serves Pods once the mapper does, not before.
	clientset := servingPods(fakeclientset.NewClientset())
	clientset.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		if !m.served.Load() {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{}, "v1")
		}
		return false, nil, nil
	})
	_, inf, ctx := waitingPods(t, m, clientset)
	before := m.asked.Load()
	time.Sleep(1500 * time.Millisecond)
	if n := m.asked.Load() - before; n != 0 {
		t.Fatalf("the mapper was asked %d times in 1.5 s while discovery served no resource of the kind", n)
	}
	// Discovery and the mapper serve it: the informer switches.
	m.served.Store(true)
	f := inf.(*followInformer)
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		return f.current() != nil, nil
	}); err != nil {
		t.Fatal("the kind was never built once discovery served it")
	}
}

// servingPods makes clientset's discovery serve Pods.
func servingPods(clientset *fakeclientset.Clientset) *fakeclientset.Clientset {
	clientset.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"list", "watch"}}}}}
	return clientset
}

// waitingPods starts a cache under WithAPIDiscovery whose mapper is m and
// whose discovery is clientset's, and gets its metadata informer of Pods,
// which waits while m does not serve them.
func waitingPods(t *testing.T, m meta.RESTMapper, clientset *fakeclientset.Clientset) (*Cache, cache.Informer, context.Context) {
	t.Helper()
	c, _ := startWithFakes(t, cache.Options{Mapper: m}, informers.WithAPIDiscovery())
	c.mu.Lock()
	c.clientset = clientset
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), wait.ForeverTestTimeout)
	t.Cleanup(cancel)
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(podGVK)
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		t.Fatalf("GetInformer: %v", err)
	}
	return c, inf, ctx
}
