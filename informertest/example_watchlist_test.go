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
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/informertest"
)

// Over a fake that streams watch lists, the informer gets its
// initial state as from a server: a stream of the existing pods and the
// bookmark that ends it, then the watch goes on.
func ExampleServeWatchList() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}

	client := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}},
	)
	informertest.StampResourceVersions(client)
	streams, err := informertest.ServeWatchList(client)
	if err != nil {
		panic(err)
	}

	factory, err := informers.New(client, 0)
	if err != nil {
		panic(err)
	}
	initial := countInitial(factory)
	factory.StartWithContext(ctx)
	defer func() {
		cancel()
		factory.Shutdown()
	}()

	if err := informertest.Settle(ctx, factory); err != nil {
		panic(err)
	}
	fmt.Println("streams sent:", streams.WaitStreams(ctx, pods, 1) == nil)
	fmt.Println("pods in the initial list:", initial.Load())
	fmt.Println("ready:", factory.Ready())
	// Output:
	// streams sent: true
	// pods in the initial list: 2
	// ready: <nil>
}

// Stall leaves the end bookmark out, as a proxy that drops it: the
// factory abandons the stream after its stall timeout and lists instead;
// Settle waits for that LIST, and Notices says what happened.
func ExampleWatchList_Stall() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}

	client := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}},
	)
	streams, err := informertest.ServeWatchList(client)
	if err != nil {
		panic(err)
	}
	streams.Stall(pods)
	streams.SetStallTimeout(100 * time.Millisecond) // instead of 10 s

	factory, err := informers.New(client, 0)
	if err != nil {
		panic(err)
	}
	initial := countInitial(factory)
	factory.StartWithContext(ctx)
	defer func() {
		cancel()
		factory.Shutdown()
	}()

	if err := informertest.Settle(ctx, factory); err != nil {
		panic(err)
	}
	// The stalled stream is abandoned for a LIST, which syncs the cache.
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		panic(err)
	}
	fmt.Println("ready:", factory.Ready())
	fmt.Println("pods in the initial list:", initial.Load())
	for _, n := range factory.Notices() {
		what, _, _ := strings.Cut(n, " and nothing for") // the rest says how long
		fmt.Println(what)
	}
	// Output:
	// ready: <nil>
	// pods in the initial list: 2
	// pods (v1): watch-list stream stalled (2 objects received, no end bookmark
}

// countInitial counts the pods the factory's pod informer adds with its
// initial state.
func countInitial(factory informers.Factory) *atomic.Int32 {
	var initial atomic.Int32
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, isInInitialList bool) {
			if isInInitialList {
				initial.Add(1)
			}
		},
	}); err != nil {
		panic(err)
	}
	return &initial
}
