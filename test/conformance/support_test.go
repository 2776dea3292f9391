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

package conformance

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	upstream "k8s.io/client-go/informers"
)

// resource is one row of the generated table (resources_generated_test.go).
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	newObject  func() runtime.Object
	ours       func(informers.SharedInformerFactory) accessors
	upstream   func(upstream.SharedInformerFactory) accessors
}

// accessors is what a typed accessor returns, with the typed lister's List
// flattened so that every kind fits one shape.
type accessors struct {
	informer cache.SharedIndexInformer
	typed    cache.SharedIndexInformer
	list     func() ([]runtime.Object, error)
}

func listFunc[T runtime.Object](list func(labels.Selector) ([]T, error)) func() ([]runtime.Object, error) {
	return func() ([]runtime.Object, error) {
		items, err := list(labels.Everything())
		out := make([]runtime.Object, len(items))
		for i, item := range items {
			out[i] = item
		}
		return out, err
	}
}

// object builds a named object of r's kind, in namespace if r is
// namespaced, with the given labels.
func (r resource) object(t testing.TB, namespace, name string, lbls map[string]string) runtime.Object {
	t.Helper()
	obj := r.newObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatalf("%s: %v", r.gvr, err)
	}
	m.SetName(name)
	if r.namespaced {
		m.SetNamespace(namespace)
	}
	m.SetLabels(lbls)
	return obj
}

// seed returns a fake clientset holding two objects of r's kind: "a" in
// namespace ns-a labelled tier=front, and "b" in ns-b labelled tier=back
// (cluster-scoped kinds get no namespace).
func (r resource) seed(t testing.TB) *fake.Clientset {
	t.Helper()
	client := fake.NewSimpleClientset()
	for _, o := range []struct{ ns, name, tier string }{{"ns-a", "a", "front"}, {"ns-b", "b", "back"}} {
		if err := client.Tracker().Add(r.object(t, o.ns, o.name, map[string]string{"tier": o.tier})); err != nil {
			t.Fatalf("%s: seeding the tracker: %v", r.gvr, err)
		}
	}
	return client
}

// keys returns the sorted namespace/name keys of objs.
func keys(t testing.TB, objs []runtime.Object) []string {
	t.Helper()
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		k, err := cache.MetaNamespaceKeyFunc(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func key(r resource, ns, name string) string {
	if r.namespaced {
		return ns + "/" + name
	}
	return name
}

// syncCtx bounds how long a test waits for a fake clientset to sync; it
// only guards against hangs and is never a performance assertion.
func syncCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustSync(t testing.TB, ctx context.Context, f interface {
	WaitForCacheSyncWithContext(context.Context) cache.SyncResult
}) {
	t.Helper()
	if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatalf("caches did not sync: %v", err)
	}
}
