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

package clientgo_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/clientgo"
	corev1informers "github.com/kubeinformers/informers/core/v1"
)

func newFactory() informers.SharedInformerFactory {
	return informers.NewSharedInformerFactory(fake.NewClientset(), 0)
}

// TestSameIndexerEitherOrder: the view and the factory hand out one
// informer, whichever of them is asked first.
func TestSameIndexerEitherOrder(t *testing.T) {
	t.Run("factory first", func(t *testing.T) {
		f := newFactory()
		ours := f.Core().V1().Pods().Informer()
		view := clientgo.Adapt(f).Core().V1().Pods().Informer()
		if ours != view || ours.GetIndexer() != view.GetIndexer() {
			t.Fatal("the view built a second pods informer")
		}
	})
	t.Run("view first", func(t *testing.T) {
		f := newFactory()
		view := clientgo.Adapt(f).Core().V1().Pods().Informer()
		ours := f.Core().V1().Pods().Informer()
		if ours != view || ours.GetIndexer() != view.GetIndexer() {
			t.Fatal("the factory built a second pods informer after the view")
		}
	})
}

// TestEveryKindAccessor walks every group, version and kind accessor of the
// view by reflection and checks that each returns the factory's informer,
// typed informer and a lister over the same cache.
func TestEveryKindAccessor(t *testing.T) {
	f := newFactory()
	view := clientgo.Adapt(f)
	kinds := 0
	for _, g := range accessorMethods(reflect.ValueOf(view)) {
		ourGroup := reflect.ValueOf(f).MethodByName(g.name)
		if !ourGroup.IsValid() {
			t.Errorf("the factory has no group accessor %s", g.name)
			continue
		}
		for _, v := range accessorMethods(g.value) {
			ourVersion := ourGroup.Call(nil)[0].MethodByName(v.name)
			for _, k := range accessorMethods(v.value) {
				kinds++
				path := g.name + "()." + v.name + "()." + k.name + "()"
				ourKind := ourVersion.Call(nil)[0].MethodByName(k.name).Call(nil)[0]
				ours := call[cache.SharedIndexInformer](ourKind, "Informer")
				if got := call[cache.SharedIndexInformer](k.value, "Informer"); got != ours {
					t.Errorf("%s.Informer() through the view is not the factory's", path)
				}
				if got := call[cache.SharedIndexInformer](k.value, "TypedInformer"); got.GetIndexer() != ours.GetIndexer() {
					t.Errorf("%s.TypedInformer() through the view has another cache", path)
				}
				// A lister over the factory's cache sees what the cache holds.
				if n, err := listOne(ours.GetIndexer(), k.value.MethodByName("Lister").Call(nil)[0]); err != nil || n != 1 {
					t.Errorf("%s.Lister() through the view lists %d objects (%v) after one was added to the factory's cache", path, n, err)
				}
			}
		}
	}
	if want := len(informers.SupportedResources()); kinds != want {
		t.Errorf("the view has %d kind accessors, the factory supports %d resources", kinds, want)
	}
}

// listOne adds one object of the lister's type to indexer and returns how
// many objects the lister lists.
func listOne(indexer cache.Indexer, lister reflect.Value) (int, error) {
	list := lister.MethodByName("List")
	obj := reflect.New(list.Type().Out(0).Elem().Elem()).Interface() // []*T → new(T)
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0, err
	}
	m.SetName("x")
	if err := indexer.Add(obj); err != nil {
		return 0, err
	}
	out := list.Call([]reflect.Value{reflect.ValueOf(labels.Everything())})
	if err, _ := out[1].Interface().(error); err != nil {
		return 0, err
	}
	return out[0].Len(), nil
}

type method struct {
	name  string
	value reflect.Value // what the accessor returned
}

// accessorMethods calls every method of v that takes nothing and returns
// one interface, which are the group, version and kind accessors.
// InformerName is not one: it returns a pointer.
func accessorMethods(v reflect.Value) []method {
	var out []method
	for i := range v.NumMethod() {
		m := v.Type().Method(i)
		if m.Type.NumIn() != 1 || m.Type.NumOut() != 1 || m.Type.Out(0).Kind() != reflect.Interface {
			continue
		}
		out = append(out, method{m.Name, v.Method(i).Call(nil)[0].Elem()})
	}
	return out
}

func call[T any](v reflect.Value, name string) T {
	return v.MethodByName(name).Call(nil)[0].Interface().(T)
}

// TestForResource: for every supported resource the view's ForResource is
// the factory's, and an unknown one is the factory's error with a nil
// informer, not a non-nil interface holding nil.
func TestForResource(t *testing.T) {
	f := newFactory()
	view := clientgo.Adapt(f)
	for _, gvr := range informers.SupportedResources() {
		got, err := view.ForResource(gvr)
		if err != nil {
			t.Errorf("%s: %v", gvr, err)
			continue
		}
		want, err := f.ForResource(gvr)
		if err != nil {
			t.Fatalf("%s: the factory: %v", gvr, err)
		}
		if got.Informer() != want.Informer() {
			t.Errorf("%s: ForResource through the view is not the factory's informer", gvr)
		}
	}
	unknown := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	got, err := view.ForResource(unknown)
	if !errors.Is(err, informers.ErrUnknownResource) {
		t.Errorf("ForResource(%s) error = %v, want ErrUnknownResource", unknown, err)
	}
	if got != nil {
		t.Errorf("ForResource(%s) = %#v with an error, want nil", unknown, got)
	}
}

// TestInformerFor: InformerFor through the view fills the factory's one
// slot per type, so the typed accessor finds it afterwards, and the
// factory's informer name is the view's.
func TestInformerFor(t *testing.T) {
	name, err := cache.NewInformerName("clientgo-adapt-test")
	if err != nil {
		t.Fatal(err)
	}
	defer name.Release()
	f := informers.NewSharedInformerFactoryWithOptions(fake.NewClientset(), 0, informers.WithInformerName(name))
	view := clientgo.Adapt(f)
	if view.InformerName() != f.InformerName() {
		t.Errorf("InformerName through the view = %v, want the factory's %v", view.InformerName(), f.InformerName())
	}
	built := 0
	got := view.InformerFor(&corev1.Secret{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		built++
		return corev1informers.NewSecretInformer(c, "", resync, cache.Indexers{})
	})
	if built != 1 {
		t.Fatalf("newFunc ran %d times, want once", built)
	}
	if f.Core().V1().Secrets().Informer() != got {
		t.Error("the factory does not hand out the informer InformerFor built through the view")
	}
}

// TestAccessorsDoNotAllocate: the view adds no allocation to the factory's
// accessor path.
func TestAccessorsDoNotAllocate(t *testing.T) {
	f := newFactory()
	view := clientgo.Adapt(f)
	view.Core().V1().Pods().Lister() // build once
	ours := testing.AllocsPerRun(100, func() { f.Core().V1().Pods().Lister() })
	viewed := testing.AllocsPerRun(100, func() { view.Core().V1().Pods().Lister() })
	if viewed > ours {
		t.Errorf("Core().V1().Pods().Lister() through the view allocates %v times per call, the factory %v", viewed, ours)
	}
	viewed = testing.AllocsPerRun(100, func() { view.Apps().V1().Deployments().TypedInformer() })
	if ours := testing.AllocsPerRun(100, func() { f.Apps().V1().Deployments().TypedInformer() }); viewed > ours {
		t.Errorf("Apps().V1().Deployments().TypedInformer() through the view allocates %v times per call, the factory %v", viewed, ours)
	}
}

func TestAdaptNil(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Error("Adapt(nil) did not panic")
		}
	}()
	clientgo.Adapt(nil)
}
