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
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeinformers/informers"
)

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// showNarrowed builds a second factory that watches only some namespaces
// (WithNamespaces: one list and watch per namespace, one lister over all of
// them) and filters pods on the server and strips their managedFields
// (WithResourceOptions, for one resource).
func (t *tour) showNarrowed() error {
	heading(t.out, "6. Several namespaces and per-resource options: WithNamespaces, WithResourceOptions")
	q := t.c.q
	factory, err := t.c.newFactory(
		informers.WithNamespaces(q.namespaces...),
		informers.WithResourceOptions(podsGVR, informers.ResourceOptions{
			LabelSelector: q.narrowSelector,
			Transform:     informers.TransformStripManagedFields(),
		}),
	)
	if err != nil {
		return err
	}
	pods := factory.Core().V1().Pods().Lister()
	configMaps := factory.Core().V1().ConfigMaps().Lister()
	ctx, cancel := context.WithCancel(t.ctx)
	factory.StartWithContext(ctx)
	defer factory.Shutdown()
	defer cancel()
	if err := waitForSync(ctx, factory); err != nil {
		return err
	}

	fmt.Fprintf(t.out, "  a second factory: WithNamespaces(%s),\n", quoted(q.namespaces))
	fmt.Fprintf(t.out, "  and for %s: LabelSelector %q, Transform TransformStripManagedFields()\n", resourceName(podsGVR), q.narrowSelector)
	cached, err := pods.List(labels.Everything())
	if err != nil {
		return err
	}
	managedFields := 0
	for _, p := range cached {
		managedFields += len(p.ManagedFields)
	}
	fmt.Fprintf(t.out, "    pods: %d, managedFields entries: %d\n", len(cached), managedFields)
	printSorted(t.out, "      ", cached, func(p *corev1.Pod) string {
		return fmt.Sprintf("%-30s %s", key(p), podPlace(p))
	})
	cms, err := configMaps.List(labels.Everything())
	if err != nil {
		return err
	}
	fmt.Fprintf(t.out, "    configmaps: %d\n", len(cms))
	printSorted(t.out, "      ", cms, func(cm *corev1.ConfigMap) string { return key(cm) })
	return nil
}

// quoted writes strings as Go code would: "a", "b".
func quoted(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}
