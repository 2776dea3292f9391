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

package conformance

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

func TestListModeBadInput(t *testing.T) {
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	for _, tc := range []struct {
		name string
		opts []informers.SharedInformerOption
		want []string
	}{
		{"unknown factory mode", []informers.SharedInformerOption{informers.WithListMode("Eager")},
			[]string{`WithListMode("Eager")`, `unknown list mode "Eager"`}},
		{"unknown resource mode", []informers.SharedInformerOption{informers.WithResourceOptions(pods, informers.ResourceOptions{ListMode: "list"})},
			[]string{"WithResourceOptions(/v1, Resource=pods)", `ListMode: unknown list mode "list"`}},
		{"two modes", []informers.SharedInformerOption{informers.WithListMode(informers.ListModeList), informers.WithListMode(informers.ListModeStream)},
			[]string{`WithListMode("List") and WithListMode("Stream") both given`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := informers.New(fake.NewClientset(), 0, tc.opts...)
			if err == nil {
				t.Fatal("New accepted the options")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	// The same mode twice is no conflict.
	if _, err := informers.New(fake.NewClientset(), 0, informers.WithListMode(informers.ListModeList), informers.WithListMode(informers.ListModeList)); err != nil {
		t.Errorf("the same mode twice: %v", err)
	}
}

// transformRuns is a transform that is not idempotent: it counts its runs
// in an annotation.
func transformRuns(obj any) (any, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	a := maps.Clone(m.GetAnnotations())
	if a == nil {
		a = map[string]string{}
	}
	a["runs"] += "x"
	m.SetAnnotations(a)
	return obj, nil
}

func listModePod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name), ResourceVersion: "1", Labels: map[string]string{"app": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}},
	}
}

// TestListModes checks, with fake clients (which have no watch-list
// semantics, so every informer lists), in each mode and over two
// namespaces, what each list request asks for, that every object is
// transformed exactly once (the user's transform, then the lean one,
// page by page), and what Notices says.
func TestListModes(t *testing.T) {
	podsGVR := corev1.SchemeGroupVersion.WithResource("pods")
	for _, tc := range []struct {
		mode          informers.ListMode
		resourceLevel bool
		wantRV        string
		wantNotice    string
	}{
		// A lean cache that does not stream (a fake client cannot) lists
		// in pages with a consistent read, and says so once.
		{informers.ListModeAuto, false, "", "a lean, projected or metadata-only cache lists in pages of 500 with a consistent read"},
		{informers.ListModeList, false, "0", ""},
		{informers.ListModeConsistentList, false, "", ""},
		{informers.ListModeConsistentList, true, "", ""},
		{informers.ListModeStream, false, "0", "list mode Stream: no watch-list stream"},
		{informers.ListModeStream, true, "0", "list mode Stream: no watch-list stream"},
	} {
		name := string(tc.mode)
		if name == "" {
			name = "Auto"
		}
		if tc.resourceLevel {
			name += " per resource"
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := fake.NewClientset(listModePod("a", "p1"), listModePod("a", "p2"), listModePod("b", "p3"), listModePod("c", "p4"))
			scheme := runtime.NewScheme()
			if err := metav1.AddMetaToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			meta := metadatafake.NewSimpleMetadataClient(scheme, podMetadata("a", "p1"), podMetadata("b", "p3"))
			ro := informers.ResourceOptions{Namespaces: []string{"a", "b"}, LabelSelector: "app=x", Transform: transformRuns}
			opts := []informers.SharedInformerOption{informers.WithLeanMemory(), informers.WithMetadataClient(meta)}
			if tc.resourceLevel {
				ro.ListMode = tc.mode
				opts = append(opts, informers.WithListMode(informers.ListModeList))
			} else {
				opts = append(opts, informers.WithListMode(tc.mode))
			}
			opts = append(opts, informers.WithResourceOptions(podsGVR, ro))
			f, err := informers.New(client, 0, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { cancel(); f.Shutdown() }() // Shutdown waits for the informers to stop
			typed := f.Core().V1().Pods().Informer()
			md, err := f.ForMetadata(podsGVR)
			if err != nil {
				t.Fatal(err)
			}
			f.Start(ctx.Done())
			if !cache.WaitForCacheSync(ctx.Done(), typed.HasSynced, md.Informer().HasSynced) {
				t.Fatal("not synced")
			}
			if got := len(typed.GetStore().List()); got != 3 {
				t.Errorf("typed informer holds %d pods, want 3 (namespaces a and b)", got)
			}
			if got := len(md.Informer().GetStore().List()); got != 2 {
				t.Errorf("metadata informer holds %d objects, want 2", got)
			}
			for _, store := range []cache.Store{typed.GetStore(), md.Informer().GetStore()} {
				for _, o := range store.List() {
					m := o.(metav1.Object)
					if got := m.GetAnnotations()["runs"]; got != "x" {
						t.Errorf("%T %s/%s: transformed %q, want once", o, m.GetNamespace(), m.GetName(), got)
					}
					if m.GetManagedFields() != nil {
						t.Errorf("%T %s/%s: managedFields kept under WithLeanMemory", o, m.GetNamespace(), m.GetName())
					}
				}
			}
			lists := 0
			for _, a := range client.Actions() {
				l, ok := a.(clienttesting.ListActionImpl)
				if !ok || l.GetResource().Resource != "pods" {
					continue
				}
				lists++
				if l.ListOptions.ResourceVersion != tc.wantRV || l.ListOptions.LabelSelector != "app=x" {
					t.Errorf("list of %s with resourceVersion %q selector %q, want %q and app=x", l.GetNamespace(), l.ListOptions.ResourceVersion, l.ListOptions.LabelSelector, tc.wantRV)
				}
			}
			if lists != 2 {
				t.Errorf("%d pod lists, want one per namespace (2)", lists)
			}
			notices := f.Notices()
			switch {
			case tc.wantNotice == "" && len(notices) > 0:
				t.Errorf("notices %q, want none", notices)
			case tc.wantNotice != "":
				// One per informer (typed and metadata), each once however
				// many namespaces and lists.
				if len(notices) != 2 || !strings.Contains(notices[0], tc.wantNotice) || !strings.Contains(notices[1], tc.wantNotice) {
					t.Errorf("notices %q, want 2 saying %q", notices, tc.wantNotice)
				}
			}
		})
	}
}

func podMetadata(ns, name string) *metav1.PartialObjectMetadata {
	p := listModePod(ns, name)
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: p.ObjectMeta}
}

// TestListModeWithShard checks that a LIST mode keeps a static shard: the
// request carries the selector, and each page is filtered before it is
// transformed.
func TestListModeWithShard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := fake.NewClientset(listModePod("a", "p1"), listModePod("a", "p2"), listModePod("a", "p3"), listModePod("a", "p4"))
	f, err := informers.New(client, 0, informers.WithListMode(informers.ListModeConsistentList), informers.WithShard(sharding.FieldUID, 0, 2),
		informers.WithTransform(transformRuns))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); f.Shutdown() }()
	inf := f.Core().V1().Pods().Informer()
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}
	for _, a := range client.Actions() {
		if l, ok := a.(clienttesting.ListActionImpl); ok && (l.ListOptions.ShardSelector == "" || l.ListOptions.ResourceVersion != "") {
			t.Errorf("list with shard selector %q resourceVersion %q, want a selector and none", l.ListOptions.ShardSelector, l.ListOptions.ResourceVersion)
		}
	}
	for _, o := range inf.GetStore().List() {
		if got := o.(*corev1.Pod).Annotations["runs"]; got != "x" {
			t.Errorf("%s: transformed %q, want once", o.(*corev1.Pod).Name, got)
		}
	}
}

// Under ListModeAuto an informer that does not stream lists as client-go
// does (resourceVersion=0), unless its cache is lean or projected
// (KeepFields): then in pages, with
// a consistent read, and Notices says so once. An explicit ListModeList
// keeps client-go's LIST.
func TestListModeAutoPagedFallback(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       []informers.SharedInformerOption
		wantRV     string
		wantLimit  int64
		wantNotice bool
	}{
		{"full cache", nil, "0", 500, false},
		{"lean cache", []informers.SharedInformerOption{informers.WithLeanMemory()}, "", 500, true},
		{"projected cache", []informers.SharedInformerOption{informers.WithResourceOptions(corev1.SchemeGroupVersion.WithResource("pods"),
			informers.ResourceOptions{KeepFields: []string{"spec.nodeName"}})}, "", 500, true},
		{"lean cache, ListModeList", []informers.SharedInformerOption{informers.WithLeanMemory(), informers.WithListMode(informers.ListModeList)}, "0", 500, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(listModePod("a", "p1"), listModePod("b", "p2"))
			f, err := informers.New(client, 0, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(syncCtx(t))
			defer func() { cancel(); f.Shutdown() }()
			informer := f.Core().V1().Pods().Informer()
			f.Start(ctx.Done())
			mustSync(t, ctx, f)
			if got := len(informer.GetStore().List()); got != 2 {
				t.Errorf("%d pods cached, want 2", got)
			}
			lists := 0
			for _, a := range client.Actions() {
				l, ok := a.(clienttesting.ListActionImpl)
				if !ok {
					continue
				}
				lists++
				if l.ListOptions.ResourceVersion != tc.wantRV || l.ListOptions.Limit != tc.wantLimit {
					t.Errorf("list with resourceVersion %q limit %d, want %q and %d", l.ListOptions.ResourceVersion, l.ListOptions.Limit, tc.wantRV, tc.wantLimit)
				}
			}
			if lists != 1 {
				t.Errorf("%d lists, want 1", lists)
			}
			notices := f.Notices()
			if got := len(notices) == 1 && strings.Contains(notices[0], "lists in pages of 500 with a consistent read"); got != tc.wantNotice {
				t.Errorf("notices %q, want a paged-fallback notice: %v", notices, tc.wantNotice)
			}
		})
	}
}
