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

package gensupport_test

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
	gadgetsv1 "github.com/kubeinformers/informers/examples/crd/apis/gadgets/v1"
	"github.com/kubeinformers/informers/examples/crd/client/clientset/versioned"
	crdfake "github.com/kubeinformers/informers/examples/crd/client/clientset/versioned/fake"
	"github.com/kubeinformers/informers/gensupport"
)

// ExampleBind binds a custom resource's typed informer, with a clientset
// from client-gen, to the factory that serves the built-in ones. Code
// that kubeinformers-gen generates makes these calls: its New(factory,
// client) binds every kind of the clientset, and its accessors serve the
// informers (examples/crd). Per-resource options given to the factory
// apply to the bound resource, and ForResource returns its typed informer.
func ExampleBind() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gadgets := schema.GroupVersionResource{Group: "gadgets.example.com", Version: "v1", Resource: "gadgets"}
	kube := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}})
	crd := crdfake.NewSimpleClientset(
		&gadgetsv1.Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "blender", Labels: map[string]string{"tier": "gold"}}},
		&gadgetsv1.Gadget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "toaster", Labels: map[string]string{"tier": "tin"}}},
	)

	factory, err := informers.New(kube, 0, informers.WithResourceOptions(gadgets, informers.ResourceOptions{LabelSelector: "tier=gold"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer factory.Shutdown()
	defer cancel()

	// One TypedResource per kind: its resource, scope, Go type and calls.
	gadgetResource := gensupport.NewTypedResource(gadgets, true, &gadgetsv1.Gadget{},
		func(c versioned.Interface, namespace string) gensupport.Requests {
			return gensupport.RequestsOf(c.GadgetsV1().Gadgets(namespace))
		})
	if _, err := gensupport.Bind(factory, versioned.Interface(crd), gadgetResource); err != nil {
		fmt.Println(err)
		return
	}

	pods := factory.Core().V1().Pods().Lister()
	custom, err := factory.ForResource(gadgets) // the typed informer, not a dynamic one
	if err != nil {
		fmt.Println(err)
		return
	}
	factory.StartWithContext(ctx)
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		fmt.Println(err)
		return
	}

	all, _ := pods.List(labels.Everything())
	fmt.Println("pods:", len(all))
	objs, _ := custom.Lister().List(labels.Everything())
	for _, obj := range objs {
		g := obj.(*gadgetsv1.Gadget)
		fmt.Printf("gadget %s/%s (%T)\n", g.Namespace, g.Name, obj)
	}
	fmt.Println("ready:", factory.Ready() == nil)
	// Output:
	// pods: 1
	// gadget shop/blender (*v1.Gadget)
	// ready: true
}
