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
	"os"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
)

// Example shows the life cycle of a factory: request informers, add
// handlers, start, wait for the caches, read through listers, and shut
// down. It is client-go's package example, made to compile and run.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", Labels: map[string]string{"app": "web"}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-1", Labels: map[string]string{"app": "db"}}},
	)

	factory := informers.NewSharedInformerFactory(client, 10*time.Minute)
	defer factory.Shutdown() // Returns at once if nothing was started.
	defer cancel()           // Runs before Shutdown: stops the informers it waits for.

	genericInformer, err := factory.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	typedInformer := factory.Core().V1().Pods()
	handle, err := typedInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { /* enqueue the object's key */ },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "register event handler:", err)
		return
	}
	defer func() {
		// Avoids leaking goroutines.
		if err := typedInformer.Informer().RemoveEventHandler(handle); err != nil {
			fmt.Fprintln(os.Stderr, "remove event handler:", err)
		}
	}()

	factory.StartWithContext(ctx) // Start processing these informers.
	synced := factory.WaitForCacheSyncWithContext(ctx)
	if err := synced.AsError(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	for informerType := range synced.Synced {
		fmt.Println("cache synced:", informerType)
	}
	// Also make sure that every initial event has reached the handler.
	if !cache.WaitFor(ctx, "event handler sync", handle.HasSyncedChecker()) {
		fmt.Fprintln(os.Stderr, "sync event handler:", context.Cause(ctx))
		return
	}

	web, _ := typedInformer.Lister().Pods("shop").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	all, _ := genericInformer.Lister().List(labels.Everything())
	fmt.Println("web pods:", len(web), "all pods:", len(all))

	// Informers requested after Start need another Start.
	factory.Core().V1().ConfigMaps().Informer()
	factory.StartWithContext(ctx)
	fmt.Println("configmaps synced:", factory.WaitForCacheSyncWithContext(ctx).AsError() == nil)
	// Output:
	// cache synced: *v1.Pod
	// web pods: 1 all pods: 2
	// configmaps synced: true
}

// ExampleNew shows the checked constructor: a mistake in an option is an
// error instead of a log line.
func ExampleNew() {
	client := fake.NewClientset()
	_, err := informers.New(client, 0, informers.WithNamespace("Kube_System"))
	fmt.Println(err != nil)

	factory, err := informers.New(client, time.Minute, informers.WithNamespace("kube-system"))
	fmt.Println(factory != nil, err)
	// Output:
	// true
	// true <nil>
}

// ExampleSharedInformerFactory_ForResource shows the error for a resource
// the factory does not know, with a hint.
func ExampleSharedInformerFactory_ForResource() {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	_, err := factory.ForResource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployment"})
	fmt.Println(err)
	// Output:
	// no informer found for apps/v1, Resource=deployment (resources are plural and lower case: did you mean "deployments"?)
}

// ExampleSupportedResources lists what ForResource accepts, here the
// resources of apps/v1. (How many there are in all depends on the
// Kubernetes release: 147 for client-go v0.37.2, 148 for v0.38.)
func ExampleSupportedResources() {
	var apps []string
	for _, gvr := range informers.SupportedResources() {
		if gvr.Group == "apps" && gvr.Version == "v1" {
			apps = append(apps, gvr.Resource)
		}
	}
	sort.Strings(apps)
	fmt.Println(apps)
	// Output:
	// [controllerrevisions daemonsets deployments replicasets statefulsets]
}
