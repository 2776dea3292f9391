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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeinformers/informers"
)

// A factory whose informers sync with a paged, consistent LIST, each page
// made lean as it arrives, except for the Pods, which take the watch-list
// stream. A fake clientset has no watch-list stream: the Pods list
// instead, and Notices says so.
func ExampleWithListMode() {
	client := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "shop"}},
	)
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	factory, err := informers.New(client, 0,
		informers.WithListMode(informers.ListModeConsistentList),
		informers.WithLeanMemory(),
		informers.WithResourceOptions(pods, informers.ResourceOptions{ListMode: informers.ListModeStream}))
	if err != nil {
		panic(err)
	}
	factory.Core().V1().Pods().Informer()
	configMaps := factory.Core().V1().ConfigMaps().Lister()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer factory.Shutdown()
	defer cancel() // first: Shutdown waits for the informers to stop
	factory.StartWithContext(ctx)
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		panic(err)
	}
	cms, _ := configMaps.List(labels.Everything())
	fmt.Println("configmaps:", len(cms))
	for _, n := range factory.Notices() {
		fmt.Println(n)
	}

	// An unknown mode is an error from New.
	_, err = informers.New(client, 0, informers.WithListMode("Eager"))
	fmt.Println(err)
	// Output:
	// configmaps: 1
	// pods (v1): list mode Stream: no watch-list stream (its client does not support watch-list semantics); listing instead, as client-go does
	// informers: WithListMode("Eager"): unknown list mode "Eager" (known: "", "Stream", "List", "ConsistentList")
}
