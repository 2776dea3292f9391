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
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/informertest"
)

// A controller's test writes through a fake clientset, settles, and
// asserts at once: no sleep, no poll.
func ExampleSettle() {
	ctx, cancel := context.WithCancel(context.Background())

	client := fake.NewClientset()
	informertest.StampResourceVersions(client)
	factory := informers.NewSharedInformerFactory(client, 0)

	// The controller under test: it records the pods it sees.
	var mu sync.Mutex
	var seen []string
	record := func(what string) func(any) {
		return func(obj any) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, what+" "+obj.(*corev1.Pod).Name)
		}
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record("added"),
		UpdateFunc: func(_, obj any) { record("updated")(obj) },
		DeleteFunc: record("deleted"),
	}); err != nil {
		panic(err)
	}
	factory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	// Synced first: a write before the initial list would arrive in it,
	// as one add, rather than as its own events.
	factory.WaitForCacheSync(ctx.Done())

	pods := client.CoreV1().Pods("default")
	pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}
	pod.Labels = map[string]string{"tier": "front"}
	if _, err := pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		panic(err)
	}
	if err := informertest.Settle(ctx, factory); err != nil {
		panic(err)
	}
	mu.Lock()
	fmt.Println(seen)
	mu.Unlock()

	cached, err := factory.Core().V1().Pods().Lister().Pods("default").Get("web")
	if err != nil {
		panic(err)
	}
	fmt.Println("cached:", cached.Name, cached.Labels["tier"], "at resource version", cached.ResourceVersion)
	// Output:
	// [added web updated web]
	// cached: web front at resource version 3
}
