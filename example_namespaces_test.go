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

package informers_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/informertest"
)

// ExampleFactory_SetNamespaces shows a multi-tenant controller that gains
// and loses a tenant namespace without rebuilding its factory: the
// running pod informer adds the namespace's list and watch, and drops the
// other one, whose pods leave as tombstones.
func ExampleFactory_SetNamespaces() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "web"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "db"}},
	)
	factory, err := informers.New(client, 0, informers.WithNamespaces("tenant-a"))
	if err != nil {
		panic(err)
	}
	defer factory.Shutdown()
	defer cancel()
	pods := factory.Core().V1().Pods()
	departed := make(chan string, 1)
	_, _ = pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				departed <- t.Key
			}
		},
	})
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	// Tenant b joins, tenant a leaves.
	if err := factory.SetNamespaces("tenant-b"); err != nil {
		panic(err)
	}
	fmt.Println("departed:", <-departed) // delivered before SetNamespaces returned
	// tenant-b's pods arrive as it lists; WaitForResourceVersion with
	// the namespace waits for a write there.
	if err := informertest.Settle(ctx, factory); err != nil {
		panic(err)
	}
	fmt.Println("cached:", slices.Sorted(slices.Values(pods.Informer().GetStore().ListKeys())))

	// A factory over all namespaces has no set to change.
	all, _ := informers.New(client, 0)
	fmt.Println(all.SetNamespaces("tenant-a") != nil)
	// Output:
	// departed: tenant-a/web
	// cached: [tenant-b/db]
	// true
}
