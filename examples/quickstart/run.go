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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
	corev1informers "github.com/kubeinformers/informers/core/v1"
)

// Timeouts of the two waits. A real cluster may take a while to list
// everything; the demo cluster is in memory.
var (
	syncTimeout   = 60 * time.Second
	eventsTimeout = 10 * time.Second
)

// maxListed caps how many objects a query prints, for big real clusters.
const maxListed = 10

// queries is what the lister section looks up.
type queries struct {
	podNamespace, podSelector         string
	serviceNamespace                  string
	configMapNamespace, configMapName string
}

var (
	// demoQueries fit the seeded demo cluster.
	demoQueries = queries{"shop", "app=web", "payments", "shop", "web-config"}
	// clusterQueries find something in most real clusters: the DNS pods,
	// the API server's service and the CA bundle every namespace gets.
	clusterQueries = queries{"kube-system", "k8s-app=kube-dns", "default", "kube-system", "kube-root-ca.crt"}
)

// run is the whole quickstart. With writable, client is the seeded demo
// cluster: run queries it and then changes a few objects through it. Without,
// run only lists and watches.
func run(ctx context.Context, out io.Writer, client kubernetes.Interface, writable bool) error {
	q := clusterQueries
	if writable {
		q = demoQueries
	}

	// 1. The factory. Dropping managedFields before objects enter the cache
	// is the classic memory saver; nothing here reads them.
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(dropManagedFields))
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()           // stops the informers…
			factory.Shutdown() // …and waits until their goroutines are gone.
		}
	}
	defer stop()

	// 2. Ask for the informers. Asking registers them with the factory;
	// StartWithContext runs everything registered so far. Accessors and
	// listers are cached, so calling them again later costs nothing.
	core, apps := factory.Core().V1(), factory.Apps().V1()
	nsLister := core.Namespaces().Lister()
	nodeLister := core.Nodes().Lister()
	deployLister := apps.Deployments().Lister()
	podLister := core.Pods().Lister()
	svcLister := core.Services().Lister()
	cmLister := core.ConfigMaps().Lister()

	// 3. Typed event handlers: no type assertions on the objects.
	rec := newRecorder()
	podReg, err := core.Pods().TypedInformer().AddTypedEventHandler(corev1informers.PodHandlerFuncs{
		AddFunc: func(pod *corev1.Pod) {
			rec.add("pod", "added", key(pod), podPlace(pod))
		},
		UpdateFunc: func(oldPod, newPod *corev1.Pod) {
			rec.add("pod", "updated", key(newPod), fmt.Sprintf("phase %s -> %s", oldPod.Status.Phase, newPod.Status.Phase))
		},
		DeleteFunc: func(deleted corev1informers.DeletedPod) {
			rec.add("pod", "deleted", deleted.GetObjectName().String(), "")
		},
	})
	if err != nil {
		return err
	}
	cmReg, err := core.ConfigMaps().TypedInformer().AddTypedEventHandler(corev1informers.ConfigMapHandlerFuncs{
		AddFunc: func(cm *corev1.ConfigMap) {
			rec.add("configmap", "added", key(cm), "keys "+strings.Join(sortedKeys(cm.Data), ", "))
		},
		UpdateFunc: func(oldCM, newCM *corev1.ConfigMap) {
			rec.add("configmap", "updated", key(newCM), dataDiff(oldCM.Data, newCM.Data))
		},
		DeleteFunc: func(deleted corev1informers.DeletedConfigMap) {
			rec.add("configmap", "deleted", deleted.GetObjectName().String(), "")
		},
	})
	if err != nil {
		return err
	}

	// 4. Start, then wait for the caches and for the handlers to have seen
	// the initial list. A cache can be in sync before its handlers are.
	factory.StartWithContext(ctx)
	syncCtx, cancelSync := context.WithTimeout(ctx, syncTimeout)
	defer cancelSync()
	if err := factory.WaitForCacheSyncWithContext(syncCtx).AsError(); err != nil {
		return err
	}
	if !cache.WaitFor(syncCtx, "" /* no logging */, podReg.HasSyncedChecker(), cmReg.HasSyncedChecker()) {
		return fmt.Errorf("event handlers did not see the initial list: %w", context.Cause(syncCtx))
	}
	initial := rec.goLive()
	fmt.Fprintf(out, "caches synced; the handlers saw %d pods and %d configmaps in the initial list\n",
		initial["pod"], initial["configmap"])

	// 5. Counts, straight from the listers.
	namespaces, err := nsLister.List(labels.Everything())
	if err != nil {
		return err
	}
	nodes, err := nodeLister.List(labels.Everything())
	if err != nil {
		return err
	}
	deployments, err := deployLister.List(labels.Everything())
	if err != nil {
		return err
	}
	pods, err := podLister.List(labels.Everything())
	if err != nil {
		return err
	}
	services, err := svcLister.List(labels.Everything())
	if err != nil {
		return err
	}
	configMaps, err := cmLister.List(labels.Everything())
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\ncached objects")
	fmt.Fprintf(out, "  namespaces   %3d\n", len(namespaces))
	fmt.Fprintf(out, "  nodes        %3d\n", len(nodes))
	fmt.Fprintf(out, "  deployments  %3d  (%s)\n", len(deployments), replicaSummary(deployments))
	fmt.Fprintf(out, "  pods         %3d  (%s)\n", len(pods), phaseSummary(pods))
	fmt.Fprintf(out, "  services     %3d\n", len(services))
	fmt.Fprintf(out, "  configmaps   %3d\n", len(configMaps))

	// 6. Lister queries: by namespace and label selector, and by name.
	fmt.Fprintln(out, "\nlister queries")
	if err := printPods(out, podLister, q.podNamespace, q.podSelector); err != nil {
		return err
	}
	nsServices, err := svcLister.Services(q.serviceNamespace).List(labels.Everything())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  services in %s: %d\n", q.serviceNamespace, len(nsServices))
	printSorted(out, nsServices, func(s *corev1.Service) string {
		var ports []string
		for _, p := range s.Spec.Ports {
			ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
		return fmt.Sprintf("%-30s %-10s %-14s %s", key(s), s.Spec.Type, s.Spec.ClusterIP, strings.Join(ports, ","))
	})
	cm, err := cmLister.ConfigMaps(q.configMapNamespace).Get(q.configMapName)
	switch {
	case apierrors.IsNotFound(err):
		fmt.Fprintf(out, "  configmap %s/%s: not found\n", q.configMapNamespace, q.configMapName)
	case err != nil:
		return err
	default:
		// Only the keys: values may be long, or private.
		fmt.Fprintf(out, "  configmap %s: keys %s\n", key(cm), strings.Join(sortedKeys(cm.Data), ", "))
	}

	// 7. By resource instead of by type: the same shared informer, with an
	// untyped lister. A misspelt resource says what was probably meant.
	fmt.Fprintf(out, "\ngeneric lookup (ForResource; %d resources supported)\n", len(informers.SupportedResources()))
	deploymentsGVR := appsv1.SchemeGroupVersion.WithResource("deployments")
	generic, err := factory.ForResource(deploymentsGVR)
	if err != nil {
		return err
	}
	objs, err := generic.Lister().List(labels.Everything())
	if err != nil {
		return err
	}
	scope := "cluster-scoped"
	if informers.IsNamespaced(deploymentsGVR) {
		scope = "namespaced"
	}
	fmt.Fprintf(out, "  %s (%s): %d\n", gvrString(deploymentsGVR), scope, len(objs))
	var names []string
	for _, obj := range objs {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		names = append(names, cache.MetaObjectToName(m).String())
	}
	printSorted(out, names, func(name string) string { return name })
	misspelt := appsv1.SchemeGroupVersion.WithResource("deployment")
	if _, err := factory.ForResource(misspelt); errors.Is(err, informers.ErrUnknownResource) {
		fmt.Fprintf(out, "  %s (misspelt): ErrUnknownResource\n    %v\n", gvrString(misspelt), err)
	} else if err == nil {
		return fmt.Errorf("ForResource(%s) succeeded, want ErrUnknownResource", misspelt)
	} else {
		return fmt.Errorf("ForResource(%s) = %w, want ErrUnknownResource", misspelt, err)
	}

	// 8. Change a few objects through the clientset and wait for the
	// handlers to report each change. Only on the demo cluster.
	if writable {
		changes := demoChanges()
		fmt.Fprintln(out, "\nchanges (through the clientset)")
		for _, c := range changes {
			fmt.Fprintf(out, "  %s\n", c.what)
			if err := c.do(ctx, client); err != nil {
				return fmt.Errorf("%s: %w", c.what, err)
			}
		}
		events, err := rec.waitFor(ctx, len(changes), eventsTimeout)
		fmt.Fprintf(out, "\nevents received (%d of %d expected)\n", len(events), len(changes))
		for _, e := range events {
			fmt.Fprintf(out, "  %s\n", e)
		}
		if err != nil {
			return err
		}

		// The listers already reflect the changes: the cache is updated
		// before handlers are told.
		fmt.Fprintln(out, "\nafter the changes")
		if err := printPods(out, podLister, q.podNamespace, q.podSelector); err != nil {
			return err
		}
		pods, err := podLister.List(labels.Everything())
		if err != nil {
			return err
		}
		configMaps, err := cmLister.List(labels.Everything())
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  pods %d (%s), configmaps %d\n", len(pods), phaseSummary(pods), len(configMaps))

		// The fake clientset, like an API server, records managedFields on
		// writes; the cache holds the transformed copy.
		stored, err := client.CoreV1().Pods("shop").Get(ctx, "web-6d9f7c8b5-h4j5k", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cached, err := podLister.Pods("shop").Get("web-6d9f7c8b5-h4j5k")
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  managedFields of %s: %d in the API, %d in the cache (WithTransform)\n",
			key(cached), len(stored.ManagedFields), len(cached.ManagedFields))
	}

	// 9. Stop the informers and wait for them to finish.
	stop()
	fmt.Fprintln(out, "\ninformers stopped")
	return nil
}

// dropManagedFields is the factory's transform. It runs on every object
// before it is cached and handed to handlers.
func dropManagedFields(obj any) (any, error) {
	// Objects without metadata, such as cache.DeletedFinalStateUnknown,
	// pass unchanged. Only write when there is something to drop.
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// printPods prints the pods in namespace that match selector.
func printPods(out io.Writer, lister listerscorev1.PodLister, namespace, selector string) error {
	sel, err := labels.Parse(selector)
	if err != nil {
		return err
	}
	pods, err := lister.Pods(namespace).List(sel)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  pods in %s with %s: %d\n", namespace, sel, len(pods))
	printSorted(out, pods, func(p *corev1.Pod) string {
		return fmt.Sprintf("%-30s %s", key(p), podPlace(p))
	})
	return nil
}
