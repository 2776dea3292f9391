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

// A Pod cache that keeps only what a controller of Pods reads: the node,
// the phase and the conditions, with the metadata every informer relies
// on. A path the Pod's Go type does not have is an error from New.
func ExampleResourceOptions_keepFields() {
	client := fake.NewClientset(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-1", Namespace: "shop", ResourceVersion: "7",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "long"},
		},
		Spec:   corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7"},
	})
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	keep := []string{"spec.nodeName", "status.phase", "status.conditions"}

	_, err := informers.New(client, 0, informers.WithResourceOptions(pods, informers.ResourceOptions{KeepFields: []string{"spec.node"}}))
	fmt.Println(err)

	factory, err := informers.New(client, 0, informers.WithLeanMemory(),
		informers.WithResourceOptions(pods, informers.ResourceOptions{KeepFields: keep}))
	if err != nil {
		panic(err)
	}
	lister := factory.Core().V1().Pods().Lister()
	defer factory.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	factory.StartWithContext(ctx)
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		panic(err)
	}

	p, _ := lister.Pods("shop").Get("web-1")
	fmt.Println(p.Name, p.ResourceVersion, p.Labels["app"], p.Spec.NodeName, p.Status.Phase)
	fmt.Printf("containers %d, annotations %d, pod IP %q\n", len(p.Spec.Containers), len(p.Annotations), p.Status.PodIP)
	// Output:
	// informers: WithResourceOptions(/v1, Resource=pods): KeepFields: "spec.node": v1.PodSpec has no field "node"
	// web-1 7 web node-1 Running
	// containers 0, annotations 0, pod IP ""
}
