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

package listwatch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// Protobuf needs a generated typed client with a REST client: a fake
// client's calls are kept as they are.
func TestProtobufNeedsRESTClient(t *testing.T) {
	if _, ok := Of(fake.NewClientset().CoreV1().Pods("ns")).Protobuf("pods"); ok {
		t.Error("a fake client's calls were replaced")
	}
	if _, ok := (Requests{}).Protobuf("pods"); ok {
		t.Error("calls without a client were replaced")
	}
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://127.0.0.1:1"})
	r, ok := Of(client.CoreV1().Pods("ns")).Protobuf("pods")
	if !ok || r.List == nil || r.Watch == nil {
		t.Fatal("a generated client's calls were not replaced")
	}
	if l := newList[*corev1.PodList](); l.(*corev1.PodList) == nil {
		t.Error("newList made no list")
	}
}
