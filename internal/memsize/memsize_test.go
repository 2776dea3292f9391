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

package memsize

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"unique"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

func TestAlloc(t *testing.T) {
	for _, c := range []struct {
		size   uintptr
		noscan bool
		want   int64
	}{
		{0, false, 0},
		{1, false, 8},
		{17, false, 24},
		{16, true, 16},
		{8, true, 9},
		{512, false, 512},
		{513, false, 576}, // malloc header
		{513, true, 576},
		{1024, false, 1152}, // 1024 + 8 header
		{32768, true, 32768},
		{40000, true, 40960},
	} {
		if got := Alloc(c.size, c.noscan); got != c.want {
			t.Errorf("Alloc(%d, %v) = %d, want %d", c.size, c.noscan, got, c.want)
		}
	}
}

// within checks that the estimate of what n objects retain is within
// bound of the live heap they hold.
func within(t *testing.T, name string, bound float64, build func(i int) any, n int) {
	t.Helper()
	objs := make([]any, n)
	before := liveHeap()
	for i := range objs {
		objs[i] = build(i)
	}
	after := liveHeap()
	var est int64
	for _, o := range objs {
		est += Of(o)
	}
	measured := after - before - Alloc(uintptr(n)*16, false) // the slice of interfaces itself
	runtime.KeepAlive(objs)
	ratio := float64(est) / float64(measured)
	t.Logf("%s: estimate %d B/object, measured %d B/object, ratio %.3f", name, est/int64(n), measured/int64(n), ratio)
	if math.Abs(ratio-1) > bound {
		t.Errorf("%s: estimate/measured = %.3f, want within ±%.0f%%", name, ratio, bound*100)
	}
}

func TestOfMatchesHeap(t *testing.T) {
	if raceDetector {
		t.Skip("builds with the race detector allocate more per object; go test without -race checks the estimate")
	}
	const n = 20000
	pod := testPod()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	within(t, "typed Pod from JSON", 0.05, func(int) any {
		p := &corev1.Pod{}
		if err := json.Unmarshal(raw, p); err != nil {
			t.Fatal(err)
		}
		return p
	}, n)
	within(t, "unstructured Pod from JSON", 0.05, func(int) any {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		return u
	}, n)
	within(t, "protobuf Pod", 0.05, func(int) any {
		b, err := pod.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		p := &corev1.Pod{}
		if err := p.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		return p
	}, n)
	within(t, "maps and small strings", 0.08, func(i int) any {
		m := make(map[string]string)
		for k := range i%40 + 1 {
			m[fmt.Sprint("k", k)] = strings.Repeat("v", k%20)
		}
		return m
	}, n)
}

func TestShare(t *testing.T) {
	s := unique.Make(strings.Repeat("x", 100)).Value()
	h := Share(s)
	for range 3 {
		Share(s)
	}
	type obj struct{ A, B string }
	o := &obj{A: s, B: strings.Repeat("y", 100)}
	want := Alloc(unsafeSizeof(obj{}), false) + Alloc(100, true) + (Alloc(100, true)+registryOverhead)/4
	if got := Of(o); got != want {
		t.Errorf("Of = %d, want %d (the shared string as a quarter)", got, want)
	}
	if h.refs.Load() != 4 {
		t.Errorf("refs = %d, want 4", h.refs.Load())
	}
	runtime.KeepAlive(s)
}

func unsafeSizeof(v any) uintptr { return reflect.TypeOf(v).Size() }

func TestMeter(t *testing.T) {
	m := NewMeter(1)
	if m.PerObject() != 0 || m.Bytes(10) != 0 {
		t.Fatal("a meter without observations estimates something")
	}
	p := testPod()
	for range 1000 {
		m.Observe(p.DeepCopy())
	}
	want := Of(p.DeepCopy()) + itemSlot + setSlot + Alloc(uintptr(len(p.Namespace)+1+len(p.Name)), true)
	if got := m.PerObject(); got != want {
		t.Errorf("PerObject = %d, want %d", got, want)
	}
	if m.Bytes(3) != 3*want {
		t.Errorf("Bytes(3) = %d, want %d", m.Bytes(3), 3*want)
	}
	if m.Observed() != 1000 {
		t.Errorf("Observed = %d", m.Observed())
	}
	var nilMeter *Meter
	nilMeter.Observe(p)
	if nilMeter.Bytes(5) != 0 {
		t.Error("a nil meter estimates something")
	}
}

func testPod() *corev1.Pod {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	now := metav1.Now()
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-7d9c8b6f5d-x2x7k", Namespace: "shop", UID: "0c5e1a34-7d2b-4b8e-9c1f-2a3b4c5d6e7f", ResourceVersion: "123456",
			CreationTimestamp: now,
			Labels:            map[string]string{"app": "web", "pod-template-hash": "7d9c8b6f5d", "tier": "frontend"},
			Annotations:       map[string]string{"prometheus.io/scrape": "true"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now,
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{},"f:phase":{},"f:podIP":{}}}`)}},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-17",
			Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27", Resources: corev1.ResourceRequirements{Requests: req, Limits: req},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env:   []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "some longer value here"}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.2.3", PodIPs: []corev1.PodIP{{IP: "10.1.2.3"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Image: "nginx:1.27", ImageID: "docker.io/library/nginx@sha256:0123456789abcdef",
				ContainerID: "containerd://0123456789abcdef0123456789abcdef", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}},
	}
}
