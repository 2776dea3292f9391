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

package informers

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeinformers/informers/internal/budget"
)

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func budgetObjects(pods int) []runtime.Object {
	var objs []runtime.Object
	for i := range pods {
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("pod-%d", i), Labels: map[string]string{"app": "a"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: strings.Repeat("i", 200)}}},
		})
	}
	for i := range 3 {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%d", i)}})
	}
	return objs
}

// TestMemoryBudgetStopsAndRetries: with a factory budget that holds the
// config maps but not 300 Pods, the Pod informer stops during its list,
// Ready, Notices and its lister say why, the config maps serve; raising
// the budget brings the Pods back.
func TestMemoryBudgetStopsAndRetries(t *testing.T) {
	client := fake.NewClientset(budgetObjects(300)...)
	f, err := New(client, 0, WithMemoryBudget(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	pods, cms := f.Core().V1().Pods(), f.Core().V1().ConfigMaps()
	pods.Informer()
	cms.Informer()
	stop := make(chan struct{})
	defer f.Shutdown()
	defer close(stop)
	f.Start(stop)

	waitFor(t, "the Pod informer to stop", func() bool { return errors.Is(f.Ready(), ErrOverMemoryBudget) })
	// The config maps sync on their own time: until they have, Ready
	// names them as not synced, which is not what this test is about.
	waitFor(t, "the config maps to sync", cms.Informer().HasSynced)
	ready := f.Ready().Error()
	for _, want := range []string{"pods (v1): stopped over its memory budget", "objects seen", "budget 65536 bytes", "WithMemoryBudget", "KeepFields", "selector"} {
		if !strings.Contains(ready, want) {
			t.Errorf("Ready() = %q, lacks %q", ready, want)
		}
	}
	if strings.Contains(ready, "configmaps") {
		t.Errorf("Ready() names the config maps, which fit: %q", ready)
	}
	if list, err := cms.Lister().List(labels.Everything()); err != nil || len(list) != 3 {
		t.Errorf("config maps: %d, %v; want 3", len(list), err)
	}
	if _, err := pods.Lister().Pods("ns").Get("pod-1"); !errors.Is(err, ErrOverMemoryBudget) {
		t.Errorf("a Pod lister Get of the stopped informer: %v, want the stop", err)
	}
	if n := len(pods.Informer().GetStore().ListKeys()); n != 0 {
		t.Errorf("the stopped informer's cache holds %d objects, want 0", n)
	}
	for id, ms := range f.MemoryStatus() {
		if id.Resource == podsResource && (!errors.Is(ms.Stopped, ErrOverMemoryBudget) || ms.Budget != 64<<10) {
			t.Errorf("MemoryStatus of the Pods = %+v, want Stopped and Budget 65536", ms)
		}
	}
	notices := strings.Join(f.Notices(), "\n")
	if !strings.Contains(notices, "pods (v1): stopped over its memory budget") {
		t.Errorf("Notices() = %q, lacks the stop", notices)
	}

	if err := f.SetMemoryBudget(64 << 20); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Pods after the budget was raised", func() bool { return f.Ready() == nil })
	if list, err := pods.Lister().List(labels.Everything()); err != nil || len(list) != 300 {
		t.Errorf("Pods after the raise: %d, %v; want 300", len(list), err)
	}
}

// TestResourceMemoryBudget: a resource's own budget stops only it;
// SetResourceMemoryBudget brings it back.
func TestResourceMemoryBudget(t *testing.T) {
	client := fake.NewClientset(budgetObjects(100)...)
	f, err := New(client, 0, WithResourceOptions(podsResource, ResourceOptions{MemoryBudget: 16 << 10}))
	if err != nil {
		t.Fatal(err)
	}
	pods, cms := f.Core().V1().Pods(), f.Core().V1().ConfigMaps()
	pods.Informer()
	cms.Informer()
	stop := make(chan struct{})
	defer f.Shutdown()
	defer close(stop)
	f.Start(stop)
	waitFor(t, "the Pod informer to stop", func() bool { return errors.Is(f.Ready(), ErrOverMemoryBudget) })
	if !strings.Contains(f.Ready().Error(), "its resource's MemoryBudget") {
		t.Errorf("Ready() = %v, want it to name the resource's budget", f.Ready())
	}
	if err := f.SetMemoryBudget(1); err == nil {
		t.Error("SetMemoryBudget on a factory without WithMemoryBudget: no error")
	}
	if err := f.SetResourceMemoryBudget(podsResource, -1); err == nil {
		t.Error("SetResourceMemoryBudget(-1): no error")
	}
	if err := f.SetResourceMemoryBudget(podsResource, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Pods after the budget was removed", func() bool { return f.Ready() == nil })
}

func TestMemoryBudgetBadValues(t *testing.T) {
	client := fake.NewClientset()
	for name, tc := range map[string]struct {
		opt  SharedInformerOption
		want string
	}{
		"zero":          {WithMemoryBudget(0), "WithMemoryBudget(0)"},
		"negative":      {WithMemoryBudget(-5), "WithMemoryBudget(-5)"},
		"NaN fraction":  {WithMemoryBudgetFraction(math.NaN()), "WithMemoryBudgetFraction(NaN)"},
		"over one":      {WithMemoryBudgetFraction(1.5), "WithMemoryBudgetFraction(1.5)"},
		"zero fraction": {WithMemoryBudgetFraction(0), "WithMemoryBudgetFraction(0)"},
		"resource":      {WithResourceOptions(podsResource, ResourceOptions{MemoryBudget: -1}), "MemoryBudget -1"},
	} {
		if _, err := New(client, 0, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New: %v, want an error naming %q", name, err, tc.want)
		}
	}
	if _, err := New(client, 0, WithMemoryBudget(1<<20), WithMemoryBudget(2<<20)); err == nil {
		t.Error("two budgets: no error")
	}
}

func TestMemoryBudgetFraction(t *testing.T) {
	dir := t.TempDir()
	was := budget.CgroupMemoryMax
	defer func() { budget.CgroupMemoryMax = was }()

	budget.CgroupMemoryMax = filepath.Join(dir, "memory.max")
	if err := os.WriteFile(budget.CgroupMemoryMax, []byte("max\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := New(fake.NewClientset(), 0, WithMemoryBudgetFraction(0.5))
	if err != nil {
		t.Fatalf("no container limit: %v, want no error", err)
	}
	if n := strings.Join(f.Notices(), "\n"); !strings.Contains(n, "WithMemoryBudgetFraction(0.5): no memory budget") {
		t.Errorf("Notices() = %q, want it to say there is no budget", n)
	}

	if err := os.WriteFile(budget.CgroupMemoryMax, []byte("1048576\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opt := WithMemoryBudgetFraction(0.25)
	a, err := New(fake.NewClientset(), 0, opt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(fake.NewClientset(), 0, opt)
	if err != nil {
		t.Fatal(err)
	}
	pa, pb := a.(*sharedInformerFactory).memoryPool, b.(*sharedInformerFactory).memoryPool
	if pa == nil || pa != pb || pa.Limit() != 256<<10 {
		t.Errorf("two factories of one option: pools %p and %p of %d bytes; want one pool of a quarter of 1 MiB", pa, pb, pa.Limit())
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestShutdownGivesBackItsBudget: factories built from one budget option
// share its pool, as crcache's are; one that shuts down gives back what
// its informers held of it, so that the next fills the whole budget.
func TestShutdownGivesBackItsBudget(t *testing.T) {
	opt := WithMemoryBudget(1 << 20)
	for i := range 2 {
		f, err := New(fake.NewClientset(budgetObjects(300)...), 0, opt)
		if err != nil {
			t.Fatal(err)
		}
		pods := f.Core().V1().Pods().Informer()
		stop := make(chan struct{})
		f.Start(stop)
		waitFor(t, fmt.Sprintf("factory %d's 300 Pods", i), func() bool {
			if err := f.Ready(); err != nil && errors.Is(err, ErrOverMemoryBudget) {
				t.Fatalf("factory %d: %v (the pool holds %d bytes)", i, err, f.(*sharedInformerFactory).memoryPool.Used())
			}
			return pods.HasSynced() && len(pods.GetStore().ListKeys()) == 300
		})
		pool := f.(*sharedInformerFactory).memoryPool
		if used, est := pool.Used(), f.MemoryStatus(); used <= 0 || len(est) != 1 {
			t.Fatalf("factory %d: the pool holds %d bytes for %+v", i, used, est)
		}
		close(stop)
		f.Shutdown()
		if used := pool.Used(); used != 0 {
			t.Errorf("factory %d shut down: the pool still holds %d bytes of it", i, used)
		}
	}
}
