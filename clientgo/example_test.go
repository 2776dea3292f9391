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

package clientgo_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	listerscorev1 "k8s.io/client-go/listers/core/v1"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/clientgo"
)

// nodeController stands for a library that, like k8s.io/cloud-provider's
// SetInformers, takes client-go's factory type.
type nodeController struct {
	nodes listerscorev1.NodeLister
}

func (c *nodeController) SetInformers(f clientgoinformers.SharedInformerFactory) {
	c.nodes = f.Core().V1().Nodes().Lister()
}

// The library gets a view of the program's one factory: its nodes
// informer is the factory's, started and synced with the rest.
func ExampleAdapt() {
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}})
	factory := informers.NewSharedInformerFactory(client, 0)

	var c nodeController
	c.SetInformers(clientgo.Adapt(factory))

	ctx, cancel := context.WithCancel(context.Background())
	defer factory.Shutdown()
	defer cancel()
	factory.StartWithContext(ctx)
	factory.WaitForCacheSync(ctx.Done())

	nodes, _ := c.nodes.List(labels.Everything())
	for _, n := range nodes {
		fmt.Println(n.Name)
	}
	// Output: node-a
}
