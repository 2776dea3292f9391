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

package dynamicinformer_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/dynamicinformer"
)

// The factory of client-go's constructor, reached as a Factory: after the
// CustomResourceDefinition of a resource is deleted, RemoveInformer stops
// its informer, which client-go's factory would leave retrying.
func Example() {
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	w := &unstructured.Unstructured{}
	w.SetAPIVersion("example.com/v1")
	w.SetKind("Widget")
	w.SetNamespace("default")
	w.SetName("w1")
	client := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"}, w)

	ctx, cancel := context.WithCancel(context.Background())
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	defer factory.Shutdown()
	defer cancel()

	lister := factory.ForResource(widgets).Lister()
	factory.Start(ctx.Done())
	fmt.Println("synced:", factory.WaitForCacheSync(ctx.Done()))
	objs, _ := lister.List(labels.Everything())
	fmt.Println("widgets:", len(objs), objs[0].(*unstructured.Unstructured).GetName())

	f := factory.(dynamicinformer.Factory)
	fmt.Println("ready:", f.Ready())
	fmt.Println("removed:", f.RemoveInformer(widgets))
	fmt.Println("synced:", factory.WaitForCacheSync(ctx.Done()))
	// Output:
	// synced: map[example.com/v1, Resource=widgets:true]
	// widgets: 1 w1
	// ready: <nil>
	// removed: true
	// synced: map[]
}

// New checks the module's options and returns their mistakes as an error.
func ExampleNew() {
	_, err := dynamicinformer.New(fake.NewSimpleDynamicClient(runtime.NewScheme()), 0,
		dynamicinformer.WithFactoryOptions(informers.WithNamespaces("team-a", "team-a")))
	fmt.Println(err)
	// Output:
	// dynamicinformer: WithNamespaces(["team-a" "team-a"]): namespace "team-a" is given twice
}
