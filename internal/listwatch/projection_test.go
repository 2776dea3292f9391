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

package listwatch

import (
	"bytes"
	"io"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubeinformers/informers/internal/projection"
)

// jsonPaths lists the JSON field paths of the struct type t down to depth
// levels, as a user would write them: through pointers and slices, with
// embedded structs without a JSON name inlined; not into maps nor into
// types that encode themselves (Time, Quantity, ...).
func jsonPaths(t reflect.Type, prefix string, depth int) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || depth == 0 || selfEncoding(t) {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case tag == "-" || !f.IsExported() && !f.Anonymous:
			continue
		case name == "" && f.Anonymous:
			out = append(out, jsonPaths(f.Type, prefix, depth)...)
			continue
		case name == "":
			name = f.Name
		}
		out = append(out, prefix+name)
		out = append(out, jsonPaths(f.Type, prefix+name+".", depth-1)...)
	}
	return out
}

func selfEncoding(t reflect.Type) bool {
	_, ok := reflect.New(t).Interface().(interface{ MarshalJSON() ([]byte, error) })
	return ok
}

// randomPaths picks some of the JSON paths of t, at least one.
func randomPaths(rng *rand.Rand, t reflect.Type) []string {
	all := jsonPaths(t, "", 4)
	var out []string
	for _, p := range all {
		if rng.Intn(6) == 0 && !strings.HasPrefix(p, "metadata") || rng.Intn(20) == 0 {
			out = append(out, p)
		}
	}
	if len(out) == 0 && len(all) > 0 {
		out = append(out, all[rng.Intn(len(all))])
	}
	return out
}

// projectedTypes are the Go types of the scheme's objects with metadata:
// every typed resource client-go knows.
func projectedTypes() []reflect.Type {
	seen := map[reflect.Type]bool{}
	for _, t := range scheme.Scheme.AllKnownTypes() {
		pt := reflect.PointerTo(t)
		if !seen[pt] && layoutOf(pt) == layoutObject && strings.HasPrefix(t.PkgPath(), "k8s.io/api/") {
			seen[pt] = true
		}
	}
	out := make([]reflect.Type, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// checkProjection decodes obj's protobuf with the projection on paths
// and checks that it equals the reference: obj's full decode, projected
// by Go field.
func checkProjection(t *testing.T, reference runtime.Decoder, obj runtime.Object, paths []string) {
	t.Helper()
	p, err := projection.New(paths, itemType(obj))
	if err != nil {
		t.Fatalf("%T %q: %v", obj, paths, err)
	}
	data := encodeProtobuf(t, obj)
	want, err := runtime.Decode(reference, bytes.Clone(data))
	if err != nil {
		t.Fatalf("%T: client-go: %v", obj, err)
	}
	projectAll(p, want)
	got, err := NewObjectDecoder(scheme.Scheme, Strip{Project: p}).Decode(bytes.Clone(data))
	if err != nil {
		t.Fatalf("%T %q: %v", obj, paths, err)
	}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Fatalf("%T kept %q:\ngot  %+v\nwant %+v", obj, paths, got, want)
	}
	// Projecting an object again changes nothing.
	again := got.DeepCopyObject()
	projectAll(p, again)
	if !reflect.DeepEqual(again, got) {
		t.Fatalf("%T kept %q: projecting twice changed the object", obj, paths)
	}
}

// For every typed resource of client-go's scheme, objects filled at
// random and decoded from protobuf with their dropped fields cut from the
// bytes equal the reference projection of the fully decoded object; for
// Pods, Services, Deployments, ConfigMaps and Nodes with more draws, and
// as the items of a list.
func TestProjectionEqualsReference(t *testing.T) {
	const seed = 34
	rng := rand.New(rand.NewSource(seed))
	filler := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), scheme.Codecs).NilChance(0.2).NumElements(0, 2).MaxDepth(8)
	reference := clientGoObjects(t)
	draws := func(t reflect.Type) int {
		switch t {
		case reflect.TypeFor[*corev1.Pod](), reflect.TypeFor[*corev1.Service](), reflect.TypeFor[*appsv1.Deployment](),
			reflect.TypeFor[*corev1.ConfigMap](), reflect.TypeFor[*corev1.Node]():
			return 60
		}
		return 6
	}
	types := projectedTypes()
	if len(types) < 60 {
		t.Fatalf("found %d typed resources in client-go's scheme, want them all", len(types))
	}
	for _, typ := range types {
		for range draws(typ) {
			obj := reflect.New(typ.Elem()).Interface().(runtime.Object)
			filler.Fill(obj)
			checkProjection(t, reference, obj, randomPaths(rng, typ))
		}
	}
	for range 20 {
		list := &corev1.PodList{}
		filler.Fill(list)
		checkProjection(t, reference, list, randomPaths(rng, reflect.TypeFor[*corev1.Pod]()))
	}
	t.Logf("%d typed resources, each projected on random paths and compared", len(types))
}

// itemType is the Go type of obj, or of its items for a list.
func itemType(obj runtime.Object) reflect.Type {
	if list, ok := obj.(*corev1.PodList); ok {
		return reflect.PointerTo(reflect.TypeOf(list.Items).Elem())
	}
	return reflect.TypeOf(obj)
}

// projectAll projects obj, or each item of a list.
func projectAll(p *projection.Projection, obj runtime.Object) {
	if list, ok := obj.(*corev1.PodList); ok {
		for i := range list.Items {
			p.Object(&list.Items[i])
		}
		return
	}
	p.Object(obj)
}

// A watch stream decoded with a projection gives every event, projected,
// except the bookmark that ends a watch-list stream's initial events,
// whose annotation the reflector waits for: a projection that drops
// metadata.annotations must not cut it.
func TestWatchDecoderProjects(t *testing.T) {
	p, err := projection.New([]string{"spec.nodeName"}, reflect.TypeFor[*corev1.Pod]())
	if err != nil {
		t.Fatal(err)
	}
	events, err := decodeAll(NewWatchDecoder(io.NopCloser(bytes.NewReader(pbWatchStream(t, pbEvents()...))), NewObjectDecoder(scheme.Scheme, Strip{ManagedFields: true, Project: p})))
	if err != io.EOF { //nolint:errorlint // the decoder's end of stream
		t.Fatalf("decoding: %v", err)
	}
	if len(events) != len(pbEvents()) {
		t.Fatalf("%d events, want %d", len(events), len(pbEvents()))
	}
	for i, e := range events {
		switch e.Type {
		case watch.Bookmark:
			if m, _ := e.Object.(*corev1.Pod); m == nil || m.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
				t.Errorf("event %d: the bookmark lost its annotation: %+v", i, e.Object)
			}
		case watch.Added, watch.Modified, watch.Deleted:
			pod := e.Object.(*corev1.Pod)
			if pod.Spec.NodeName != "node-1" || pod.Annotations != nil || pod.Spec.Containers != nil || pod.ResourceVersion != "42" {
				t.Errorf("event %d %s: %+v, want it projected on spec.nodeName", i, e.Type, pod)
			}
		}
	}
}
