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

package informers_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/informertest"
)

var (
	podsGVR    = corev1.SchemeGroupVersion.WithResource("pods")
	widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	podKeep    = []string{"spec.nodeName", "status.phase", "status.conditions"}
)

// keepPod is a Pod with fields KeepFields keeps and others it drops.
func keepPod(name, rv string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: "uid-" + "name", ResourceVersion: rv, Generation: 3,
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "dropped"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs"}},
			Finalizers:      []string{"example.com/guard"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply}},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "img:1"}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
}

// projected is keepPod as KeepFields(podKeep) caches it.
func projected(p *corev1.Pod) *corev1.Pod {
	m := p.ObjectMeta
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation,
			Labels: m.Labels, OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers,
		},
		Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName},
		Status: corev1.PodStatus{Phase: p.Status.Phase, Conditions: p.Status.Conditions},
	}
}

func TestKeepFieldsErrors(t *testing.T) {
	client := fake.NewClientset()
	for _, tc := range []struct {
		name     string
		resource schema.GroupVersionResource
		keep     []string
		want     string
	}{
		{"no such field", podsGVR, []string{"spec.nodeName", "spec.nodename"}, `"spec.nodename": v1.PodSpec has no field "nodename"`},
		{"into a map", podsGVR, []string{"metadata.annotations.note"}, `"metadata.annotations.note": metadata.annotations has no fields to select`},
		{"into a quantity", schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}, []string{"spec.hard.cpu"}, "has no fields to select"},
		{"empty segment", podsGVR, []string{"spec..nodeName"}, "is not a dot-separated field path"},
		{"custom resource, bad syntax", widgetsGVR, []string{"spec.items[0]"}, "without spaces, indexes or wildcards"},
	} {
		_, err := informers.New(client, 0, informers.WithResourceOptions(tc.resource, informers.ResourceOptions{KeepFields: tc.keep}))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.resource.String()) {
			t.Errorf("%s: New: %v, want an error naming %v and with %q", tc.name, err, tc.resource, tc.want)
		}
	}
	if _, err := informers.New(client, 0, informers.WithResourceOptions(widgetsGVR, informers.ResourceOptions{KeepFields: []string{"spec.size"}})); err != nil {
		t.Errorf("a custom resource's paths are checked for syntax only: %v", err)
	}

	// Under the compatible constructors, the Pods informer does not run.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithResourceOptions(podsGVR, informers.ResourceOptions{KeepFields: []string{"spec.nodename"}}))
	t.Cleanup(f.Shutdown)
	f.Core().V1().Pods().Informer()
	f.Start(ctx.Done())
	if err := f.(informers.Factory).Ready(); err == nil || !strings.Contains(err.Error(), "spec.nodename") {
		t.Errorf("Ready: %v, want the bad path named", err)
	}
}

// A metadata informer refuses KeepFields: it caches metadata alone.
func TestKeepFieldsMetadataRefused(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	scheme := metadatafake.NewTestScheme()
	_ = metav1.AddMetaToScheme(scheme)
	f, err := informers.New(fake.NewClientset(), 0, informers.WithMetadataClient(metadatafake.NewSimpleMetadataClient(scheme)),
		informers.WithResourceOptions(podsGVR, informers.ResourceOptions{KeepFields: podKeep}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	if _, err := f.ForMetadata(podsGVR); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	if err := f.Ready(); err == nil || !strings.Contains(err.Error(), "a metadata informer caches metadata alone") {
		t.Errorf("Ready: %v, want the metadata informer's refusal", err)
	}
}

// recorder records what a handler is given, projected objects included.
type recorder struct {
	mu     sync.Mutex
	events []string
	objs   []*corev1.Pod
}

func (r *recorder) add(kind string, objs ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []string
	for _, o := range objs {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		p := o.(*corev1.Pod)
		s = append(s, p.Name+"@"+p.ResourceVersion)
		r.objs = append(r.objs, p)
	}
	r.events = append(r.events, kind+" "+strings.Join(s, " -> "))
}

func (r *recorder) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.add("add", o) },
		UpdateFunc: func(o, n any) { r.add("update", o, n) },
		DeleteFunc: func(o any) { r.add("delete", o) },
	}
}

func (r *recorder) snapshot() ([]string, []*corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...), append([]*corev1.Pod(nil), r.objs...)
}

// Adds, updates (of kept fields, of dropped fields only) and deletes are
// delivered as they are without KeepFields, with projected objects, old
// and new; the lister holds the projected objects.
func TestKeepFieldsEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(keepPod("a", "1"), keepPod("b", "1"))
	var full, kept recorder
	start := func(r *recorder, opts ...informers.SharedInformerOption) (informers.SharedInformerFactory, cache.SharedIndexInformer) {
		f, err := informers.New(client, 0, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Shutdown)
		inf := f.Core().V1().Pods().Informer()
		if _, err := inf.AddEventHandler(r.handler()); err != nil {
			t.Fatal(err)
		}
		f.Start(ctx.Done())
		return f, inf
	}
	ff, _ := start(&full)
	kf, kinf := start(&kept, informers.WithResourceOptions(podsGVR, informers.ResourceOptions{KeepFields: podKeep}))
	settle := func() {
		t.Helper()
		for _, f := range []informers.SharedInformerFactory{ff, kf} {
			if err := informertest.Settle(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
	}
	settle()
	pods := client.CoreV1().Pods("ns")
	kept2 := keepPod("a", "2")
	kept2.Spec.NodeName = "node-2"
	dropped3 := keepPod("a", "3")
	dropped3.Spec.NodeName = "node-2"
	dropped3.Spec.Containers[0].Image = "img:2" // a dropped field only
	for _, p := range []*corev1.Pod{kept2, dropped3} {
		if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		settle()
	}
	if err := pods.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	settle()

	fullEvents, _ := full.snapshot()
	keptEvents, objs := kept.snapshot()
	if !reflect.DeepEqual(keptEvents, fullEvents) {
		t.Errorf("events with KeepFields:\n%q\nwithout:\n%q", keptEvents, fullEvents)
	}
	for _, p := range objs {
		if len(p.Spec.Containers) > 0 || p.Annotations != nil || p.ManagedFields != nil || p.Status.PodIP != "" {
			t.Errorf("a handler was given %s@%s with dropped fields: %+v", p.Name, p.ResourceVersion, p)
		}
	}
	got, ok, err := kinf.GetStore().GetByKey("ns/a")
	if err != nil || !ok {
		t.Fatalf("ns/a: %v %v", ok, err)
	}
	want := projected(dropped3)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cached ns/a:\n%+v\nwant\n%+v", got, want)
	}
	t.Logf("%d events, the same with and without KeepFields: %q", len(keptEvents), keptEvents)
}

// A resync gives handlers every projected object again, as an update
// with the same resourceVersion.
func TestKeepFieldsResync(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(keepPod("a", "1"))
	f, err := informers.New(client, 10*time.Millisecond, informers.WithResourceOptions(podsGVR, informers.ResourceOptions{KeepFields: podKeep}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	resynced := make(chan [2]any, 1)
	_, err = f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
		select {
		case resynced <- [2]any{o, n}:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	select {
	case got := <-resynced:
		want := projected(keepPod("a", "1"))
		if !reflect.DeepEqual(got[0], want) || !reflect.DeepEqual(got[1], want) {
			t.Errorf("resync: old %+v, new %+v, want both %+v", got[0], got[1], want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no resync within 30s")
	}
}

// The user's transform is given the whole object; its result is projected.
func TestKeepFieldsAfterTransform(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(keepPod("a", "1"))
	image := func(o any) (any, error) {
		p := o.(*corev1.Pod)
		if len(p.Spec.Containers) == 0 {
			return nil, fmt.Errorf("the transform was given %s without its containers", p.Name)
		}
		p.Annotations = map[string]string{"image": p.Spec.Containers[0].Image}
		return p, nil
	}
	f, err := informers.New(client, 0, informers.WithTransform(image), informers.WithLeanMemory(),
		informers.WithResourceOptions(podsGVR, informers.ResourceOptions{KeepFields: append([]string{"metadata.annotations"}, podKeep...)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	lister := f.Core().V1().Pods().Lister()
	f.Start(ctx.Done())
	if err := informertest.Settle(ctx, f); err != nil {
		t.Fatal(err)
	}
	p, err := lister.Pods("ns").Get("a")
	if err != nil {
		t.Fatal(err)
	}
	want := projected(keepPod("a", "1"))
	want.Annotations = map[string]string{"image": "img:1"}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("cached:\n%+v\nwant\n%+v", p, want)
	}
}

// A dynamic informer projects the unstructured map.
func TestKeepFieldsDynamic(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "blue", "namespace": "shop", "resourceVersion": "7", "annotations": map[string]any{"a": "b"}},
		"spec":     map[string]any{"size": int64(3), "color": "blue", "parts": []any{map[string]any{"name": "x", "weight": int64(1)}}},
		"status":   map[string]any{"ready": true},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgetsGVR: "WidgetList"}, w)
	f, err := informers.New(fake.NewClientset(), 0, informers.WithDynamicClient(dyn),
		informers.WithResourceOptions(widgetsGVR, informers.ResourceOptions{KeepFields: []string{"spec.size", "spec.parts.name"}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	gi, err := f.ForResource(widgetsGVR)
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	if err := informertest.Settle(ctx, f); err != nil {
		t.Fatal(err)
	}
	got, err := gi.Lister().ByNamespace("shop").Get("blue")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "blue", "namespace": "shop", "resourceVersion": "7"},
		"spec":     map[string]any{"size": int64(3), "parts": []any{map[string]any{"name": "x"}}},
	}
	if obj := got.(*unstructured.Unstructured).Object; !reflect.DeepEqual(obj, want) {
		t.Errorf("cached %v, want %v", obj, want)
	}
}
