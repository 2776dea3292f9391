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

package dynamicinformer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/dynamicinformer"
)

// TestWaitForResourceVersion: the drop-in's factory waits on its dynamic
// informers as the module's does, errors included.
func TestWaitForResourceVersion(t *testing.T) {
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	client := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"})
	f, err := dynamicinformer.New(client, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := f.WaitForResourceVersion(ctx, widgets, "a", "5"); !errors.Is(err, informers.ErrUnknownResource) {
		t.Fatalf("before ForResource: %v, want ErrUnknownResource", err)
	}
	lister := f.ForResource(widgets).Lister()
	f.StartWithContext(ctx)
	defer f.Shutdown()
	defer cancel()
	f.WaitForCacheSync(ctx.Done())
	w := &unstructured.Unstructured{}
	w.SetAPIVersion("example.com/v1")
	w.SetKind("Widget")
	w.SetNamespace("a")
	w.SetName("w1")
	w.SetResourceVersion("5") // as a server would: the fake sets none
	if _, err := client.Resource(widgets).Namespace("a").Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitForResourceVersion(ctx, widgets, "a", "5"); err != nil {
		t.Fatalf("wait: %v", err)
	}
	if _, err := lister.ByNamespace("a").Get("w1"); err != nil {
		t.Fatalf("after the wait, the lister lacks w1: %v", err)
	}
}
