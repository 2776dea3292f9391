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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Gadget is a namespaced device that a controller keeps running: the spec
// says what is wanted, the status what the controller observed.
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GadgetSpec   `json:"spec"`
	Status GadgetStatus `json:"status,omitempty"`
}

// GadgetSpec is the desired state of a Gadget.
type GadgetSpec struct {
	// ClassName names the cluster-scoped GadgetClass of this gadget.
	ClassName string `json:"className"`
	// Replicas is how many copies should run.
	Replicas int32 `json:"replicas"`
	// Paused stops the controller from acting on this gadget.
	Paused bool `json:"paused,omitempty"`
}

// GadgetStatus is the observed state of a Gadget.
type GadgetStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ReadyReplicas is how many copies are ready.
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Phase is Pending, Running or Failed.
	Phase string `json:"phase,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GadgetList is a list of Gadgets.
type GadgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Gadget `json:"items"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GadgetClass is a cluster-scoped kind of gadget, which Gadgets name in
// spec.className.
type GadgetClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GadgetClassSpec `json:"spec"`
}

// GadgetClassSpec describes a GadgetClass.
type GadgetClassSpec struct {
	// Driver names the controller that runs gadgets of this class.
	Driver string `json:"driver"`
	// MaxReplicas caps spec.replicas of the class's gadgets; 0 is no cap.
	MaxReplicas int32 `json:"maxReplicas,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GadgetClassList is a list of GadgetClasses.
type GadgetClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []GadgetClass `json:"items"`
}
