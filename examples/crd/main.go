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

// Command crd is a small controller over its own custom resources and a
// built-in one, with one informer factory for both: Gadgets
// (gadgets.example.com/v1, namespaced, with spec and status) and
// GadgetClasses (cluster-scoped) from the example API in apis/, and
// Deployments. The clientset and listers come from code-generator's
// client-gen and lister-gen, the informers from kubeinformers-gen
// (hack/update-examples-crd.sh regenerates them).
//
//	go run ./examples/crd                              # in-memory demo cluster
//	go run ./examples/crd --kubeconfig ~/.kube/config  # a real cluster (kubectl apply -f examples/crd/manifests/ first)
//
// The one line that makes the generated informers part of our factory is
//
//	gadgetInformers, err := externalversions.New(factory, gadgetClient)
//
// From then on one Start, one WaitForCacheSync, one Ready and one Shutdown
// cover Deployments and Gadgets, and the factory's options
// (WithResourceOptions here) apply to both.
//
// The controller sets each Gadget's status from the Deployment of the same
// name and namespace: Phase "Ready" once it has spec.replicas ready
// replicas, "Progressing" before, "Missing" without a Deployment, and
// "Invalid" when its GadgetClass does not exist. Without --kubeconfig
// and $KUBECONFIG it runs against fake clientsets seeded with a shop,
// makes one change, prints what it reconciled and exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	appslistersv1 "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers"
	gadgetsv1 "github.com/kubeinformers/informers/examples/crd/apis/gadgets/v1"
	"github.com/kubeinformers/informers/examples/crd/client/clientset/versioned"
	gadgetfake "github.com/kubeinformers/informers/examples/crd/client/clientset/versioned/fake"
	"github.com/kubeinformers/informers/examples/crd/client/informers/externalversions"
	listersv1 "github.com/kubeinformers/informers/examples/crd/client/listers/gadgets/v1"
	"github.com/kubeinformers/informers/informertest"
	"github.com/kubeinformers/informers/readyourwrites"
)

var gadgetsResource = schema.GroupVersionResource{Group: gadgetsv1.SchemeGroupVersion.Group, Version: "v1", Resource: "gadgets"}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of a cluster with the example CRDs installed (default $KUBECONFIG; with neither, an in-memory demo cluster)")
	logs := flag.Bool("logs", false, "also print the informers' log lines (klog, on stderr)")
	klog.InitFlags(nil)
	flag.Parse()
	if !*logs {
		klog.SetOutput(io.Discard)
		_ = flag.Set("logtostderr", "false")
		_ = flag.Set("stderrthreshold", "FATAL")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Stdout, *kubeconfig)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "crd:", err)
		os.Exit(1)
	}
}

// clients reach one cluster: its built-in and its gadget API.
type clients struct {
	kube   kubernetes.Interface
	gadget versioned.Interface
	demo   bool
}

func run(ctx context.Context, out io.Writer, kubeconfig string) error {
	c, err := connect(kubeconfig)
	if err != nil {
		return err
	}

	// One factory of ours, with per-resource options for the built-in and
	// the custom resource alike: only the Deployments the controller
	// owns, and the Gadgets indexed by class.
	factory, err := informers.New(c.kube, 0,
		informers.WithTransform(informers.TransformStripManagedFields()),
		informers.WithResourceOptions(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
			informers.ResourceOptions{LabelSelector: "app.kubernetes.io/managed-by=gadget-controller"}),
		informers.WithResourceOptions(gadgetsResource, informers.ResourceOptions{
			Indexers: cache.Indexers{"byClass": func(obj any) ([]string, error) {
				return []string{obj.(*gadgetsv1.Gadget).Spec.ClassName}, nil
			}},
		}),
	)
	if err != nil {
		return err
	}
	// The one line: the generated informers become a view of our factory.
	gadgetInformers, err := externalversions.New(factory, c.gadget)
	if err != nil {
		return err
	}
	defer factory.Shutdown()

	ctl := &controller{
		out:         out,
		writes:      readyourwrites.New(factory),
		client:      c.gadget,
		gadgets:     gadgetInformers.Gadgets().V1().Gadgets().Lister(),
		classes:     gadgetInformers.Gadgets().V1().GadgetClasses().Lister(),
		deployments: factory.Apps().V1().Deployments().Lister(),
		byClass:     gadgetInformers.Gadgets().V1().Gadgets().Informer().GetIndexer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "gadgets"}),
	}
	defer ctl.queue.ShutDown()
	if err := ctl.watch(gadgetInformers, factory); err != nil {
		return err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory.StartWithContext(runCtx)
	syncCtx, syncCancel := context.WithTimeout(runCtx, time.Minute)
	defer syncCancel()
	if err := factory.WaitForCacheSyncWithContext(syncCtx).AsError(); err != nil {
		return fmt.Errorf("waiting for the caches: %w", err)
	}
	status := factory.SyncStatus()
	ids := slices.SortedFunc(func(yield func(informers.InformerID) bool) {
		for id := range status {
			if !yield(id) {
				return
			}
		}
	}, func(a, b informers.InformerID) int { return compare(a.String(), b.String()) })
	for _, id := range ids {
		fmt.Fprintf(out, "synced %-40s %v\n", id, status[id])
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { ctl.work(runCtx) })

	if !c.demo {
		<-ctx.Done()
		return nil
	}
	// The demo: wait for the first round, make one change, wait for its
	// round, and print what the factory says.
	if err := ctl.settle(ctx, func() bool {
		return ctl.phase("shop/blender") != "" && ctl.phase("shop/toaster") != "" && ctl.phase("shop/mower") != ""
	}); err != nil {
		return err
	}
	cached, err := ctl.deployments.List(labels.Everything())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "deployments cached: %d (only those with the controller's label)\n", len(cached))
	fmt.Fprintln(out, "change: deployment shop/toaster has 2 ready replicas")
	d, err := c.kube.AppsV1().Deployments("shop").Get(ctx, "toaster", metav1.GetOptions{})
	if err != nil {
		return err
	}
	d.Status.ReadyReplicas = 2
	if _, err := c.kube.AppsV1().Deployments("shop").UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if err := ctl.settle(ctx, func() bool { return ctl.phase("shop/toaster") == "Ready" }); err != nil {
		return err
	}
	fmt.Fprintln(out, "ready:", orOK(factory.Ready()))
	return nil
}

// connect returns the demo's fake clientsets, or those of a kubeconfig.
func connect(kubeconfig string) (clients, error) {
	if kubeconfig == "" && os.Getenv("KUBECONFIG") == "" {
		kube, gadget := demoCluster()
		return clients{kube: kube, gadget: gadget, demo: true}, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return clients{}, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return clients{}, err
	}
	gadget, err := versioned.NewForConfig(config)
	if err != nil {
		return clients{}, err
	}
	return clients{kube: kube, gadget: gadget}, nil
}

// demoCluster is a shop: two gadget classes, three gadgets (one of a class
// that does not exist) and the Deployments of two of them.
func demoCluster() (*fake.Clientset, *gadgetfake.Clientset) {
	managed := map[string]string{"app.kubernetes.io/managed-by": "gadget-controller"}
	deployment := func(name string, replicas, ready int32) runtime.Object {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: managed},
			Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
			Status:     appsv1.DeploymentStatus{ReadyReplicas: ready},
		}
	}
	gadget := func(name, class string, replicas int32) runtime.Object {
		return &gadgetsv1.Gadget{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
			Spec:       gadgetsv1.GadgetSpec{ClassName: class, Replicas: replicas},
		}
	}
	kube := fake.NewClientset(
		deployment("blender", 1, 1),
		deployment("toaster", 2, 0),
		// Not the controller's: the per-resource label selector keeps it
		// out of the cache.
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}},
	)
	gadgets := gadgetfake.NewSimpleClientset(
		&gadgetsv1.GadgetClass{ObjectMeta: metav1.ObjectMeta{Name: "kitchen"}, Spec: gadgetsv1.GadgetClassSpec{Driver: "example.com/kitchen"}},
		&gadgetsv1.GadgetClass{ObjectMeta: metav1.ObjectMeta{Name: "garden"}, Spec: gadgetsv1.GadgetClassSpec{Driver: "example.com/garden"}},
		gadget("blender", "kitchen", 1),
		gadget("toaster", "kitchen", 2),
		gadget("mower", "shed", 1),
	)
	// Resource versions as a server gives them: the controller's
	// readyourwrites.Writes waits on them (a plain fake sets none, and
	// then it records nothing and never waits).
	informertest.StampResourceVersions(kube)
	informertest.StampResourceVersions(gadgets)
	return kube, gadgets
}

// controller sets the status of Gadgets.
type controller struct {
	out         io.Writer
	client      versioned.Interface
	gadgets     listersv1.GadgetLister
	classes     listersv1.GadgetClassLister
	deployments appslistersv1.DeploymentLister
	byClass     cache.Indexer
	queue       workqueue.TypedRateLimitingInterface[string]

	mu   sync.Mutex
	busy bool // a key is being reconciled

	// writes are the controller's own status writes. The cache can lag
	// behind them: an event that arrives before a write's own event (a
	// class, a Deployment) would reconcile the old object and write the
	// same status again. Each reconcile waits for them before it reads.
	writes *readyourwrites.Writes
}

// watch enqueues a Gadget when it, its Deployment or its class changes.
func (c *controller) watch(gadgetInformers externalversions.SharedInformerFactory, factory informers.Factory) error {
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	onChange := cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue}
	if _, err := gadgetInformers.Gadgets().V1().Gadgets().Informer().AddEventHandler(onChange); err != nil {
		return err
	}
	// A Deployment has its Gadget's namespace and name.
	if _, err := factory.Apps().V1().Deployments().Informer().AddEventHandler(onChange); err != nil {
		return err
	}
	// A class enqueues the Gadgets of that class, through the index.
	_, err := gadgetInformers.Gadgets().V1().GadgetClasses().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if class, ok := obj.(*gadgetsv1.GadgetClass); ok {
				c.enqueueClass(class.Name)
			}
		},
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				c.enqueueClass(key)
			}
		},
	})
	return err
}

func (c *controller) enqueueClass(class string) {
	objs, err := c.byClass.ByIndex("byClass", class)
	if err != nil {
		return
	}
	for _, obj := range objs {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
}

// work reconciles queued Gadgets until ctx is done.
func (c *controller) work(ctx context.Context) {
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		c.mu.Lock()
		c.busy = true
		c.mu.Unlock()
		if err := c.reconcile(ctx, key); err != nil && ctx.Err() == nil {
			fmt.Fprintf(c.out, "reconcile %s: %v (retrying)\n", key, err)
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
		c.mu.Lock()
		c.busy = false
		c.mu.Unlock()
	}
}

// settle waits until done holds for the cache and the controller is idle.
func (c *controller) settle(ctx context.Context, done func() bool) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		c.mu.Lock()
		idle := !c.busy && c.queue.Len() == 0
		c.mu.Unlock()
		if idle && done() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the controller: %w", context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// reconcile sets one Gadget's status from its class and Deployment.
func (c *controller) reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	// Read what this controller wrote before, not an older Gadget.
	if err := c.writes.Wait(ctx, gadgetsResource, ns); err != nil {
		return err
	}
	gadget, err := c.gadgets.Gadgets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // deleted
	} else if err != nil {
		return err
	}
	status := gadgetsv1.GadgetStatus{ObservedGeneration: gadget.Generation}
	switch _, err := c.classes.Get(gadget.Spec.ClassName); {
	case apierrors.IsNotFound(err):
		status.Phase = "Invalid"
	case err != nil:
		return err
	default:
		d, err := c.deployments.Deployments(ns).Get(name)
		switch {
		case apierrors.IsNotFound(err):
			status.Phase = "Missing"
		case err != nil:
			return err
		default:
			status.ReadyReplicas = d.Status.ReadyReplicas
			status.Phase = "Progressing"
			if status.ReadyReplicas >= gadget.Spec.Replicas {
				status.Phase = "Ready"
			}
		}
	}
	if gadget.Status == status {
		return nil
	}
	updated := gadget.DeepCopy() // never change the cache's object
	updated.Status = status
	written, err := c.client.GadgetsV1().Gadgets(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	c.writes.Wrote(gadgetsResource, written, err)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "gadget %s: class %s, %s, %d/%d ready\n", key, gadget.Spec.ClassName, status.Phase, status.ReadyReplicas, gadget.Spec.Replicas)
	return nil
}

// phase is the status phase of a Gadget in the cache.
func (c *controller) phase(key string) string {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	g, err := c.gadgets.Gadgets(ns).Get(name)
	if err != nil {
		return ""
	}
	return g.Status.Phase
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func orOK(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
