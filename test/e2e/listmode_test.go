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

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

// TestListModes runs the typed and the metadata-only informer of
// configmaps in each list mode, over two namespaces, a label selector and
// two static shards, on the real server. It checks the requests each mode
// makes (the stream; a LIST with resourceVersion=0; a paged LIST with no
// resourceVersion), that the two shards together hold every selected
// object once, that the user's transform (which is not idempotent) ran
// exactly once on every object, and that the watch goes on after the sync.
// Left to itself, client-go v0.37.2 transforms each object of a stream
// twice (into the reflector's temporary store, then in the FIFO's Replace)
// and a LIST's page by page only with this module's Pretransform.
func TestListModes(t *testing.T) {
	c := setup(t)
	namespaces := []string{c.ns, c.newNamespace("e2e-listmode")}
	const perNamespace = 7
	want := map[string]bool{}
	for _, ns := range namespaces {
		for i := range perNamespace {
			createConfigMap(t, c, ns, fmt.Sprintf("cm-%d", i), map[string]string{"app": "listmode"})
			want[ns+"/"+fmt.Sprintf("cm-%d", i)] = true
		}
		// Not selected.
		createConfigMap(t, c, ns, "other", map[string]string{"app": "other"})
	}
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")

	for _, mode := range []informers.ListMode{informers.ListModeStream, informers.ListModeList, informers.ListModeConsistentList} {
		t.Run(string(mode), func(t *testing.T) {
			held := map[string]int{}
			for shard := range 2 {
				rec := &recorder{label: "admin"}
				cfg := rec.wrap(env.AdminConfig())
				var transforms atomic.Int64
				// Not idempotent: a second run would append a second "x".
				mark := func(obj any) (any, error) {
					transforms.Add(1)
					m, ok := obj.(metav1.Object)
					if !ok {
						return obj, nil
					}
					a := maps.Clone(m.GetAnnotations())
					if a == nil {
						a = map[string]string{}
					}
					a["listmode"] += "x"
					m.SetAnnotations(a)
					return obj, nil
				}
				ro := informers.ResourceOptions{Namespaces: namespaces, LabelSelector: "app=listmode", ListMode: mode, Transform: mark}
				if mode != informers.ListModeStream {
					// Small pages, so that a LIST takes several.
					ro.TweakListOptions = func(o *metav1.ListOptions) {
						if o.Watch {
							return
						}
						o.Limit = 3
					}
				}
				f, err := informers.NewForConfig(cfg, 0, informers.WithShard(sharding.FieldUID, shard, 2), informers.WithLeanMemory(),
					informers.WithResourceOptions(gvr, ro))
				if err != nil {
					t.Fatal(err)
				}
				typed := f.Core().V1().ConfigMaps().Informer()
				meta, err := f.ForMetadata(gvr)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(c.ctx)
				f.Start(ctx.Done())
				if !cache.WaitForCacheSync(ctx.Done(), typed.HasSynced, meta.Informer().HasSynced) {
					t.Fatal("not synced")
				}
				if n := f.Notices(); len(n) > 0 {
					t.Errorf("shard %d: notices: %q", shard, n)
				}
				typedKeys := storeKeys(typed.GetStore())
				metaKeys := storeKeys(meta.Informer().GetStore())
				if !slices.Equal(typedKeys, metaKeys) {
					t.Errorf("shard %d: typed holds %q, metadata %q", shard, typedKeys, metaKeys)
				}
				for _, k := range typedKeys {
					held[k]++
				}
				const runs = "x"
				for _, store := range []cache.Store{typed.GetStore(), meta.Informer().GetStore()} {
					for _, o := range store.List() {
						m := o.(metav1.Object)
						if got := m.GetAnnotations()["listmode"]; got != runs {
							t.Errorf("shard %d: %s/%s: transformed %q times, want %q (%T)", shard, m.GetNamespace(), m.GetName(), got, runs, o)
						}
						if m.GetManagedFields() != nil {
							t.Errorf("shard %d: %s/%s: managedFields kept under WithLeanMemory", shard, m.GetNamespace(), m.GetName())
						}
					}
				}
				if got, wantN := transforms.Load(), int64(2*len(typedKeys)*len(runs)); got != wantN {
					t.Errorf("shard %d: the transform ran %d times for %d objects in 2 informers, want %d", shard, got, len(typedKeys), wantN)
				}
				checkModeRequests(t, mode, rec.filter(func(r request) bool { return strings.HasSuffix(r.Path, "/configmaps") }), len(namespaces))
				cancel()
				f.Shutdown()
			}
			for k := range want {
				if held[k] != 1 {
					t.Errorf("%s is held by %d shards, want 1", k, held[k])
				}
			}
			for k := range held {
				if !want[k] {
					t.Errorf("%s is held but not selected", k)
				}
			}
		})
	}

	// The watch goes on after a LIST: a new object arrives, transformed once.
	f, err := informers.NewForConfig(env.AdminConfig(), 0, informers.WithListMode(informers.ListModeConsistentList),
		informers.WithResourceOptions(gvr, informers.ResourceOptions{Namespaces: namespaces, LabelSelector: "app=listmode"}),
		informers.WithTransform(informers.TransformStripManagedFields()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer f.Shutdown()
	defer cancel()
	inf := f.Core().V1().ConfigMaps().Informer()
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}
	createConfigMap(t, c, namespaces[1], "late", map[string]string{"app": "listmode"})
	if !eventually(30*time.Second, 50*time.Millisecond, func() bool {
		_, ok, _ := inf.GetStore().GetByKey(namespaces[1] + "/late")
		return ok
	}) {
		t.Fatal("the configmap created after the sync never arrived")
	}
}

func createConfigMap(t *testing.T, c *tcx, ns, name string, labels map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Data: map[string]string{"k": "v"}}
	if _, err := c.client.CoreV1().ConfigMaps(ns).Create(c.ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap %s/%s: %v", ns, name, err)
	}
}

func storeKeys(s cache.Store) []string {
	keys := s.ListKeys()
	slices.Sort(keys)
	return keys
}

// checkModeRequests checks the initial requests of two informers (typed
// and metadata) over namespaces namespaces in mode.
func checkModeRequests(t *testing.T, mode informers.ListMode, reqs []request, namespaces int) {
	t.Helper()
	var lists, firstLists, streams int
	for _, r := range reqs {
		q := r.Query
		switch {
		case r.isWatch() && q.Get("sendInitialEvents") == "true":
			streams++
		case r.isList():
			lists++
			if q.Get("continue") != "" {
				continue
			}
			firstLists++
			switch rv := q.Get("resourceVersion"); mode {
			case informers.ListModeList:
				if rv != "0" {
					t.Errorf("%s: first LIST with resourceVersion %q, want 0", mode, rv)
				}
			case informers.ListModeConsistentList:
				if rv != "" || q.Get("limit") == "" {
					t.Errorf("%s: first LIST with resourceVersion %q and limit %q, want none and a limit", mode, rv, q.Get("limit"))
				}
			}
		}
	}
	switch mode {
	case informers.ListModeStream:
		if streams != 2*namespaces || lists != 0 {
			t.Errorf("%s: %d watch-list streams and %d LISTs, want %d and 0", mode, streams, lists, 2*namespaces)
		}
	default:
		if streams != 0 || firstLists != 2*namespaces {
			t.Errorf("%s: %d watch-list streams and %d first LISTs, want 0 and %d", mode, streams, firstLists, 2*namespaces)
		}
		// Whether a page is continued is the server's choice: with a few
		// objects per shard, under the page limit, it may answer in one.
		// The first request's limit and consistency are checked above.
	}
}

// TestListModeAutoLeanFallback runs with client-go's WatchListClient gate
// off, so no informer streams: under ListModeAuto a full typed cache lists
// as client-go does (resourceVersion=0), while a lean typed cache and a
// metadata-only one list in pages with a consistent read, and Notices
// says so once for each of them.
func TestListModeAutoLeanFallback(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	c := setup(t)
	const objects = 7
	for i := range objects {
		createConfigMap(t, c, c.ns, fmt.Sprintf("cm-%d", i), nil)
	}
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	for _, tc := range []struct {
		name       string
		lean       bool
		metadata   bool
		wantRV     string
		wantLimit  string
		wantNotice bool
	}{
		{"full typed", false, false, "0", "500", false},
		{"lean typed", true, false, "", "500", true},
		{"metadata", false, true, "", "500", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{label: "admin"}
			opts := []informers.SharedInformerOption{informers.WithNamespace(c.ns)}
			if tc.lean {
				opts = append(opts, informers.WithLeanMemory())
			}
			f, err := informers.NewForConfig(rec.wrap(env.AdminConfig()), 0, opts...)
			if err != nil {
				t.Fatal(err)
			}
			var informer cache.SharedIndexInformer
			if tc.metadata {
				gi, err := f.ForMetadata(gvr)
				if err != nil {
					t.Fatal(err)
				}
				informer = gi.Informer()
			} else {
				informer = f.Core().V1().ConfigMaps().Informer()
			}
			ctx, cancel := context.WithCancel(c.ctx)
			defer func() { cancel(); f.Shutdown() }()
			f.Start(ctx.Done())
			if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
				t.Fatal("not synced")
			}
			if got := len(informer.GetStore().ListKeys()); got != objects {
				t.Errorf("%d objects cached, want %d", got, objects)
			}
			var firstLists int
			for _, r := range rec.filter(func(r request) bool { return r.isList() && r.Query.Get("continue") == "" }) {
				firstLists++
				if rv, limit := r.Query.Get("resourceVersion"), r.Query.Get("limit"); rv != tc.wantRV || limit != tc.wantLimit {
					t.Errorf("first LIST %s with resourceVersion %q limit %q, want %q and %q", r.Path, rv, limit, tc.wantRV, tc.wantLimit)
				}
			}
			if firstLists != 1 {
				t.Errorf("%d first LISTs, want 1", firstLists)
			}
			notices := f.Notices()
			if got := len(notices) == 1 && strings.Contains(notices[0], "lists in pages of 500 with a consistent read"); got != tc.wantNotice {
				t.Errorf("notices %q, want the paged-fallback notice: %v", notices, tc.wantNotice)
			}
		})
	}
}
