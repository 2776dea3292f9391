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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/crcache"
	"github.com/kubeinformers/informers/test/e2e/testenv"
)

// caches are the two caches the tests here compare: controller-runtime's
// own and crcache's.
var caches = []struct {
	name string
	new  cache.NewCacheFunc
}{{"cache.New", cache.New}, {"crcache.New", crcache.New}}

// checkLeaksBesideControllerRuntime is checkLeaks, less the goroutines
// of controller-runtime's multi-namespace cache (DefaultNamespaces) that
// wait for an informer, or a handler, to sync: one that is stopped first
// (removed, or forbidden) never does, and they stay. They are
// controller-runtime's, which the tests here run beside crcache.
func checkLeaksBesideControllerRuntime(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		goleak.VerifyNone(t, before,
			goleak.IgnoreTopFunction("sigs.k8s.io/controller-runtime/pkg/cache.newMultiNamespaceInformer.func1"),
			goleak.IgnoreTopFunction("sigs.k8s.io/controller-runtime/pkg/cache.newMultiNamespaceInformerHandlerRegistration.func1"))
	})
}

// TestCRCacheRemoveInformerFromItsHandler: an event handler of the
// ConfigMap informer calls RemoveInformer for ConfigMaps. On
// controller-runtime's cache the call returns at once; on crcache too,
// and the kind's informer can be asked for again and syncs. No goroutine
// is left once the caches stop.
func TestCRCacheRemoveInformerFromItsHandler(t *testing.T) {
	c := setup(t)
	checkLeaksBesideControllerRuntime(t)
	mkConfigMaps(t, c, c.ns, "cm", 2)
	for _, cc := range caches {
		t.Run(cc.name, func(t *testing.T) {
			crc, err := cc.new(c.cfg, cache.Options{DefaultNamespaces: map[string]cache.Config{c.ns: {}}})
			if err != nil {
				t.Fatal(err)
			}
			runManager(t, c.ctx, crc)
			inf, err := crc.GetInformer(c.ctx, &corev1.ConfigMap{})
			if err != nil {
				t.Fatal(err)
			}
			returned := make(chan error, 1)
			var once sync.Once
			if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) {
				once.Do(func() { returned <- crc.RemoveInformer(c.ctx, &corev1.ConfigMap{}) })
			}}); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-returned:
				if err != nil {
					t.Fatalf("RemoveInformer from the informer's own handler: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("RemoveInformer called from the informer's own event handler has not returned within 10 s")
			}
			if !eventually(10*time.Second, 10*time.Millisecond, inf.IsStopped) {
				t.Error("the removed informer has not stopped within 10 s")
			}
			var list corev1.ConfigMapList
			if err := crc.List(c.ctx, &list, client.InNamespace(c.ns)); err != nil || len(list.Items) != 2 {
				t.Errorf("List after the removal: %d ConfigMaps, %v; want 2 from a new informer", len(list.Items), err)
			}
		})
	}
}

// TestCRCacheByObjectCRDInstalledLater: a ByObject entry (a label
// selector and one namespace) of a kind whose CRD is not installed.
// controller-runtime's New refuses it; crcache.NewCache(WithAPIDiscovery())
// makes the cache, and once the CRD is installed its List returns what
// controller-runtime's cache, made then with the same options, returns:
// the labelled Gadget of that namespace only.
func TestCRCacheByObjectCRDInstalledLater(t *testing.T) {
	c := setup(t)
	checkLeaks(t)
	other := c.newNamespace("byobject-other")
	group := "byobject-" + randSuffix() + ".e2e.kubeinformers.io"
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	gvk := gvr.GroupVersion().WithKind("Gadget")
	t.Cleanup(func() { deleteCRD(t, c, gvr) })
	gadget := func() client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u
	}
	opts := func() cache.Options {
		return cache.Options{ByObject: map[client.Object]cache.ByObject{gadget(): {
			Label:      labels.SelectorFromSet(labels.Set{"app": "x"}),
			Namespaces: map[string]cache.Config{c.ns: {}},
		}}}
	}
	if _, err := cache.New(c.cfg, opts()); err == nil {
		t.Fatal("controller-runtime's cache.New accepted a ByObject kind no resource serves; this test assumes it refuses")
	} else {
		t.Logf("controller-runtime's cache.New: %v", err)
	}
	crc, err := crcache.NewCache(informers.WithAPIDiscovery())(c.cfg, opts())
	if err != nil {
		t.Fatalf("crcache.NewCache(WithAPIDiscovery()) with a ByObject kind not served yet: %v", err)
	}
	runManager(t, c.ctx, crc)
	if _, err := crc.GetInformer(c.ctx, gadget()); err != nil {
		t.Fatalf("GetInformer before the CRD: %v", err)
	}

	installCRD(t, c, group, "gadgets", "Gadget")
	dyn := dynamic.NewForConfigOrDie(c.cfg)
	for _, o := range []struct {
		ns, name string
		labelled bool
	}{{c.ns, "in", true}, {c.ns, "unlabelled", false}, {other, "elsewhere", true}} {
		u := customObject(gvr, "Gadget", o.ns, o.name, 1)
		if o.labelled {
			u.SetLabels(map[string]string{"app": "x"})
		}
		if _, err := dyn.Resource(gvr).Namespace(o.ns).Create(c.ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	names := func(r client.Reader) []string {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvr.GroupVersion().WithKind("GadgetList"))
		if err := r.List(c.ctx, l); err != nil {
			return []string{"error: " + err.Error()}
		}
		var out []string
		for _, u := range l.Items {
			out = append(out, u.GetNamespace()+"/"+u.GetName())
		}
		slices.Sort(out)
		return out
	}
	cr, err := cache.New(c.cfg, opts())
	if err != nil {
		t.Fatalf("controller-runtime's cache.New once the CRD is served: %v", err)
	}
	runManager(t, c.ctx, cr)
	want := []string{c.ns + "/in"}
	var got, crGot []string
	if !eventually(30*time.Second, 20*time.Millisecond, func() bool {
		got, crGot = names(crc), names(cr)
		return slices.Equal(got, want) && slices.Equal(crGot, want)
	}) {
		t.Errorf("30 s after the CRD was served: crcache lists %q, controller-runtime's cache %q; want %q from both", got, crGot, want)
	}
}

// TestCRCacheWatchErrorHandler: cache.Options.DefaultWatchErrorHandler
// gets the 403 of a kind the user may not list from crcache as from
// controller-runtime's cache, and crcache's Ready still names it. Under
// WithAPIDiscovery, a version that stops being served is no error: the
// handler gets none for it while the cache empties and waits for it.
func TestCRCacheWatchErrorHandler(t *testing.T) {
	c := setup(t)
	checkLeaksBesideControllerRuntime(t)
	type recorder struct {
		mu   sync.Mutex
		errs []error
	}
	handler := func(r *recorder) toolscache.WatchErrorHandlerWithContext {
		return func(_ context.Context, _ *toolscache.Reflector, err error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.errs = append(r.errs, err)
		}
	}
	got := func(r *recorder, match func(error) bool) []error {
		r.mu.Lock()
		defer r.mu.Unlock()
		return slices.DeleteFunc(slices.Clone(r.errs), func(err error) bool { return !match(err) })
	}

	t.Run("forbidden", func(t *testing.T) {
		grantConfigMaps(t, c, testenv.LimitedUser)
		client := kubernetes.NewForConfigOrDie(env.LimitedConfig())
		if !eventually(30*time.Second, 20*time.Millisecond, func() bool {
			_, err := client.CoreV1().ConfigMaps(c.ns).List(c.ctx, metav1.ListOptions{Limit: 1})
			return err == nil
		}) {
			t.Fatal("the ConfigMap grant did not take effect within 30 s")
		}
		limited := env.LimitedConfig()
		for _, cc := range caches {
			rec := &recorder{}
			crc, err := cc.new(limited, cache.Options{
				DefaultNamespaces:        map[string]cache.Config{c.ns: {}},
				DefaultWatchErrorHandler: handler(rec),
			})
			if err != nil {
				t.Fatal(err)
			}
			runManager(t, c.ctx, crc)
			if _, err := crc.GetInformer(c.ctx, &corev1.Secret{}, cache.BlockUntilSynced(false)); err != nil {
				t.Fatal(err)
			}
			if !eventually(30*time.Second, 10*time.Millisecond, func() bool { return len(got(rec, apierrors.IsForbidden)) > 0 }) {
				t.Errorf("%s: DefaultWatchErrorHandler got no 403 within 30 s; it got %v", cc.name, got(rec, func(error) bool { return true }))
			}
			if r, ok := crc.(*crcache.Cache); ok {
				if err := r.Ready(); err == nil || !strings.Contains(err.Error(), "secrets") || !strings.Contains(err.Error(), "forbidden") {
					t.Errorf("crcache's Ready() = %v with a DefaultWatchErrorHandler, want the Secrets informer's 403", err)
				}
			}
		}
	})

	t.Run("version no longer served", func(t *testing.T) {
		// The Gadgets stay when their version v2 stops being served (v1
		// stores them), so that the informer of v2 holds objects when its
		// requests get 404s.
		group := "errhandler-" + randSuffix() + ".e2e.kubeinformers.io"
		dyn := dynamic.NewForConfigOrDie(c.cfg)
		crd := testenv.CRD(group, "gadgets", "Gadget")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		v2 := runtime.DeepCopyJSONValue(versions[0]).(map[string]any)
		v2["name"], v2["storage"] = "v2", false
		if err := unstructured.SetNestedSlice(crd.Object, append(versions, v2), "spec", "versions"); err != nil {
			t.Fatal(err)
		}
		gvr := schema.GroupVersionResource{Group: group, Version: "v2", Resource: "gadgets"}
		t.Cleanup(func() { deleteCRD(t, c, gvr) })
		if _, err := dyn.Resource(crdGVR).Create(c.ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if !eventually(60*time.Second, 50*time.Millisecond, func() bool {
			_, err := dyn.Resource(gvr).Namespace(c.ns).Create(c.ctx, customObject(gvr, "Gadget", c.ns, "g", 1), metav1.CreateOptions{})
			return err == nil
		}) {
			t.Fatal("v2 Gadgets not served within 60 s")
		}
		rec := &recorder{}
		crc, err := crcache.NewCache(informers.WithAPIDiscovery())(c.cfg, cache.Options{
			DefaultNamespaces:        map[string]cache.Config{c.ns: {}},
			DefaultWatchErrorHandler: handler(rec),
		})
		if err != nil {
			t.Fatal(err)
		}
		runManager(t, c.ctx, crc)
		if !crc.WaitForCacheSync(c.ctx) {
			t.Fatal("WaitForCacheSync failed")
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvr.GroupVersion().WithKind("GadgetList"))
		if err := crc.List(c.ctx, list); err != nil || len(list.Items) != 1 {
			t.Fatalf("List with the CRD installed: %d, %v; want 1", len(list.Items), err)
		}
		if !eventually(30*time.Second, 50*time.Millisecond, func() bool {
			got, err := dyn.Resource(crdGVR).Get(c.ctx, "gadgets."+group, metav1.GetOptions{})
			if err != nil {
				return false
			}
			versions, _, _ := unstructured.NestedSlice(got.Object, "spec", "versions")
			versions[1].(map[string]any)["served"] = false
			if err := unstructured.SetNestedSlice(got.Object, versions, "spec", "versions"); err != nil {
				return false
			}
			_, err = dyn.Resource(crdGVR).Update(c.ctx, got, metav1.UpdateOptions{})
			return err == nil
		}) {
			t.Fatal("could not stop serving v2 within 30 s")
		}
		r := crc.(*crcache.Cache)
		waits := func() bool {
			return slices.ContainsFunc(r.Notices(), func(n string) bool { return strings.Contains(n, group) })
		}
		if !eventually(30*time.Second, 20*time.Millisecond, func() bool {
			return crc.List(c.ctx, list) == nil && len(list.Items) == 0 && waits()
		}) {
			t.Fatalf("30 s after v2 stopped being served: %d Gadgets listed, notices %q", len(list.Items), r.Notices())
		}
		time.Sleep(2 * time.Second) // the informer waits meanwhile
		// A not-served error wraps the server's 404.
		if errs := got(rec, apierrors.IsNotFound); len(errs) > 0 {
			t.Errorf("DefaultWatchErrorHandler got %d errors for the kind no longer served (WithAPIDiscovery), want none: %v", len(errs), errs)
		}
		if err := r.Ready(); err != nil {
			t.Errorf("Ready() = %v while the kind waits to be served, want nil", err)
		}
	})
}
