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
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
)

// benchPods returns n Pods as the API server sends them, in protobuf: the
// harness's Pods (podSpec, podStatus) with a UID, a resourceVersion and
// two managedFields entries of the size the loaded Pods have.
func benchPods(tb testing.TB, n int) [][]byte {
	tb.Helper()
	fields := func(manager, subresource string) metav1.ManagedFieldsEntry {
		raw := make([]byte, 0, 1500)
		for len(raw) < 1400 {
			raw = append(raw, `{"f:metadata":{"f:labels":{".":{},"f:app.kubernetes.io/name":{}}}}`...)
		}
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(raw)), Subresource: subresource}
	}
	out := make([][]byte, n)
	for i := range n {
		p := podAt(i)
		created := time.Date(2026, 12, 1, 0, 0, i/100, 0, time.UTC)
		var pod, status corev1.Pod
		spec, _ := json.Marshal(podSpec(p))
		st, _ := json.Marshal(podStatus(p, created))
		if err := json.Unmarshal(spec, &pod); err != nil {
			tb.Fatal(err)
		}
		if err := json.Unmarshal(st, &status); err != nil {
			tb.Fatal(err)
		}
		pod.Status = status.Status
		pod.UID = types.UID(hexOf("uid", i)[:36])
		pod.ResourceVersion = "1" + hexOf("rv", i)[:6]
		pod.CreationTimestamp = metav1.NewTime(created)
		pod.ManagedFields = []metav1.ManagedFieldsEntry{fields("bench-controller", ""), fields("bench-kubelet", "status")}
		b, err := pod.Marshal()
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// BenchmarkLeanTransform is the CPU cost per Pod of decoding a Pod and
// making it lean, with and without interning: the difference between the
// two is what interning adds to each Pod of an initial sync, whose whole
// CPU cost per Pod the scale run reports (CPU time to sync / N). Compare
// with benchstat:
//
//	go test -run '^$' -bench LeanTransform -count 10 . | tee /tmp/lean.txt
//	benchstat -col /transform /tmp/lean.txt
func BenchmarkLeanTransform(b *testing.B) {
	pods := benchPods(b, 3000)
	for _, tc := range []struct {
		name      string
		transform cache.TransformFunc
	}{
		{"transform=none", func(o any) (any, error) { return o, nil }},
		{"transform=lean-nointern", informers.TransformLean(informers.LeanInterning(false))},
		{"transform=lean", informers.TransformLean()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p := &corev1.Pod{}
				if err := p.Unmarshal(pods[i%len(pods)]); err != nil {
					b.Fatal(err)
				}
				if _, err := tc.transform(p); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
