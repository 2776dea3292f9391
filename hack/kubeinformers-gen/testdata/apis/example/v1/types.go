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
