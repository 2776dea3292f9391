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

package projection

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

var podType = reflect.TypeFor[*corev1.Pod]()

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		paths []string
		want  string
	}{
		{[]string{"spec.nodeName", "status", "metadata.annotations", "spec.volumes.configMap.name"}, ""},
		{[]string{"spec.containers.resources.limits.cpu"}, "spec.containers.resources.limits has no fields to select"},
		{[]string{"metadata.creationTimestamp.seconds"}, "metadata.creationTimestamp has no fields to select"},
		{[]string{"spec.nodeName.x"}, "spec.nodeName has no fields to select"},
		{[]string{"spec.NodeName"}, `v1.PodSpec has no field "NodeName"`},
		{[]string{"spec."}, "not a dot-separated field path"},
		{[]string{""}, "not a dot-separated field path"},
		{[]string{"spec.containers[0]"}, "without spaces, indexes or wildcards"},
	} {
		err := Check(podType, tc.paths)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Check(%q) = %v, want %q", tc.paths, err, tc.want)
		}
	}
	if _, err := New([]string{"spec"}, reflect.TypeFor[*metav1.PartialObjectMetadata]()); err == nil {
		t.Error("a metadata informer's projection was accepted")
	}
	if p, err := New(nil, podType); p != nil || err != nil {
		t.Errorf("New(nil) = %v, %v, want no projection", p, err)
	}
}

// The typed projection and the unstructured one keep the same fields.
func TestTypedMatchesUnstructured(t *testing.T) {
	paths := []string{"spec.nodeName", "spec.volumes.configMap", "status.conditions.type"}
	typed, err := New(paths, podType)
	if err != nil {
		t.Fatal(err)
	}
	untyped, err := New(paths, reflect.TypeFor[*unstructured.Unstructured]())
	if err != nil {
		t.Fatal(err)
	}
	pod := benchPod()
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	typed.Object(pod)
	untyped.Object(u)
	var back corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, pod) {
		t.Errorf("unstructured projection:\n%+v\ntyped projection:\n%+v", &back, pod)
	}
	if pod.Spec.Volumes[0].ConfigMap == nil || pod.Spec.Volumes[0].Name != "" || pod.Status.Conditions[0].Status != "" || pod.Status.Conditions[0].Type == "" {
		t.Errorf("projected %+v", pod)
	}
}

func benchPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-1", Namespace: "shop", UID: "u", ResourceVersion: "9", Labels: map[string]string{"app": "web"},
			Annotations:   map[string]string{"a": strings.Repeat("x", 200)},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-1",
			Volumes:  []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}}},
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example/app:1",
				Env:       []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			}, {Name: "proxy", Image: "registry.example/proxy:1", Args: []string{"a", "b"}}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Unix(1700000000, 0))},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "registry.example/app:1", Ready: true}},
		},
	}
}

// BenchmarkProjectDecoded measures what a JSON response costs with and
// without the projection that follows its decode (the path of a JSON or
// CBOR response): "decode" is client-go's JSON decode of a Pod,
// "decode+project" the same with the Pod then projected in place,
// "project" the projection alone of an already projected Pod (a resync's,
// or one cut from protobuf), which writes nothing.
func BenchmarkProjectDecoded(b *testing.B) {
	data, err := json.Marshal(benchPod())
	if err != nil {
		b.Fatal(err)
	}
	p, err := New([]string{"spec.nodeName", "status.phase", "status.conditions"}, podType)
	if err != nil {
		b.Fatal(err)
	}
	codec := scheme.Codecs.UniversalDeserializer()
	decode := func(b *testing.B) runtime.Object {
		obj, _, err := codec.Decode(data, nil, &corev1.Pod{})
		if err != nil {
			b.Fatal(err)
		}
		return obj
	}
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decode(b)
		}
	})
	b.Run("decode+project", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.Object(decode(b))
		}
	})
	b.Run("project", func(b *testing.B) {
		pod := decode(b)
		p.Object(pod)
		b.ReportAllocs()
		for b.Loop() {
			p.Object(pod)
		}
	})
}

func TestProtobufNumber(t *testing.T) {
	for tag, want := range map[string]int{
		`bytes,1,opt,name=metadata`: 1,
		`bytes,2,rep,name=items`:    2,
		`varint,14,opt,name=x`:      14,
		`bytes`:                     0,
		``:                          0,
		`bytes,x,opt`:               0,
	} {
		if got := ProtobufNumber(tag); got != want {
			t.Errorf("ProtobufNumber(%q) = %d, want %d", tag, got, want)
		}
	}
}

// leafT is what the shapes below hold: a path keeps keep and drops drop.
type leafT struct {
	Keep string `json:"keep,omitempty"`
	Drop string `json:"drop,omitempty"`
}

type innerT struct {
	Deep [][]*leafT `json:"deep,omitempty"`
	Gone string     `json:"gone,omitempty"`
}

// shapesT has a field of every shape structOf goes through to a struct,
// and two it does not (a map, and a type with its own JSON encoding).
type shapesT struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Plain       leafT            `json:"plain"`
	Ptr         *leafT           `json:"ptr,omitempty"`
	PtrPtr      **leafT          `json:"ptrPtr,omitempty"`
	Slice       []leafT          `json:"slice,omitempty"`
	SlicePtr    []*leafT         `json:"slicePtr,omitempty"`
	PtrSlice    *[]leafT         `json:"ptrSlice,omitempty"`
	PtrSlicePtr *[]*leafT        `json:"ptrSlicePtr,omitempty"`
	SliceSlice  [][]leafT        `json:"sliceSlice,omitempty"`
	Array       [2]leafT         `json:"array"`
	ArrayPtr    [2]*leafT        `json:"arrayPtr"`
	SliceArray  [][2][]*leafT    `json:"sliceArray,omitempty"`
	Nested      []innerT         `json:"nested,omitempty"`
	Map         map[string]leafT `json:"map,omitempty"`
	Times       [][]metav1.Time  `json:"times,omitempty"`
}

func fullShapes() *shapesT {
	l := func() leafT { return leafT{Keep: "k", Drop: "d"} }
	p := func() *leafT { v := l(); return &v }
	pp := p()
	ps := []leafT{l(), l()}
	psp := []*leafT{p(), nil, p()}
	return &shapesT{
		ObjectMeta:  metav1.ObjectMeta{Name: "s", Namespace: "ns", Annotations: map[string]string{"a": "b"}},
		Plain:       l(),
		Ptr:         p(),
		PtrPtr:      &pp,
		Slice:       []leafT{l(), l(), l()},
		SlicePtr:    []*leafT{p(), nil, p()},
		PtrSlice:    &ps,
		PtrSlicePtr: &psp,
		SliceSlice:  [][]leafT{{l(), l()}, nil, {l()}},
		Array:       [2]leafT{l(), l()},
		ArrayPtr:    [2]*leafT{p(), nil},
		SliceArray:  [][2][]*leafT{{{p(), p()}, {p()}}, {nil, {nil, p()}}},
		Nested:      []innerT{{Deep: [][]*leafT{{p()}, {p(), p()}}, Gone: "g"}, {Gone: "g"}},
		Map:         map[string]leafT{"x": l()},
		Times:       [][]metav1.Time{{metav1.NewTime(time.Unix(1700000000, 0))}},
	}
}

// leaves returns the leafT values in v that are not zero.
func leaves(v reflect.Value) []leafT {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return leaves(v.Elem())
	case reflect.Slice, reflect.Array:
		var out []leafT
		for j := range v.Len() {
			out = append(out, leaves(v.Index(j))...)
		}
		return out
	case reflect.Map:
		var out []leafT
		for it := v.MapRange(); it.Next(); {
			out = append(out, leaves(it.Value())...)
		}
		return out
	case reflect.Struct:
		if l, ok := v.Interface().(leafT); ok {
			if l == (leafT{}) {
				return nil
			}
			return []leafT{l}
		}
		var out []leafT
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out = append(out, leaves(v.Field(i))...)
			}
		}
		return out
	}
	return nil
}

// TestShapes: a path below a field of any shape structOf accepts keeps
// the kept field in every element, drops the others in every element and
// everything else in the object, and matches the unstructured
// projection; a path below a map or a value with a JSON encoding of its
// own is refused, with an error that names the resource, the path and
// the field's Go type, not a panic.
func TestShapes(t *testing.T) {
	typ := reflect.TypeFor[*shapesT]()
	for _, tc := range []struct {
		path string
		n    int // leafT values left, each with keep alone
	}{
		{"plain.keep", 1},
		{"ptr.keep", 1},
		{"ptrPtr.keep", 1},
		{"slice.keep", 3},
		{"slicePtr.keep", 2},
		{"ptrSlice.keep", 2},
		{"ptrSlicePtr.keep", 2},
		{"sliceSlice.keep", 3},
		{"array.keep", 2},
		{"arrayPtr.keep", 1},
		{"sliceArray.keep", 4},
		{"nested.deep.keep", 3},
	} {
		t.Run(tc.path, func(t *testing.T) {
			p, err := New([]string{tc.path}, typ)
			if err != nil {
				t.Fatal(err)
			}
			obj := fullShapes()
			p.Object(obj)
			got := leaves(reflect.ValueOf(obj))
			if len(got) != tc.n {
				t.Errorf("%d leaves left, want %d: %+v", len(got), tc.n, got)
			}
			for _, l := range got {
				if l != (leafT{Keep: "k"}) {
					t.Errorf("left %+v, want keep alone", l)
				}
			}
			if obj.Name != "s" || obj.Annotations != nil || obj.Map != nil || obj.Times != nil {
				t.Errorf("metadata or other fields: %+v", obj)
			}
			if len(obj.Nested) > 0 && obj.Nested[0].Gone != "" {
				t.Errorf("nested.gone kept: %+v", obj.Nested)
			}
			// Projecting again writes nothing and changes nothing.
			again := *obj
			p.Object(&again)
			if !reflect.DeepEqual(&again, obj) {
				t.Errorf("a second projection changed %+v into %+v", obj, &again)
			}

			untyped, err := New([]string{tc.path}, reflect.TypeFor[*unstructured.Unstructured]())
			if err != nil {
				t.Fatal(err)
			}
			// Through JSON: the unstructured converter has no arrays.
			u := &unstructured.Unstructured{}
			if b, err := json.Marshal(fullShapes()); err != nil {
				t.Fatal(err)
			} else if err := json.Unmarshal(b, &u.Object); err != nil {
				t.Fatal(err)
			}
			untyped.Object(u)
			var back shapesT
			if b, err := json.Marshal(u.Object); err != nil {
				t.Fatal(err)
			} else if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(&back, obj) {
				t.Errorf("unstructured projection:\n%+v\ntyped projection:\n%+v", &back, obj)
			}
		})
	}

	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "shapes"}
	for _, tc := range []struct{ path, typ string }{
		{"map.keep", "map[string]projection.leafT"},
		{"times.seconds", "[][]v1.Time"},
		{"nested.deep.keep.x", "string"},
	} {
		_, err := New([]string{tc.path}, typ)
		err = Refusal(gvr, err)
		if err == nil {
			t.Errorf("%s: accepted", tc.path)
			continue
		}
		for _, want := range []string{gvr.String(), strconv.Quote(tc.path), "(" + tc.typ + ")"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %s named", tc.path, err, want)
			}
		}
	}
}
