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

// Command readyourwrites is a controller that writes and then reads its
// lister: it keeps 3 web Pods in namespace shop. A workqueue runs such a
// reconcile again as soon as an event arrives, often before the informer
// holds the controller's own last writes; the lister then lacks the Pods
// just created, and the controller creates more. Here every write is
// recorded in a readyourwrites.Writes and each reconcile waits for them first,
// so five back-to-back reconciles create exactly 3 Pods.
//
//	go run ./examples/readyourwrites
//
// It runs on an in-memory cluster (client-go's fake clientset, with a
// reactor that gives objects resource versions as an API server does: the
// plain fake sets none, and then Writes records nothing and never waits).
// Against a real cluster, build the client with kubernetes.NewForConfig.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1listers "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/readyourwrites"
)

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Stdout, newCluster())
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "readyourwrites:", err)
		os.Exit(1)
	}
}

// scaler keeps replicas Pods labelled app=web in namespace shop.
type scaler struct {
	client   kubernetes.Interface
	pods     corev1listers.PodLister
	writes   *readyourwrites.Writes
	replicas int
	created  int
}

// reconcile waits until the informer holds the scaler's own writes, then
// reads the lister and creates what is missing.
func (s *scaler) reconcile(ctx context.Context) error {
	if err := s.writes.Wait(ctx, podsResource, "shop"); err != nil {
		return err
	}
	web, err := s.pods.Pods("shop").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil {
		return err
	}
	for i := len(web); i < s.replicas; i++ {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: "web-" + strconv.Itoa(s.created), Labels: map[string]string{"app": "web"},
		}}
		created, err := s.client.CoreV1().Pods("shop").Create(ctx, pod, metav1.CreateOptions{})
		s.writes.Wrote(podsResource, created, err) // records created's resource version
		if err != nil {
			return err
		}
		s.created++
	}
	return nil
}

func run(ctx context.Context, out io.Writer, client kubernetes.Interface) error {
	factory, err := informers.New(client, 0, informers.WithNamespace("shop"))
	if err != nil {
		return err
	}
	pods := factory.Core().V1().Pods().Lister()
	ctx, cancel := context.WithCancel(ctx)
	factory.StartWithContext(ctx)
	defer factory.Shutdown() // runs second: waits for the informers that cancel stops
	defer cancel()
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		return err
	}

	s := &scaler{client: client, pods: pods, writes: readyourwrites.New(factory), replicas: 3}
	for range 5 { // a burst of events: five reconciles back to back
		if err := s.reconcile(ctx); err != nil {
			return err
		}
	}
	served, err := client.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "5 reconciles created %d pods; the server has %d web pods (want 3)\n", s.created, len(served.Items))
	return nil
}

// newCluster is an in-memory cluster whose writes return resource
// versions, as an API server's do.
func newCluster() kubernetes.Interface {
	client := fake.NewClientset()
	var version atomic.Int64
	version.Store(100)
	stamp := func(action clienttesting.Action) (bool, runtime.Object, error) {
		if a, ok := action.(interface{ GetObject() runtime.Object }); ok {
			if m, err := meta.Accessor(a.GetObject()); err == nil {
				m.SetResourceVersion(strconv.FormatInt(version.Add(1), 10))
			}
		}
		return false, nil, nil // the tracker stores the stamped object
	}
	client.PrependReactor("create", "*", stamp)
	client.PrependReactor("update", "*", stamp)
	return client
}
