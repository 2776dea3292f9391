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

// Command quickstart is the smallest complete program with
// github.com/kubeinformers/informers: a factory, a typed informer with an
// event handler, a lister query, lean caches and a readiness check. It runs
// on an in-memory cluster (client-go's fake clientset), so it needs nothing
// but Go:
//
//	go run ./examples/quickstart
//
// To watch a real cluster, replace fake.NewClientset(...) with
// kubernetes.NewForConfig(config). For everything else the library offers,
// run the tour: go run ./examples/tour.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
	corev1informers "github.com/kubeinformers/informers/core/v1"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout, newCluster())
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, client kubernetes.Interface) error {
	// New is client-go's NewSharedInformerFactoryWithOptions, but a bad
	// option is an error here rather than a panic or a silent default.
	factory, err := informers.New(client, 10*time.Minute,
		informers.WithNamespace("shop"),
		informers.WithLeanMemory(), // caches without managedFields, repeated values shared
	)
	if err != nil {
		return err
	}

	// A typed informer with a typed event handler, as in client-go.
	pods := factory.Core().V1().Pods()
	added := make(chan *corev1.Pod, 10)
	handler, err := pods.TypedInformer().AddTypedEventHandler(corev1informers.PodHandlerFuncs{
		AddFunc: func(p *corev1.Pod) { added <- p },
	})
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	factory.StartWithContext(ctx)
	defer factory.Shutdown() // runs second: waits for the informers that cancel stops
	defer cancel()
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		return err
	}
	// Ready is what a /readyz handler returns: nil, or which informer is
	// not ready and why.
	fmt.Fprintln(out, "caches synced, Ready() =", factory.Ready())
	// The handler gets the initial list after the cache has it.
	if !cache.WaitForCacheSync(ctx.Done(), handler.HasSynced) {
		return ctx.Err()
	}
	fmt.Fprintln(out, "the handler saw", len(added), "pods in the initial list")

	// A change through the API reaches the handler, then the lister.
	if _, err := client.CoreV1().Pods("shop").Create(ctx, pod("web-3", "web", "node-b"), metav1.CreateOptions{}); err != nil {
		return err
	}
wait:
	for {
		select {
		case p := <-added:
			if p.Name == "web-3" {
				fmt.Fprintf(out, "event: added %s/%s on %s\n", p.Namespace, p.Name, p.Spec.NodeName)
				break wait
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}

	// Listers read the cache: no request, and no allocation to get one.
	web, err := pods.Lister().Pods("shop").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil {
		return err
	}
	slices.SortFunc(web, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	fmt.Fprintln(out, "lister: pods in shop with app=web:", len(web))
	for _, cached := range web { // read-only: DeepCopy before changing one
		served, err := client.CoreV1().Pods("shop").Get(ctx, cached.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  %s on %s, managedFields: %d served, %d cached\n",
			cached.Name, cached.Spec.NodeName, len(served.ManagedFields), len(cached.ManagedFields))
	}
	return nil
}

// newCluster is an in-memory cluster with three pods in namespace shop.
func newCluster() kubernetes.Interface {
	return fake.NewClientset(pod("web-1", "web", "node-a"), pod("web-2", "web", "node-b"), pod("db-0", "db", "node-a"))
}

// pod is a Pod of the shop namespace as an API server returns it, with the
// managedFields entry that WithLeanMemory leaves out of the cache.
func pod(name, app, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: name, Labels: map[string]string{"app": app},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
		},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: app, Image: app + ":1.0"}}},
	}
}
