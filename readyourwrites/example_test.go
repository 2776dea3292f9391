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

package readyourwrites_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/readyourwrites"
)

// ExampleWrites shows a controller that reads its own writes: it records
// each write in a Writes and waits on it before its next lister read, so
// that the read sees what it has just created and deleted. A real API
// server sets the resource versions; client-go's fake clientset keeps
// objects as given, so this example sets them itself (with the fake's
// versionless objects, Writes records nothing and Wait returns at once).
func ExampleWrites() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	podsResource := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: "web-1", Labels: map[string]string{"app": "web"}, ResourceVersion: "10",
	}})
	factory, err := informers.New(client, 0)
	if err != nil {
		panic(err)
	}
	defer factory.Shutdown()
	defer cancel()
	lister := factory.Core().V1().Pods().Lister()
	factory.StartWithContext(ctx)
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		panic(err)
	}

	writes := readyourwrites.New(factory)
	// The controller scales web from 1 to 2 Pods, replacing web-1. (It
	// deletes first because the fake's delete event carries the object's
	// old version, where a server's carries the deletion's.)
	err = client.CoreV1().Pods("shop").Delete(ctx, "web-1", metav1.DeleteOptions{})
	writes.Deleted(podsResource, &metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}, err)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: "web-2", Labels: map[string]string{"app": "web"}, ResourceVersion: "11",
	}}
	created, err := client.CoreV1().Pods("shop").Create(ctx, pod, metav1.CreateOptions{})
	writes.Wrote(podsResource, created, err)
	pod = pod.DeepCopy()
	pod.Name, pod.ResourceVersion = "web-3", "12"
	created, err = client.CoreV1().Pods("shop").Create(ctx, pod, metav1.CreateOptions{})
	writes.Wrote(podsResource, created, err)

	// The next reconcile: wait for the writes, then read.
	if err := writes.Wait(ctx, podsResource, "shop"); err != nil {
		panic(err)
	}
	web, err := lister.Pods("shop").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil {
		panic(err)
	}
	fmt.Println("web pods:", len(web))
	// Output:
	// web pods: 2
}
