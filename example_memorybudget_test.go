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
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	informers "github.com/kubeinformers/informers"
)

// A factory with a memory budget of 32 KiB: 200 Pods do not fit, so the
// Pod informer stops while it lists, and Ready says why. Raising the
// budget makes it list again.
func ExampleWithMemoryBudget() {
	var pods []runtime.Object
	for i := range 200 {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprint("pod-", i)}})
	}
	f, err := informers.New(fake.NewClientset(pods...), 0, informers.WithMemoryBudget(32<<10))
	if err != nil {
		panic(err)
	}
	podInformer := f.Core().V1().Pods()
	podInformer.Informer()
	stop := make(chan struct{})
	defer f.Shutdown()
	defer close(stop)
	f.Start(stop)

	for !errors.Is(f.Ready(), informers.ErrOverMemoryBudget) {
		time.Sleep(10 * time.Millisecond)
	}
	_, err = podInformer.Lister().Pods("default").Get("pod-1")
	fmt.Println("stopped:", errors.Is(err, informers.ErrOverMemoryBudget))

	if err := f.SetMemoryBudget(64 << 20); err != nil {
		panic(err)
	}
	for f.Ready() != nil {
		time.Sleep(10 * time.Millisecond)
	}
	list, _ := podInformer.Lister().List(labels.Everything())
	fmt.Println("pods:", len(list))
	// Output:
	// stopped: true
	// pods: 200
}
