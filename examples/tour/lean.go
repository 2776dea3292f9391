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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// showLean compares pods as the API serves them with the main factory's
// lean cache (WithLeanMemory): managedFields are dropped, and parts that are
// identical between objects, such as the containers of one ReplicaSet's
// pods, are stored once. So cached objects are read-only: DeepCopy before
// changing one.
func (t *tour) showLean() error {
	heading(t.out, "3. Lean caches: WithLeanMemory()")
	q := t.c.q
	served, err := t.c.client.CoreV1().Pods(q.podNamespace).List(t.ctx, metav1.ListOptions{LabelSelector: q.podSelector})
	if err != nil {
		return err
	}
	sel, err := labels.Parse(q.podSelector)
	if err != nil {
		return err
	}
	cached, err := t.pods.Pods(q.podNamespace).List(sel)
	if err != nil {
		return err
	}
	var servedFields, cachedFields int
	for i := range served.Items {
		servedFields += len(served.Items[i].ManagedFields)
	}
	copies := map[*corev1.Container]bool{}
	for _, p := range cached {
		cachedFields += len(p.ManagedFields)
		if len(p.Spec.Containers) > 0 {
			copies[&p.Spec.Containers[0]] = true
		}
	}
	fmt.Fprintf(t.out, "  pods in %s with %s: %d\n", q.podNamespace, sel, len(cached))
	fmt.Fprintf(t.out, "    managedFields entries: %d as served, %d in the cache\n", servedFields, cachedFields)
	if len(cached) == 0 {
		return nil
	}
	copyWord := "copies"
	if len(copies) == 1 {
		copyWord = "copy"
	}
	fmt.Fprintf(t.out, "    containers: %d %s in the cache for %d pods (identical ones are shared)\n", len(copies), copyWord, len(cached))
	return nil
}
