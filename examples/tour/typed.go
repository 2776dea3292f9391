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
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
	corev1informers "github.com/kubeinformers/informers/core/v1"
)

// startTour builds the main factory, asks for its typed informers and
// handlers exactly as with client-go, starts it and waits for the caches.
func startTour(ctx context.Context, out io.Writer, c cluster) (*tour, error) {
	heading(out, "2. Typed informers, handlers and listers, as in client-go")
	// WithLeanMemory: section 3.
	factory, err := c.newFactory(informers.WithLeanMemory())
	if err != nil {
		return nil, err
	}
	t := &tour{out: out, c: c, factory: factory, rec: newRecorder()}
	t.ctx, t.cancel = context.WithCancel(ctx)

	// Asking for an informer registers it; Start runs everything registered
	// so far. Accessors and listers are cached: calling them again costs
	// nothing.
	core, apps := factory.Core().V1(), factory.Apps().V1()
	t.namespaces = core.Namespaces().Lister()
	t.nodes = core.Nodes().Lister()
	t.deployments = apps.Deployments().Lister()
	t.pods = core.Pods().Lister()
	t.services = core.Services().Lister()
	t.configMaps = core.ConfigMaps().Lister()
	handlers, err := t.addHandlers()
	if err != nil {
		t.stop()
		return nil, err
	}

	factory.StartWithContext(t.ctx)
	if err := t.waitForHandlers(handlers); err != nil {
		t.stop()
		return nil, err
	}
	return t, nil
}

// addHandlers registers typed event handlers: no type assertions.
func (t *tour) addHandlers() ([]cache.ResourceEventHandlerRegistration, error) {
	core := t.factory.Core().V1()
	podReg, err := core.Pods().TypedInformer().AddTypedEventHandler(corev1informers.PodHandlerFuncs{
		AddFunc: func(pod *corev1.Pod) {
			t.rec.add("pod", "added", key(pod), podPlace(pod))
		},
		UpdateFunc: func(oldPod, newPod *corev1.Pod) {
			t.rec.add("pod", "updated", key(newPod), fmt.Sprintf("phase %s -> %s", oldPod.Status.Phase, newPod.Status.Phase))
		},
		DeleteFunc: func(deleted corev1informers.DeletedPod) {
			t.rec.add("pod", "deleted", deleted.GetObjectName().String(), "")
		},
	})
	if err != nil {
		return nil, err
	}
	cmReg, err := core.ConfigMaps().TypedInformer().AddTypedEventHandler(corev1informers.ConfigMapHandlerFuncs{
		AddFunc: func(cm *corev1.ConfigMap) {
			t.rec.add("configmap", "added", key(cm), "keys "+strings.Join(sortedKeys(cm.Data), ", "))
		},
		UpdateFunc: func(oldCM, newCM *corev1.ConfigMap) {
			t.rec.add("configmap", "updated", key(newCM), dataDiff(oldCM.Data, newCM.Data))
		},
		DeleteFunc: func(deleted corev1informers.DeletedConfigMap) {
			t.rec.add("configmap", "deleted", deleted.GetObjectName().String(), "")
		},
	})
	if err != nil {
		return nil, err
	}
	return []cache.ResourceEventHandlerRegistration{podReg, cmReg}, nil
}

// waitForHandlers waits for the caches, then for the handlers to have seen
// the initial list: a cache can be in sync before its handlers are.
func (t *tour) waitForHandlers(handlers []cache.ResourceEventHandlerRegistration) error {
	if err := waitForSync(t.ctx, t.factory); err != nil {
		return err
	}
	var synced []cache.DoneChecker
	for _, h := range handlers {
		synced = append(synced, h.HasSyncedChecker())
	}
	ctx, cancel := context.WithTimeout(t.ctx, syncTimeout)
	defer cancel()
	if !cache.WaitFor(ctx, "" /* no logging */, synced...) {
		return fmt.Errorf("event handlers did not see the initial list: %w", context.Cause(ctx))
	}
	initial := t.rec.goLive()
	fmt.Fprintf(t.out, "  caches synced; the handlers saw %d pods and %d configmaps in the initial list\n",
		initial["pod"], initial["configmap"])
	return nil
}

// showTyped prints counts and lister queries: namespace, label selector,
// name.
func (t *tour) showTyped() error {
	if err := t.printCounts(); err != nil {
		return err
	}
	q := t.c.q
	fmt.Fprintln(t.out, "  lister queries")
	if err := printPods(t.out, t.pods, q.podNamespace, q.podSelector); err != nil {
		return err
	}
	if err := t.printServices(q.serviceNamespace); err != nil {
		return err
	}
	cm, err := t.configMaps.ConfigMaps(q.configMapNamespace).Get(q.configMapName)
	switch {
	case apierrors.IsNotFound(err):
		fmt.Fprintf(t.out, "    configmap %s/%s: not found\n", q.configMapNamespace, q.configMapName)
	case err != nil:
		return err
	default:
		// Only the keys: values may be long, or private.
		fmt.Fprintf(t.out, "    configmap %s: keys %s\n", key(cm), strings.Join(sortedKeys(cm.Data), ", "))
	}
	return nil
}

// printCounts prints how many objects each cache holds.
func (t *tour) printCounts() error {
	namespaces, err := t.namespaces.List(labels.Everything())
	if err != nil {
		return err
	}
	nodes, err := t.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	deployments, err := t.deployments.List(labels.Everything())
	if err != nil {
		return err
	}
	pods, err := t.pods.List(labels.Everything())
	if err != nil {
		return err
	}
	services, err := t.services.List(labels.Everything())
	if err != nil {
		return err
	}
	configMaps, err := t.configMaps.List(labels.Everything())
	if err != nil {
		return err
	}
	fmt.Fprintln(t.out, "  cached objects")
	fmt.Fprintf(t.out, "    namespaces   %3d\n", len(namespaces))
	fmt.Fprintf(t.out, "    nodes        %3d\n", len(nodes))
	fmt.Fprintf(t.out, "    deployments  %3d  (%s)\n", len(deployments), replicaSummary(deployments))
	fmt.Fprintf(t.out, "    pods         %3d  (%s)\n", len(pods), phaseSummary(pods))
	fmt.Fprintf(t.out, "    services     %3d\n", len(services))
	fmt.Fprintf(t.out, "    configmaps   %3d\n", len(configMaps))
	return nil
}

func (t *tour) printServices(namespace string) error {
	services, err := t.services.Services(namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	fmt.Fprintf(t.out, "    services in %s: %d\n", namespace, len(services))
	printSorted(t.out, "      ", services, func(s *corev1.Service) string {
		var ports []string
		for _, p := range s.Spec.Ports {
			ports = append(ports, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
		}
		return fmt.Sprintf("%-30s %-10s %-14s %s", key(s), s.Spec.Type, s.Spec.ClusterIP, strings.Join(ports, ","))
	})
	return nil
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
	fmt.Fprintf(out, "    pods in %s with %s: %d\n", namespace, sel, len(pods))
	printSorted(out, "      ", pods, func(p *corev1.Pod) string {
		return fmt.Sprintf("%-30s %s", key(p), podPlace(p))
	})
	return nil
}
