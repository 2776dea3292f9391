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
	"iter"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	upstream "k8s.io/client-go/informers"
)

// upstreamResource is one typed informer accessor of client-go's factory,
// found by reflection and described from sources the generator never reads:
// the Go type its lister returns (mapped to a kind by client-go's scheme),
// the lister's shape (namespaced listers have a Pods(namespace)-style
// method), and the informer that accessor hands out.
type upstreamResource struct {
	path       string // e.g. Core().V1().Pods()
	gvk        schema.GroupVersionKind
	namespaced bool
	informer   cache.SharedIndexInformer
}

// walkUpstream calls every Group().Version().Resource() accessor of f.
func walkUpstream(t *testing.T, f upstream.SharedInformerFactory) []upstreamResource {
	t.Helper()
	var out []upstreamResource
	fv := reflect.ValueOf(f)
	for group := range accessorsReturning(fv, isPackageInterface) {
		gv := fv.MethodByName(group).Call(nil)[0]
		for version := range accessorsReturning(gv, isPackageInterface) {
			vv := gv.MethodByName(version).Call(nil)[0]
			for res := range accessorsReturning(vv, isInformerAccessor) {
				path := group + "()." + version + "()." + res + "()"
				out = append(out, describeUpstream(t, path, vv.MethodByName(res).Call(nil)[0]))
			}
		}
	}
	return out
}

// accessorsReturning yields the names of v's niladic single-result methods
// whose result type satisfies pred.
func accessorsReturning(v reflect.Value, pred func(reflect.Type) bool) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := range v.NumMethod() {
			m := v.Type().Method(i)
			mt := v.Method(i).Type()
			if mt.NumIn() == 0 && mt.NumOut() == 1 && pred(mt.Out(0)) && !yield(m.Name) {
				return
			}
		}
	}
}

// isPackageInterface matches client-go's per-group and per-version
// "Interface" types (informers/core, informers/core/v1, ...).
func isPackageInterface(t reflect.Type) bool {
	return t.Kind() == reflect.Interface && t.Name() == "Interface" &&
		strings.HasPrefix(t.PkgPath(), "k8s.io/client-go/informers/")
}

// isInformerAccessor matches the typed informer interfaces (PodInformer, ...).
func isInformerAccessor(t reflect.Type) bool {
	if t.Kind() != reflect.Interface {
		return false
	}
	_, hasInformer := t.MethodByName("Informer")
	_, hasLister := t.MethodByName("Lister")
	return hasInformer && hasLister
}

func describeUpstream(t *testing.T, path string, acc reflect.Value) upstreamResource {
	t.Helper()
	r := upstreamResource{path: path}
	r.informer = acc.MethodByName("Informer").Call(nil)[0].Interface().(cache.SharedIndexInformer)

	// The lister interface's List returns []*T: T is the object type.
	lm, _ := acc.Type().MethodByName("Lister")
	lister := lm.Type.Out(0)
	list, ok := lister.MethodByName("List")
	if !ok || list.Type.NumOut() != 2 || list.Type.Out(0).Kind() != reflect.Slice {
		t.Fatalf("%s: lister %v has no List returning a slice", path, lister)
	}
	obj, ok := reflect.New(list.Type.Out(0).Elem().Elem()).Interface().(runtime.Object)
	if !ok {
		t.Fatalf("%s: lister lists %v, not a runtime.Object", path, list.Type.Out(0).Elem())
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) != 1 {
		t.Fatalf("%s: scheme kinds for %T: %v, %v; want exactly one", path, obj, gvks, err)
	}
	r.gvk = gvks[0]

	// A namespaced lister has a method taking a namespace and returning a
	// namespace lister (Get and List); a cluster-scoped one does not.
	for i := range lister.NumMethod() {
		m := lister.Method(i).Type
		if m.NumIn() == 1 && m.In(0).Kind() == reflect.String && m.NumOut() == 1 && m.Out(0).Kind() == reflect.Interface {
			_, get := m.Out(0).MethodByName("Get")
			_, lst := m.Out(0).MethodByName("List")
			r.namespaced = r.namespaced || get && lst
		}
	}
	return r
}

// TestTableMatchesFactory checks the generated test table, and the
// library's SupportedResources and IsNamespaced, against client-go itself:
// every typed accessor of client-go's factory (found by reflection) must have
// exactly one table row with the same group, version and kind (from
// client-go's scheme) and the same scope (from the lister's shape), and
// client-go's own ForResource must accept the row's GVR and return the
// informer (the same cache) that accessor created. A generator bug in a plural, a scope or
// the set of resources therefore fails here, even though the table and the
// library come from the same generator run.
func TestTableMatchesFactory(t *testing.T) {
	up := upstream.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	defer up.Shutdown()
	oracle := walkUpstream(t, up)
	if len(oracle) == 0 {
		t.Fatal("found no typed accessors on client-go's factory; the reflection walk is broken")
	}

	byGVK := map[schema.GroupVersionKind][]resource{}
	for _, r := range resources {
		gvk := r.gvr.GroupVersion().WithKind(r.kind)
		byGVK[gvk] = append(byGVK[gvk], r)
	}
	matched := map[schema.GroupVersionResource]bool{}
	for _, o := range oracle {
		rows := byGVK[o.gvk]
		if len(rows) != 1 {
			t.Errorf("client-go %s (%v): %d table rows, want 1", o.path, o.gvk, len(rows))
			continue
		}
		r := rows[0]
		matched[r.gvr] = true
		if r.namespaced != o.namespaced {
			t.Errorf("%s: table says namespaced=%v, client-go's lister says %v", r.gvr, r.namespaced, o.namespaced)
		}
		if got := informers.IsNamespaced(r.gvr); got != o.namespaced {
			t.Errorf("IsNamespaced(%s) = %v, client-go's lister says %v", r.gvr, got, o.namespaced)
		}
		gi, err := up.ForResource(r.gvr)
		if err != nil {
			t.Errorf("%s: client-go's ForResource rejects the table's GVR (wrong plural?): %v", r.gvr, err)
			continue
		}
		// Informer() wraps the shared informer anew on every call, so
		// compare what it wraps: the cache.
		if gi.Informer().GetIndexer() != o.informer.GetIndexer() {
			t.Errorf("%s: client-go's ForResource returns another informer than %s", r.gvr, o.path)
		}
	}
	for _, r := range resources {
		if !matched[r.gvr] {
			t.Errorf("table row %s (kind %s) has no typed accessor in client-go", r.gvr, r.kind)
		}
	}

	table := map[schema.GroupVersionResource]bool{}
	for _, r := range resources {
		table[r.gvr] = true
	}
	lib := informers.SupportedResources()
	for _, gvr := range lib {
		if !table[gvr] {
			t.Errorf("SupportedResources has %s, the table does not", gvr)
		}
		delete(table, gvr)
	}
	for gvr := range table {
		t.Errorf("the table has %s, SupportedResources does not", gvr)
	}
	if len(resources) != len(oracle) {
		t.Errorf("table has %d resources, client-go's factory has %d typed accessors", len(resources), len(oracle))
	}
	t.Logf("%d client-go accessors, %d table rows, %d supported resources", len(oracle), len(resources), len(lib))
}
