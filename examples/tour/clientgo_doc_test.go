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
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
	corev1informers "github.com/kubeinformers/informers/core/v1"
	"github.com/kubeinformers/informers/internalinterfaces"
)

// TestClientGoPackageDoc runs the usage that client-go's package doc (as of
// v0.30.1) describes, on the demo cluster: whoever learnt the package from
// that doc finds it working here unchanged. The doc's
//
//	defer factory.WaitForStop()
//
// is Shutdown (there never was a WaitForStop); it has to run after the
// context is cancelled, so it is deferred before cancel.
func TestClientGoPackageDoc(t *testing.T) {
	client := demo(t).typed
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	factory := informers.NewSharedInformerFactory(client, time.Minute)
	defer factory.Shutdown() // returns at once if nothing was started
	defer cancel()

	genericInformer, err := factory.ForResource(podsGVR)
	if err != nil {
		t.Fatal(err)
	}
	typedInformer := factory.Core().V1().Pods()
	factory.Start(ctx.Done())
	checkSynced(t, factory.WaitForCacheSync(ctx.Done()), &corev1.Pod{})
	if genericInformer.Informer() != typedInformer.Informer() {
		t.Error("ForResource(pods) and Core().V1().Pods() are different informers")
	}
	countObjects(t, "pods", genericInformer.Lister().List, 8)

	// Informers requested after Start run once Start is called again.
	anotherGenericInformer, err := factory.ForResource(corev1.SchemeGroupVersion.WithResource("configmaps"))
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	checkSynced(t, factory.WaitForCacheSync(ctx.Done()), &corev1.Pod{}, &corev1.ConfigMap{})
	countObjects(t, "configmaps", anotherGenericInformer.Lister().List, 4)

	// InformerFor returns the factory's informer of a type, built by newFunc
	// the first time; the typed accessor then returns the same one.
	secrets := factory.InformerFor(&corev1.Secret{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return corev1informers.NewSecretInformer(c, metav1.NamespaceAll, resync, cache.Indexers{})
	})
	if secrets != factory.Core().V1().Secrets().Informer() {
		t.Error("Core().V1().Secrets().Informer() is not the informer InformerFor(&Secret{}) built")
	}

	// After Shutdown, Start starts nothing; Shutdown may be called again,
	// also concurrently.
	cancel()
	factory.Shutdown()
	services := factory.Core().V1().Services().Informer()
	factory.Start(t.Context().Done())
	done := make(chan struct{})
	go func() { factory.Shutdown(); close(done) }()
	factory.Shutdown()
	<-done
	if _, ok := factory.WaitForCacheSync(t.Context().Done())[reflect.TypeOf(&corev1.Service{})]; ok || services.HasSynced() {
		t.Error("Start after Shutdown started the services informer")
	}

	checkGroups(t, factory)
}

// TestClientGoPackageDocOptions builds factories with each constructor and
// option client-go's package doc lists.
func TestClientGoPackageDocOptions(t *testing.T) {
	client := demo(t).typed
	var tweak internalinterfaces.TweakListOptionsFunc = func(o *metav1.ListOptions) { o.LabelSelector = "app=web" }
	withOptions := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace("shop"),
		informers.WithTweakListOptions(tweak),
		informers.WithTransform(informers.TransformStripManagedFields()),
		informers.WithCustomResyncConfig(map[metav1.Object]time.Duration{&corev1.Pod{}: time.Hour}),
	)
	filtered := informers.NewFilteredSharedInformerFactory(client, 0, "payments", nil) //nolint:staticcheck // SA1019: deprecated, as in client-go, and still part of the doc this test follows

	for _, tc := range []struct {
		name    string
		factory informers.SharedInformerFactory
		want    int
		fields  bool // whether the cached pods keep their managedFields
	}{
		{"NewSharedInformerFactoryWithOptions(WithNamespace(shop), WithTweakListOptions(app=web), WithTransform, WithCustomResyncConfig)", withOptions, 3, false},
		{`NewFilteredSharedInformerFactory(client, 0, "payments", nil)`, filtered, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			pods := tc.factory.Core().V1().Pods().Lister() // registers the informer
			tc.factory.Start(ctx.Done())
			defer tc.factory.Shutdown()
			defer cancel()
			checkSynced(t, tc.factory.WaitForCacheSync(ctx.Done()), &corev1.Pod{})
			cached, err := pods.List(labels.Everything())
			if err != nil {
				t.Fatal(err)
			}
			if len(cached) != tc.want {
				t.Errorf("cached %d pods, want %d", len(cached), tc.want)
			}
			for _, p := range cached {
				if got := len(p.ManagedFields) > 0; got != tc.fields {
					t.Errorf("pod %s has %d managedFields entries; want them kept: %t", p.Name, len(p.ManagedFields), tc.fields)
				}
			}
		})
	}
}

func checkSynced(t *testing.T, synced map[reflect.Type]bool, objs ...any) {
	t.Helper()
	for v, ok := range synced {
		if !ok {
			t.Errorf("caches failed to sync: %v", v)
		}
	}
	for _, obj := range objs {
		if !synced[reflect.TypeOf(obj)] {
			t.Errorf("WaitForCacheSync = %v, want %T synced", synced, obj)
		}
	}
}

func countObjects[T any](t *testing.T, what string, list func(labels.Selector) ([]T, error), want int) {
	t.Helper()
	objs, err := list(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != want {
		t.Errorf("%d %s cached, want %d", len(objs), what, want)
	}
}

// checkGroups calls every group accessor of client-go v0.30.1's
// SharedInformerFactory.
func checkGroups(t *testing.T, f informers.SharedInformerFactory) {
	t.Helper()
	for name, group := range map[string]any{
		"Admissionregistration": f.Admissionregistration(), "Internal": f.Internal(), "Apps": f.Apps(),
		"Autoscaling": f.Autoscaling(), "Batch": f.Batch(), "Certificates": f.Certificates(),
		"Coordination": f.Coordination(), "Core": f.Core(), "Discovery": f.Discovery(), "Events": f.Events(),
		"Extensions": f.Extensions(), "Flowcontrol": f.Flowcontrol(), "Networking": f.Networking(),
		"Node": f.Node(), "Policy": f.Policy(), "Rbac": f.Rbac(), "Resource": f.Resource(),
		"Scheduling": f.Scheduling(), "Storage": f.Storage(), "Storagemigration": f.Storagemigration(),
	} {
		if reflect.ValueOf(group).IsNil() {
			t.Errorf("%s() is nil", name)
		}
	}
}
