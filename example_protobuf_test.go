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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/kubeinformers/informers"
)

// A clientset built for JSON elsewhere in a program: WithProtobuf makes
// the factory's typed informers of built-in resources ask for protobuf
// anyway, through the same REST client. Custom resources have no
// protobuf, so asking for it on one is an error.
func ExampleWithProtobuf() {
	client, err := kubernetes.NewForConfig(&rest.Config{
		Host:          "https://cluster.example",
		ContentConfig: rest.ContentConfig{ContentType: "application/json"},
	})
	if err != nil {
		panic(err)
	}
	factory, err := informers.New(client, 0, informers.WithProtobuf())
	if err != nil {
		panic(err)
	}
	factory.Core().V1().Pods().Informer() // lists and watches Pods in protobuf once started

	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	_, err = informers.New(fake.NewClientset(), 0,
		informers.WithResourceOptions(corev1.SchemeGroupVersion.WithResource("pods"), informers.ResourceOptions{Protobuf: true}),
		informers.WithResourceOptions(gadgets, informers.ResourceOptions{Protobuf: true}))
	fmt.Println(err)
	// Output:
	// informers: WithResourceOptions(example.com/v1, Resource=gadgets): field Protobuf: only built-in resources are served in protobuf to typed informers; dynamic, metadata and custom resources stay on JSON
}
