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

package informer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/meter"
)

// TestRun: a refused informer counts as started at once and never runs; a
// started one runs until Remove, which stops it with its cause, waits for
// it, stops its metrics and empties its store.
func TestRun(t *testing.T) {
	newInformer := func() cache.SharedIndexInformer {
		client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p"}})
		return coreinformers.NewPodInformer(client, "", 0, cache.Indexers{})
	}
	hooks := func() *Hooks { return &Hooks{Metrics: meter.NewHooks(nil, func() bool { return false }, nil)} }
	var wg sync.WaitGroup

	var refused Run
	if refused.Done() != nil {
		t.Fatal("Done before Start")
	}
	refused.Start(context.Background(), &wg, newInformer(), true, nil)
	select {
	case <-refused.Done():
	default:
		t.Fatal("a refused informer's Done is open")
	}

	var r Run
	var stopped atomic.Bool
	inf := newInformer()
	r.Start(context.Background(), &wg, inf, false, func() { stopped.Store(true) })
	deadline := time.Now().Add(10 * time.Second)
	for !inf.HasSynced() {
		if time.Now().After(deadline) {
			t.Fatal("the informer did not sync")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-r.Done():
		t.Fatal("Done closed while the informer runs")
	default:
	}
	if n := len(inf.GetStore().List()); n != 1 {
		t.Fatalf("the store holds %d objects, want 1", n)
	}
	r.Remove(errors.New("removed"), hooks(), inf, "pods")
	select {
	case <-r.Done():
	default:
		t.Fatal("Remove returned before the informer did")
	}
	if !stopped.Load() {
		t.Error("stopMetrics not called")
	}
	if n := len(inf.GetStore().List()); n != 0 {
		t.Errorf("the store holds %d objects after Remove", n)
	}
	wg.Wait()

	var never Run
	never.Remove(errors.New("removed"), hooks(), newInformer(), "never started") // must not block
}
