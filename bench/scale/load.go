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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The synthetic cluster: Pods of ReplicaSets of podsPerRS, spread over
// namespaces and nodes like a mid-sized cluster's.
const (
	namespaces = 10
	podsPerRS  = 50
	nodes      = 100
	loaders    = 16
)

func hexOf(parts ...any) string {
	h := sha256.Sum256(fmt.Append(nil, parts...))
	return hex.EncodeToString(h[:])
}

type podID struct {
	ns, name, rs, node string
	i                  int
}

// podSuffix is the 5-character suffix of Pod i's name, in the alphabet a
// ReplicaSet controller draws its random suffixes from, and unique for
// every i below 27^5 (a hash would collide: 5 hex digits did once in
// about 77,000 Pods).
func podSuffix(i int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	var b [5]byte
	for k := len(b) - 1; k >= 0; k-- {
		b[k] = alphabet[i%len(alphabet)]
		i /= len(alphabet)
	}
	return string(b[:])
}

func podAt(i int) podID {
	rs := i / podsPerRS
	return podID{
		i:    i,
		rs:   fmt.Sprintf("app-%03d-%s", rs, hexOf("rs", rs)[:10]),
		ns:   fmt.Sprintf("bench-%d", rs%namespaces),
		name: fmt.Sprintf("app-%03d-%s-%s", rs, hexOf("rs", rs)[:10], podSuffix(i)),
		node: fmt.Sprintf("node-%03d", (i*7)%nodes),
	}
}

// podSpec is the applied intent: what a ReplicaSet controller would create.
func podSpec(p podID) map[string]any {
	rsNum := p.i / podsPerRS
	app := fmt.Sprintf("app-%03d", rsNum)
	env := func(kv ...string) []any {
		var out []any
		for i := 0; i < len(kv); i += 2 {
			out = append(out, map[string]any{"name": kv[i], "value": kv[i+1]})
		}
		return out
	}
	fieldEnv := func(name, path string) map[string]any {
		return map[string]any{"name": name, "valueFrom": map[string]any{"fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": path}}}
	}
	appEnv := append(env("LOG_LEVEL", "info", "CONFIG_PATH", "/etc/app/config.yaml"), fieldEnv("POD_NAME", "metadata.name"), fieldEnv("POD_NAMESPACE", "metadata.namespace"))
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata": map[string]any{
			"name":         p.name,
			"namespace":    p.ns,
			"generateName": p.rs + "-",
			"labels": map[string]any{
				"app.kubernetes.io/name":      app,
				"app.kubernetes.io/instance":  app + "-prod",
				"app.kubernetes.io/component": "web",
				"app.kubernetes.io/part-of":   fmt.Sprintf("team-%d", rsNum%7),
				"pod-template-hash":           p.rs[len(p.rs)-10:],
			},
			"annotations": map[string]any{
				"prometheus.io/scrape": "true",
				"prometheus.io/port":   "9090",
				"checksum/config":      hexOf("config", rsNum),
			},
			"ownerReferences": []any{map[string]any{
				"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": p.rs,
				"uid":        fmt.Sprintf("%s-%s-%s-%s-%s", hexOf("uid", rsNum)[:8], hexOf("uid", rsNum)[8:12], hexOf("uid", rsNum)[12:16], hexOf("uid", rsNum)[16:20], hexOf("uid", rsNum)[20:32]),
				"controller": true, "blockOwnerDeletion": true,
			}},
		},
		"spec": map[string]any{
			"nodeName":           p.node,
			"serviceAccountName": "default",
			"containers": []any{
				map[string]any{
					"name":  "app",
					"image": fmt.Sprintf("registry.example.com/team-%d/%s:1.%d.0", rsNum%7, app, rsNum%5),
					"ports": []any{map[string]any{"name": "http", "containerPort": 8080, "protocol": "TCP"}, map[string]any{"name": "metrics", "containerPort": 9090, "protocol": "TCP"}},
					"env":   appEnv,
					"resources": map[string]any{
						"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
						"limits":   map[string]any{"cpu": "1", "memory": "256Mi"},
					},
					"volumeMounts":   []any{map[string]any{"name": "config", "mountPath": "/etc/app", "readOnly": true}},
					"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": 8080}, "periodSeconds": 10},
				},
				map[string]any{
					"name":  "proxy",
					"image": "registry.example.com/mesh/proxy:1.24.0",
					"args":  []any{"proxy", "sidecar", "--log-level=warn"},
					"ports": []any{map[string]any{"name": "proxy-admin", "containerPort": 15000, "protocol": "TCP"}},
					"env":   append(env("ISTIO_META_CLUSTER_ID", "bench"), fieldEnv("POD_NAME", "metadata.name")),
					"resources": map[string]any{
						"requests": map[string]any{"cpu": "50m", "memory": "64Mi"},
						"limits":   map[string]any{"memory": "128Mi"},
					},
				},
			},
			"volumes": []any{map[string]any{"name": "config", "configMap": map[string]any{"name": app + "-config"}}},
		},
	}
}

// podStatus is what a kubelet would report for a running Pod.
func podStatus(p podID, created time.Time) map[string]any {
	t := func(d time.Duration) string { return created.Add(d).UTC().Format(time.RFC3339) }
	cond := func(typ string, d time.Duration) map[string]any {
		return map[string]any{"type": typ, "status": "True", "lastProbeTime": nil, "lastTransitionTime": t(d)}
	}
	hostIP := fmt.Sprintf("10.0.%d.%d", (p.i*7)%nodes/250, (p.i*7)%nodes%250+1)
	podIP := fmt.Sprintf("10.%d.%d.%d", 64+p.i/65536, p.i/256%256, p.i%256)
	cs := func(name, image string) map[string]any {
		return map[string]any{
			"name": name, "image": image, "imageID": image + "@sha256:" + hexOf("image", image),
			"containerID": "containerd://" + hexOf("container", p.name, name),
			"ready":       true, "started": true, "restartCount": 0,
			"state": map[string]any{"running": map[string]any{"startedAt": t(3 * time.Second)}},
		}
	}
	rsNum := p.i / podsPerRS
	app := fmt.Sprintf("app-%03d", rsNum)
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": p.name, "namespace": p.ns},
		"status": map[string]any{
			"phase": "Running",
			"conditions": []any{
				cond("PodReadyToStartContainers", 2*time.Second), cond("Initialized", time.Second),
				cond("Ready", 5*time.Second), cond("ContainersReady", 5*time.Second), cond("PodScheduled", 0),
			},
			"hostIP":    hostIP,
			"hostIPs":   []any{map[string]any{"ip": hostIP}},
			"podIP":     podIP,
			"podIPs":    []any{map[string]any{"ip": podIP}},
			"startTime": t(time.Second),
			"containerStatuses": []any{
				cs("app", fmt.Sprintf("registry.example.com/team-%d/%s:1.%d.0", rsNum%7, app, rsNum%5)),
				cs("proxy", "registry.example.com/mesh/proxy:1.24.0"),
			},
		},
	}
}

// ensureNamespaces creates the benchmark namespaces.
func ensureNamespaces(ctx context.Context, cs kubernetes.Interface) error {
	for i := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", i)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
	}
	return nil
}

// loadPods applies Pods from..to-1 with server-side apply: the spec by the
// "bench-controller" manager, then the status through the status
// subresource by "bench-kubelet", so each Pod has two managedFields
// entries, as in a real cluster.
func loadPods(ctx context.Context, cs kubernetes.Interface, from, to int, progress func(done int)) error {
	force := true
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := atomic.Int64{}
	next.Store(int64(from))
	var done atomic.Int64
	var wg sync.WaitGroup
	for range loaders {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= to || ctx.Err() != nil {
					return
				}
				p := podAt(i)
				body, _ := json.Marshal(podSpec(p))
				created, err := cs.CoreV1().Pods(p.ns).Patch(ctx, p.name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "bench-controller", Force: &force})
				if err != nil {
					cancel(fmt.Errorf("applying Pod %s/%s: %w", p.ns, p.name, err))
					return
				}
				body, _ = json.Marshal(podStatus(p, created.CreationTimestamp.Time))
				if _, err := cs.CoreV1().Pods(p.ns).Patch(ctx, p.name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "bench-kubelet", Force: &force}, "status"); err != nil {
					cancel(fmt.Errorf("applying the status of Pod %s/%s: %w", p.ns, p.name, err))
					return
				}
				if d := done.Add(1); progress != nil && d%1000 == 0 {
					progress(from + int(d))
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// podSizes describes one loaded Pod: JSON as served, its managedFields,
// and the protobuf message.
type podSizes struct {
	JSON, ManagedFieldsJSON, Proto, ManagedFieldsEntries int
}

// String is the sentence both generated sections of BENCHMARKS.md open with.
func (p podSizes) String() string {
	return fmt.Sprintf("A loaded Pod is %d B of JSON (of which managedFields: %d B in %d entries) and %d B of protobuf.", p.JSON, p.ManagedFieldsJSON, p.ManagedFieldsEntries, p.Proto)
}

func measurePod(ctx context.Context, cs kubernetes.Interface) (podSizes, error) {
	p := podAt(0)
	raw, err := cs.CoreV1().RESTClient().Get().Namespace(p.ns).Resource("pods").Name(p.name).DoRaw(ctx)
	if err != nil {
		return podSizes{}, fmt.Errorf("getting Pod %s/%s: %w", p.ns, p.name, err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(raw, &pod); err != nil {
		return podSizes{}, err
	}
	mf, _ := json.Marshal(pod.ManagedFields)
	compact, _ := json.Marshal(&pod)
	return podSizes{JSON: len(compact), ManagedFieldsJSON: len(mf), Proto: pod.Size(), ManagedFieldsEntries: len(pod.ManagedFields)}, nil
}
