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

package informertest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/informertest"
)

func TestSettleRealClient(t *testing.T) {
	client, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactory(client, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Without informers: the factory's client is named.
	err = informertest.Settle(ctx, f)
	if !errors.Is(err, informertest.ErrNotFake) || !strings.Contains(err.Error(), "*kubernetes.Clientset") {
		t.Fatalf("Settle on an empty factory over a real client = %v", err)
	}
	f.Core().V1().Pods().Informer()
	stop := make(chan struct{})
	f.Start(stop)
	defer f.Shutdown()
	defer close(stop)
	err = informertest.Settle(ctx, f)
	if !errors.Is(err, informertest.ErrNotFake) || !strings.Contains(err.Error(), "pods (v1)") {
		t.Fatalf("Settle over a real client = %v, want ErrNotFake naming pods (v1)", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Settle waited")
	}
}

func TestSettleNotStarted(t *testing.T) {
	f := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	f.Core().V1().ConfigMaps().Informer()
	err := informertest.Settle(context.Background(), f)
	if err == nil || !strings.Contains(err.Error(), "configmaps (v1) has not been started") {
		t.Fatalf("Settle before Start = %v", err)
	}
}

func TestSettleNotAFactory(t *testing.T) {
	err := informertest.Settle(context.Background(), otherFactory{})
	if err == nil || !strings.Contains(err.Error(), "is not a factory of github.com/kubeinformers/informers") {
		t.Fatalf("Settle(otherFactory) = %v", err)
	}
}

type otherFactory struct{}

func (otherFactory) Start(<-chan struct{}) {}
func (otherFactory) Shutdown()             {}

// TestSettleBusyHandler: a handler that does not return makes Settle end
// with ctx, naming it; once the handler is removed, Settle no longer waits
// for it.
func TestSettleBusyHandler(t *testing.T) {
	client := fake.NewClientset()
	f := informers.NewSharedInformerFactory(client, 0)
	informer := f.Core().V1().Pods().Informer()
	release := make(chan struct{})
	reg, err := informer.AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { <-release },
	}, cache.HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := &slow{}
	if _, err := informer.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	defer f.Shutdown()
	defer cancel()
	defer close(release)
	if _, err := client.CoreV1().Pods("a").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	err = informertest.Settle(short, f)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "pods (v1)") || !strings.Contains(err.Error(), "has not returned") {
		t.Fatalf("Settle with a blocked handler = %v", err)
	}
	if err := informer.RemoveEventHandler(reg); err != nil {
		t.Fatal(err)
	}
	if err := informertest.Settle(ctx, f); err != nil {
		t.Fatal(err)
	}
	h.check(t, "the blocked handler's removal", 1, 0, 0)
}
