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
	"io"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// key is namespace/name, or name for cluster-scoped objects.
func key(obj metav1.Object) string {
	return cache.MetaObjectToName(obj).String()
}

// printSorted prints one line per item, sorted, at most maxListed of them,
// each indented by indent.
func printSorted[T any](out io.Writer, indent string, items []T, line func(T) string) {
	lines := make([]string, 0, len(items))
	for _, item := range items {
		lines = append(lines, line(item))
	}
	slices.Sort(lines)
	for i, l := range lines {
		if i == maxListed {
			fmt.Fprintf(out, "%s… and %d more\n", indent, len(lines)-maxListed)
			break
		}
		fmt.Fprintf(out, "%s%s\n", indent, l)
	}
}

func podPlace(pod *corev1.Pod) string {
	if pod.Spec.NodeName == "" {
		return fmt.Sprintf("%s, not scheduled", pod.Status.Phase)
	}
	return fmt.Sprintf("%s on %s", pod.Status.Phase, pod.Spec.NodeName)
}

// phaseSummary counts pods by phase, such as "Running 6, Pending 2".
func phaseSummary(pods []*corev1.Pod) string {
	counts := map[corev1.PodPhase]int{}
	for _, p := range pods {
		counts[p.Status.Phase]++
	}
	var parts []string
	for _, phase := range []corev1.PodPhase{corev1.PodRunning, corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown, ""} {
		if n := counts[phase]; n > 0 {
			if phase == "" {
				phase = "no phase"
			}
			parts = append(parts, fmt.Sprintf("%s %d", phase, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// replicaSummary adds up the deployments' ready and wanted replicas.
func replicaSummary(deployments []*appsv1.Deployment) string {
	var ready, wanted int32
	for _, d := range deployments {
		ready += d.Status.ReadyReplicas
		if d.Spec.Replicas != nil {
			wanted += *d.Spec.Replicas
		} else {
			wanted++ // the API server's default
		}
	}
	return fmt.Sprintf("%d of %d replicas ready", ready, wanted)
}

func sortedKeys(data map[string]string) []string {
	return slices.Sorted(maps.Keys(data))
}

// dataDiff describes how a config map's data changed.
func dataDiff(oldData, newData map[string]string) string {
	keys := sortedKeys(oldData)
	for k := range newData {
		if _, ok := oldData[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		o, inOld := oldData[k]
		n, inNew := newData[k]
		switch {
		case !inOld:
			parts = append(parts, k+" added")
		case !inNew:
			parts = append(parts, k+" removed")
		case o != n:
			parts = append(parts, fmt.Sprintf("%s: %s -> %s", k, short(o), short(n)))
		}
	}
	if len(parts) == 0 {
		return "data unchanged"
	}
	return strings.Join(parts, ", ")
}

func short(s string) string {
	if len(s) > 24 || strings.Contains(s, "\n") {
		return "…"
	}
	return s
}
