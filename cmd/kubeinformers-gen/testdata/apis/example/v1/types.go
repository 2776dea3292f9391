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

package v1

// ObjectMeta stands in for metav1.ObjectMeta: the generator reads syntax only.
type ObjectMeta struct{}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Widget is namespaced; its tag block is separated from its doc comment.
type Widget struct{ ObjectMeta }

// WidgetList has no tags and gets no informer.
type WidgetList struct{}

// +genclient
// +genclient:nonNamespaced

// Gadget is cluster-scoped.
type Gadget struct{ ObjectMeta }

// +genclient
// +genclient:noVerbs

// Review has no verbs and so no informer.
type Review struct{ ObjectMeta }

// +genclient
// +genclient:onlyVerbs=create

// Request can only be created: no informer.
type Request struct{ ObjectMeta }

// +genclient
// +genclient:onlyVerbs=list,watch,get
// +genclient:method=GetScale,verb=get,subresource=scale,result=Scale

// Status can be listed and watched, and so gets an informer.
type Status struct{ ObjectMeta }

// +genclient
// +genclient:skipVerbs=watch

// Snapshot cannot be watched: no informer.
type Snapshot struct{ ObjectMeta }

// +genclient
// +genclient:readonly

// Endpoints keeps its irregular plural: "endpoints".
type Endpoints struct{ ObjectMeta }

// Policy is a doc comment directly followed by the tags.
// +genclient
// +genclient:skipVerbs=deleteCollection
type Policy struct{ ObjectMeta }

// +genclient
// +genclient=false

// Disabled opts out with +genclient=false.
type Disabled struct{ ObjectMeta }

// Untagged has no +genclient at all.
type Untagged struct{ ObjectMeta }
