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

// Package controller holds the example operator's reconcilers, as
// kubebuilder lays them out: one file per kind, each with its
// SetupWithManager.
package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	shopv1 "github.com/kubeinformers/informers/examples/controller-runtime/api/v1"
)

// WidgetReconciler writes into each Widget's status the number of Pods its
// selector selects.
type WidgetReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// +kubebuilder:rbac:groups=shop.example.com,resources=widgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=shop.example.com,resources=widgets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// Reconcile counts the Pods of the Widget req names, read from the cache,
// and writes the count and the generation it is of into the status.
func (r *WidgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	var widget shopv1.Widget
	if err := r.Get(ctx, req.NamespacedName, &widget); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(req.Namespace), client.MatchingLabels(widget.Spec.Selector)); err != nil {
		return ctrl.Result{}, err
	}
	count := int32(len(pods.Items))
	if widget.Status.Pods == count && widget.Status.ObservedGeneration == widget.Generation {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(widget.DeepCopy())
	widget.Status.Pods = count
	widget.Status.ObservedGeneration = widget.Generation
	if err := r.Status().Patch(ctx, &widget, patch); err != nil {
		return ctrl.Result{}, err
	}
	log.Info("Reconciled Widget", "pods", count, "generation", widget.Generation)
	return ctrl.Result{}, nil
}

// widgetsOfPod maps a Pod to the Widgets of its namespace that select it.
func (r *WidgetReconciler) widgetsOfPod(ctx context.Context, pod client.Object) []reconcile.Request {
	var widgets shopv1.WidgetList
	if err := r.List(ctx, &widgets, client.InNamespace(pod.GetNamespace())); err != nil {
		logf.FromContext(ctx).Error(err, "Listing the Widgets of a Pod")
		return nil
	}
	var requests []reconcile.Request
	for _, w := range widgets.Items {
		if labels.SelectorFromSet(w.Spec.Selector).Matches(labels.Set(pod.GetLabels())) {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&w)})
		}
	}
	return requests
}

// SetupWithManager sets the reconciler up with mgr: it reconciles a Widget
// when the Widget changes and when one of its Pods comes, changes or goes.
func (r *WidgetReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&shopv1.Widget{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.widgetsOfPod)).
		Named("widget").
		Complete(r)
}
