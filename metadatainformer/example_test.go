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

package metadatainformer_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata/fake"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/metadatainformer"
)

// A metadata factory limited to two namespaces with the module's
// WithNamespaces: one list and watch per namespace, one cache.
func Example() {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	pod := func(ns, name string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	scheme := fake.NewTestScheme()
	_ = metav1.AddMetaToScheme(scheme)
	client := fake.NewSimpleMetadataClient(scheme, pod("a", "p1"), pod("b", "p2"), pod("c", "p3"))

	factory, err := metadatainformer.New(client, 0, metadatainformer.WithFactoryOptions(informers.WithNamespaces("a", "b")))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer factory.Shutdown()
	defer cancel()

	informer := factory.ForResource(pods).Informer()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	fmt.Println(len(informer.GetStore().List()), "pods cached;", "ready:", factory.Ready())
	// Output:
	// 2 pods cached; ready: <nil>
}
