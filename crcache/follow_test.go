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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	fakeclientset "k8s.io/client-go/kubernetes/fake"
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
	c, _ := startWithFakes(t, cache.Options{Mapper: m}, informers.WithAPIDiscovery())
	// The factories' discovery says Pods are served.
	clientset := fakeclientset.NewClientset()
	clientset.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"list", "watch"}}}}}
	c.mu.Lock()
	c.clientset = clientset
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), wait.ForeverTestTimeout)
	defer cancel()
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(podGVK)
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		t.Fatalf("GetInformer: %v", err)
	}

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
