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

package informers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/kubeinformers/informers"
)

// checker is the shape of controller-runtime's healthz.Checker; a
// factory's Ready fits it without importing controller-runtime.
type checker func(req *http.Request) error

// ExampleFactory shows one factory serving a built-in resource, a custom
// resource and a metadata-only informer, with Ready behind /readyz.
// Against a real cluster, build it with [informers.NewForConfig].
func ExampleFactory() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widget := &unstructured.Unstructured{}
	widget.SetAPIVersion("example.com/v1")
	widget.SetKind("Widget")
	widget.SetNamespace("shop")
	widget.SetName("blue")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"}, widget)
	scheme := metadatafake.NewTestScheme()
	_ = metav1.AddMetaToScheme(scheme)
	meta := metadatafake.NewSimpleMetadataClient(scheme)
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}})

	factory, err := informers.New(client, 0, informers.WithDynamicClient(dyn), informers.WithMetadataClient(meta))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer factory.Shutdown()
	defer cancel()

	pods := factory.Core().V1().Pods().Lister()
	custom, err := factory.ForResource(widgets) // a dynamic informer: widgets are not built in
	if err != nil {
		fmt.Println(err)
		return
	}
	deployments, err := factory.ForMetadata(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"})
	if err != nil {
		fmt.Println(err)
		return
	}

	// Ready backs a readiness endpoint; it makes no request.
	var readyz checker = func(*http.Request) error { return factory.Ready() }
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := readyz(r); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})

	factory.StartWithContext(ctx)
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		fmt.Println(err)
		return
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	fmt.Println("readyz:", rec.Code)

	pod, _ := pods.Pods("shop").Get("web-1")
	blue, _ := custom.Lister().ByNamespace("shop").Get("blue")
	fmt.Println("pod:", pod.Name, "widget:", blue.(*unstructured.Unstructured).GetName(), "deployments:", len(deployments.Informer().GetStore().List()))

	// Stop watching widgets, for example because their CRD was deleted.
	fmt.Println("removed:", factory.RemoveInformer(widgets))
	// Output:
	// readyz: 200
	// pod: web-1 widget: blue deployments: 0
	// removed: true
}
