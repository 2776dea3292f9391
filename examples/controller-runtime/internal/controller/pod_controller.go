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

package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// PhaseAnnotation is the annotation in which PodReconciler records the
// phase of the Pod it last reconciled.
const PhaseAnnotation = "shop.example.com/seen-phase"

// PodReconciler records in each Pod's PhaseAnnotation the phase it saw.
type PodReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch

// Reconcile reads the Pod req names from the cache and, if its phase
// differs from its PhaseAnnotation, patches the annotation.
func (r *PodReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	var pod corev1.Pod
	if err := r.Get(ctx, req.NamespacedName, &pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	phase := string(pod.Status.Phase)
	if pod.Annotations[PhaseAnnotation] == phase {
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(pod.DeepCopy())
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[PhaseAnnotation] = phase
	if err := r.Patch(ctx, &pod, patch); err != nil {
		return ctrl.Result{}, err
	}
	log.Info("Reconciled Pod", "phase", phase)
	return ctrl.Result{}, nil
}

// SetupWithManager sets the reconciler up with mgr.
func (r *PodReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Pod{}).
		Named("pod").
		Complete(r)
}
