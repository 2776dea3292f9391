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
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
)

// crudKind drives one resource kind through create/update/delete.
type crudKind struct {
	name     string
	informer func(f informers.SharedInformerFactory) cache.SharedIndexInformer
	get      func(f informers.SharedInformerFactory, ns, name string) (metav1.Object, error) // typed lister
	create   func(ctx context.Context, c kubernetes.Interface, ns, name string) (metav1.Object, error)
	relabel  func(ctx context.Context, c kubernetes.Interface, ns, name, value string) (metav1.Object, error)
	delete   func(ctx context.Context, c kubernetes.Interface, ns, name string) error
}

func stepLabels(v string) map[string]string { return map[string]string{"step": v} }

var podTemplate = corev1.PodTemplateSpec{
	ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "e2e"}},
	Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "c", Image: "registry.invalid/none:1"}},
	},
}

func crudKinds() []crudKind {
	return []crudKind{
		{
			name: "core/v1 ConfigMap",
			informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
				return f.Core().V1().ConfigMaps().Informer()
			},
			get: func(f informers.SharedInformerFactory, ns, n string) (metav1.Object, error) {
				return f.Core().V1().ConfigMaps().Lister().ConfigMaps(ns).Get(n)
			},
			create: func(ctx context.Context, c kubernetes.Interface, ns, n string) (metav1.Object, error) {
				return c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: stepLabels("0")}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			},
			relabel: func(ctx context.Context, c kubernetes.Interface, ns, n, v string) (metav1.Object, error) {
				o, err := c.CoreV1().ConfigMaps(ns).Get(ctx, n, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				o.Labels = stepLabels(v)
				return c.CoreV1().ConfigMaps(ns).Update(ctx, o, metav1.UpdateOptions{})
			},
			delete: func(ctx context.Context, c kubernetes.Interface, ns, n string) error {
				return c.CoreV1().ConfigMaps(ns).Delete(ctx, n, metav1.DeleteOptions{})
			},
		},
		{
			name: "apps/v1 Deployment",
			informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
				return f.Apps().V1().Deployments().Informer()
			},
			get: func(f informers.SharedInformerFactory, ns, n string) (metav1.Object, error) {
				return f.Apps().V1().Deployments().Lister().Deployments(ns).Get(n)
			},
			create: func(ctx context.Context, c kubernetes.Interface, ns, n string) (metav1.Object, error) {
				tmpl := *podTemplate.DeepCopy()
				tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
				return c.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
					ObjectMeta: metav1.ObjectMeta{Name: n, Labels: stepLabels("0")},
					Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "e2e"}}, Template: tmpl},
				}, metav1.CreateOptions{})
			},
			relabel: func(ctx context.Context, c kubernetes.Interface, ns, n, v string) (metav1.Object, error) {
				o, err := c.AppsV1().Deployments(ns).Get(ctx, n, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				o.Labels = stepLabels(v)
				return c.AppsV1().Deployments(ns).Update(ctx, o, metav1.UpdateOptions{})
			},
			delete: func(ctx context.Context, c kubernetes.Interface, ns, n string) error {
				return c.AppsV1().Deployments(ns).Delete(ctx, n, metav1.DeleteOptions{})
			},
		},
		{
			name: "batch/v1 Job",
			informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
				return f.Batch().V1().Jobs().Informer()
			},
			get: func(f informers.SharedInformerFactory, ns, n string) (metav1.Object, error) {
				return f.Batch().V1().Jobs().Lister().Jobs(ns).Get(n)
			},
			create: func(ctx context.Context, c kubernetes.Interface, ns, n string) (metav1.Object, error) {
				return c.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
					ObjectMeta: metav1.ObjectMeta{Name: n, Labels: stepLabels("0")},
					Spec:       batchv1.JobSpec{Template: *podTemplate.DeepCopy()},
				}, metav1.CreateOptions{})
			},
			relabel: func(ctx context.Context, c kubernetes.Interface, ns, n, v string) (metav1.Object, error) {
				o, err := c.BatchV1().Jobs(ns).Get(ctx, n, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				o.Labels = stepLabels(v)
				return c.BatchV1().Jobs(ns).Update(ctx, o, metav1.UpdateOptions{})
			},
			delete: func(ctx context.Context, c kubernetes.Interface, ns, n string) error {
				bg := metav1.DeletePropagationBackground
				return c.BatchV1().Jobs(ns).Delete(ctx, n, metav1.DeleteOptions{PropagationPolicy: &bg})
			},
		},
		{
			name: "networking/v1 NetworkPolicy",
			informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
				return f.Networking().V1().NetworkPolicies().Informer()
			},
			get: func(f informers.SharedInformerFactory, ns, n string) (metav1.Object, error) {
				return f.Networking().V1().NetworkPolicies().Lister().NetworkPolicies(ns).Get(n)
			},
			create: func(ctx context.Context, c kubernetes.Interface, ns, n string) (metav1.Object, error) {
				return c.NetworkingV1().NetworkPolicies(ns).Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: stepLabels("0")}}, metav1.CreateOptions{})
			},
			relabel: func(ctx context.Context, c kubernetes.Interface, ns, n, v string) (metav1.Object, error) {
				o, err := c.NetworkingV1().NetworkPolicies(ns).Get(ctx, n, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				o.Labels = stepLabels(v)
				return c.NetworkingV1().NetworkPolicies(ns).Update(ctx, o, metav1.UpdateOptions{})
			},
			delete: func(ctx context.Context, c kubernetes.Interface, ns, n string) error {
				return c.NetworkingV1().NetworkPolicies(ns).Delete(ctx, n, metav1.DeleteOptions{})
			},
		},
		{
			name: "rbac/v1 Role",
			informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
				return f.Rbac().V1().Roles().Informer()
			},
			get: func(f informers.SharedInformerFactory, ns, n string) (metav1.Object, error) {
				return f.Rbac().V1().Roles().Lister().Roles(ns).Get(n)
			},
			create: func(ctx context.Context, c kubernetes.Interface, ns, n string) (metav1.Object, error) {
				return c.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
					ObjectMeta: metav1.ObjectMeta{Name: n, Labels: stepLabels("0")},
					Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
				}, metav1.CreateOptions{})
			},
			relabel: func(ctx context.Context, c kubernetes.Interface, ns, n, v string) (metav1.Object, error) {
				o, err := c.RbacV1().Roles(ns).Get(ctx, n, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				o.Labels = stepLabels(v)
				return c.RbacV1().Roles(ns).Update(ctx, o, metav1.UpdateOptions{})
			},
			delete: func(ctx context.Context, c kubernetes.Interface, ns, n string) error {
				return c.RbacV1().Roles(ns).Delete(ctx, n, metav1.DeleteOptions{})
			},
		},
	}
}

// TestCRUDEventsInOrder creates, updates and deletes real objects of five
// groups and checks that listers and event handlers see every change in order.
func TestCRUDEventsInOrder(t *testing.T) {
	c := setup(t)
	f := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithNamespace(c.ns))
	defer f.Shutdown()
	kinds := crudKinds()
	logs := make([]*eventLog, len(kinds))
	for i, k := range kinds {
		logs[i] = &eventLog{}
		if _, err := k.informer(f).AddEventHandler(logs[i].handler()); err != nil {
			t.Fatalf("%s: AddEventHandler: %v", k.name, err)
		}
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	f.Start(ctx.Done())
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	if err := f.WaitForCacheSyncWithContext(wctx).AsError(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	wcancel()

	for i, k := range kinds {
		log := logs[i]
		t.Run(k.name, func(t *testing.T) {
			// Stepwise: wait for the lister after every write.
			name := "stepwise"
			key := c.ns + "/" + name
			var want []string // expected resourceVersions in order
			waitLister := func(rv string) {
				t.Helper()
				ok := eventually(30*time.Second, 20*time.Millisecond, func() bool {
					o, err := k.get(f, c.ns, name)
					if rv == "" {
						return apierrors.IsNotFound(err)
					}
					return err == nil && o.GetResourceVersion() == rv
				})
				if !ok {
					t.Fatalf("lister did not reach rv %q for %s", rv, key)
				}
			}
			o, err := k.create(ctx, c.client, c.ns, name)
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			want = append(want, o.GetResourceVersion())
			waitLister(o.GetResourceVersion())
			for step := 1; step <= 2; step++ {
				o, err = k.relabel(ctx, c.client, c.ns, name, fmt.Sprint(step))
				if err != nil {
					t.Fatalf("update %d: %v", step, err)
				}
				want = append(want, o.GetResourceVersion())
				waitLister(o.GetResourceVersion())
				if got, err := k.get(f, c.ns, name); err != nil {
					t.Fatalf("lister get after update %d: %v", step, err)
				} else if got.GetLabels()["step"] != fmt.Sprint(step) {
					t.Fatalf("lister has labels %v, want step=%d", got.GetLabels(), step)
				}
			}
			if err := k.delete(ctx, c.client, c.ns, name); err != nil {
				t.Fatalf("delete: %v", err)
			}
			waitLister("")
			checkSequence(t, log, key, want)

			// Burst: no waiting between writes; order must still hold.
			name = "burst"
			key = c.ns + "/" + name
			want = nil
			o, err = k.create(ctx, c.client, c.ns, name)
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			want = append(want, o.GetResourceVersion())
			for step := 1; step <= 5; step++ {
				o, err = k.relabel(ctx, c.client, c.ns, name, fmt.Sprint(step))
				if err != nil {
					t.Fatalf("update %d: %v", step, err)
				}
				want = append(want, o.GetResourceVersion())
			}
			if err := k.delete(ctx, c.client, c.ns, name); err != nil {
				t.Fatalf("delete: %v", err)
			}
			waitLister("")
			checkSequence(t, log, key, want)
		})
	}
}

// checkSequence asserts add(rv0), update(rv0->rv1), ..., delete(rvN) exactly.
func checkSequence(t *testing.T, log *eventLog, key string, rvs []string) {
	t.Helper()
	var got []evt
	ok := eventually(10*time.Second, 20*time.Millisecond, func() bool {
		got = log.forName(key)
		return len(got) >= len(rvs)+1
	})
	if !ok || len(got) != len(rvs)+1 {
		t.Fatalf("%s: got %d events, want %d: %v", key, len(got), len(rvs)+1, got)
	}
	if got[0].Type != "add" || got[0].RV != rvs[0] {
		t.Errorf("%s: first event %v, want add rv=%s", key, got[0], rvs[0])
	}
	for i := 1; i < len(rvs); i++ {
		if got[i].Type != "update" || got[i].RV != rvs[i] || got[i].OldRV != rvs[i-1] {
			t.Errorf("%s: event %d is %v, want update rv=%s old=%s", key, i, got[i], rvs[i], rvs[i-1])
		}
	}
	last := got[len(got)-1]
	// A watched delete carries the deletion's resourceVersion (>= the last write).
	if last.Type != "delete" || last.Unknown || rvInt(last.RV) < rvInt(rvs[len(rvs)-1]) {
		t.Errorf("%s: last event %v, want delete with rv>=%s", key, last, rvs[len(rvs)-1])
	}
}
