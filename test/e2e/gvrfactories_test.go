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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/dynamicinformer"
	"github.com/kubeinformers/informers/metadatainformer"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// dropIn is a factory made by one of the drop-ins for client-go's dynamic
// and metadata factories, reached as the module's Factory.
type dropIn struct {
	form        string // "dynamic" or "metadata", as Ready names the form
	factory     interface{ Start(<-chan struct{}) }
	forResource func(schema.GroupVersionResource) cache.SharedIndexInformer
	wait        func(<-chan struct{}) map[schema.GroupVersionResource]bool
	shutdown    func()
	removeInf   func(schema.GroupVersionResource) bool
	ready       func() error
	wantType    string
}

// newDropIn builds the form's factory with client-go's constructor, limited
// to namespace, over cfg, and asserts it to the package's Factory.
func newDropIn(t *testing.T, form string, cfg *rest.Config, namespace string) dropIn {
	t.Helper()
	switch form {
	case "dynamic":
		f, ok := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(cfg), 0, namespace, nil).(dynamicinformer.Factory)
		if !ok {
			t.Fatal("the dynamic factory is not a dynamicinformer.Factory")
		}
		return dropIn{form, f, func(gvr schema.GroupVersionResource) cache.SharedIndexInformer { return f.ForResource(gvr).Informer() },
			f.WaitForCacheSync, f.Shutdown, f.RemoveInformer, f.Ready, "*unstructured.Unstructured"}
	default:
		f, ok := metadatainformer.NewFilteredSharedInformerFactory(metadata.NewForConfigOrDie(cfg), 0, namespace, nil).(metadatainformer.Factory)
		if !ok {
			t.Fatal("the metadata factory is not a metadatainformer.Factory")
		}
		return dropIn{form, f, func(gvr schema.GroupVersionResource) cache.SharedIndexInformer { return f.ForResource(gvr).Informer() },
			f.WaitForCacheSync, f.Shutdown, f.RemoveInformer, f.Ready, "*v1.PartialObjectMetadata"}
	}
}

// TestDropInFactoriesCRDDeleted: a factory made by dynamicinformer (then
// by metadatainformer) with client-go's constructor watches a CRD's
// resource and a built-in one (ConfigMaps, served as client-go's are:
// unstructured or metadata only). The CRD is deleted: Ready names its
// informer; RemoveInformer stops it, and no request for the resource
// follows; the built-in informer keeps delivering.
func TestDropInFactoriesCRDDeleted(t *testing.T) {
	for _, form := range []string{"dynamic", "metadata"} {
		t.Run(form, func(t *testing.T) {
			c := setup(t)
			group := form + "-dropin.kubeinformers.io"
			gvr := installCRD(t, c, group, "trinkets", "Trinket")
			dyn := dynamic.NewForConfigOrDie(c.cfg)
			if _, err := dyn.Resource(gvr).Namespace(c.ns).Create(c.ctx, customObject(gvr, "Trinket", c.ns, "t1", 1), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			rec := &recorder{label: "admin"}
			f := newDropIn(t, form, rec.wrap(env.AdminConfig()), c.ns)
			ctx, cancel := context.WithCancel(c.ctx)
			defer f.shutdown()
			defer cancel()
			crdInformer := f.forResource(gvr)
			cmInformer := f.forResource(configMapsGVR)
			cmAdds := make(chan string, 16)
			if _, err := cmInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
				if m, ok := obj.(metav1.Object); ok {
					cmAdds <- fmt.Sprintf("%T %s", obj, m.GetName())
				}
			}}); err != nil {
				t.Fatal(err)
			}
			f.factory.Start(ctx.Done())
			wctx, stop := context.WithTimeout(ctx, 60*time.Second)
			synced := f.wait(wctx.Done())
			stop()
			if !synced[gvr] || !synced[configMapsGVR] || len(synced) != 2 {
				t.Fatalf("WaitForCacheSync = %v, want both resources synced", synced)
			}
			if n := len(crdInformer.GetStore().List()); n != 1 {
				t.Errorf("the CRD's informer caches %d objects, want 1", n)
			}
			if err := f.ready(); err != nil {
				t.Fatalf("Ready() before deleting the CRD = %v", err)
			}

			isCRD := func(r request) bool { return strings.Contains(r.Path, "/"+group+"/") }
			atDelete := len(rec.filter(isCRD))
			deleteCRD(t, c, gvr)
			deleted := time.Now()
			want := fmt.Sprintf("trinkets.%s/v1 [%s]", group, form)
			var readyErr error
			if !eventually(60*time.Second, 100*time.Millisecond, func() bool {
				readyErr = f.ready()
				return readyErr != nil && strings.Contains(readyErr.Error(), want)
			}) {
				t.Fatalf("Ready() did not name %s within 60s: %v", want, readyErr)
			}
			named := time.Since(deleted)
			if !f.removeInf(gvr) {
				t.Fatal("RemoveInformer(deleted CRD) = false")
			}
			removed := len(rec.filter(isCRD))
			const quiet = 5 * time.Second
			time.Sleep(quiet)
			after := len(rec.filter(isCRD)) - removed
			if after != 0 {
				t.Errorf("%d requests for %s in the %v after RemoveInformer", after, gvr.GroupResource(), quiet)
			}
			if err := f.ready(); err != nil {
				t.Errorf("Ready() after RemoveInformer = %v", err)
			}
			// The built-in informer is unaffected.
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-removal", Namespace: c.ns}}
			if _, err := c.client.CoreV1().ConfigMaps(c.ns).Create(c.ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			wantAdd := f.wantType + " after-removal"
			timeout := time.After(30 * time.Second)
			for got := ""; got != wantAdd; {
				select {
				case got = <-cmAdds:
				case <-timeout:
					t.Fatalf("the ConfigMaps informer did not deliver %q after the removal", wantAdd)
				}
			}
			t.Logf("%s drop-in: CRD deleted, Ready named %q after %v; %d requests for the resource from its deletion to RemoveInformer, %d in the %v after; the ConfigMaps informer (%s) kept delivering",
				form, want, named.Round(time.Millisecond), removed-atDelete, after, quiet, f.wantType)
		})
	}
}

// TestDropInFactoriesReadyNamesForbidden: for a user RBAC lets list
// ConfigMaps but not Secrets, the drop-in factories' Ready names Secrets
// with the 403, and WaitForCacheSync reports Secrets as not synced and
// ConfigMaps as synced.
func TestDropInFactoriesReadyNamesForbidden(t *testing.T) {
	c := setup(t)
	grantLimitedUser(t, c) // configmaps and pods in c.ns only
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	for _, form := range []string{"dynamic", "metadata"} {
		t.Run(form, func(t *testing.T) {
			f := newDropIn(t, form, env.LimitedConfig(), c.ns)
			ctx, cancel := context.WithCancel(c.ctx)
			defer f.shutdown()
			defer cancel()
			f.forResource(configMapsGVR)
			f.forResource(secrets)
			f.factory.Start(ctx.Done())
			var readyErr error
			if !eventually(30*time.Second, 100*time.Millisecond, func() bool {
				readyErr = f.ready()
				return readyErr != nil && strings.Contains(readyErr.Error(), "forbidden")
			}) {
				t.Fatalf("Ready() = %v; want the 403 for secrets", readyErr)
			}
			for _, want := range []string{"secrets (v1) [" + form + "]", `secrets is forbidden: User "e2e-limited" cannot list resource "secrets"`} {
				if !strings.Contains(readyErr.Error(), want) {
					t.Errorf("Ready() = %q; want %q in it", readyErr, want)
				}
			}
			if strings.Contains(readyErr.Error(), "configmaps") {
				t.Errorf("Ready() = %q names configmaps, which the user may list", readyErr)
			}
			// An informer whose LIST is forbidden is waited for, as in
			// client-go (Ready is what names it): bound the wait.
			wctx, stop := context.WithTimeout(ctx, 3*time.Second)
			defer stop()
			synced := f.wait(wctx.Done())
			if synced[secrets] || !synced[configMapsGVR] || len(synced) != 2 {
				t.Errorf("WaitForCacheSync = %v; want configmaps synced, secrets not", synced)
			}
			t.Logf("%s drop-in: Ready() = %q", form, readyErr)
		})
	}
}
