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
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeinformers/informers"
)

// A factory whose caches hold Pods without managedFields, with repeated
// strings interned and the identical parts of Pods shared. A user's
// WithTransform, if any, sees the whole object first.
func ExampleWithLeanMemory() {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: "shop",
				Labels:        map[string]string{"app": "web"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager"}},
			},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
		}
	}
	client := fake.NewClientset(pod("web-1"), pod("web-2"))

	factory, err := informers.New(client, 0, informers.WithLeanMemory())
	if err != nil {
		panic(err)
	}
	lister := factory.Core().V1().Pods().Lister()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	factory.StartWithContext(ctx)
	defer factory.Shutdown()
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		panic(err)
	}

	a, _ := lister.Pods("shop").Get("web-1")
	b, _ := lister.Pods("shop").Get("web-2")
	fmt.Println("managedFields:", len(a.ManagedFields))
	fmt.Println("image:", a.Spec.Containers[0].Image)
	// Cached objects are read-only; these two share their containers.
	fmt.Println("shared containers:", &a.Spec.Containers[0] == &b.Spec.Containers[0])
	// Output:
	// managedFields: 0
	// image: nginx:1.27
	// shared containers: true
}

// The lean transform on its own, for any informer's SetTransform: here with
// string interning off (it is on by default; the last LeanInterning of the
// list wins) and kubectl's last-applied annotation dropped.
func ExampleLeanInterning() {
	lean := informers.TransformLean(informers.LeanInterning(false), informers.LeanDropLastApplied())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "web-1", Namespace: "shop",
		Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: `{"kind":"Pod"}`, "team": "web"},
	}}
	obj, err := lean(pod)
	if err != nil {
		panic(err)
	}
	fmt.Println("annotations:", obj.(*corev1.Pod).Annotations)
	// Output:
	// annotations: map[team:web]
}
