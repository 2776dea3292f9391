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

package gensupport

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/accessor"
	"github.com/kubeinformers/informers/internal/binding"
	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internalinterfaces"
)

// TypedObject is what the Go type of a typed resource is: a pointer to an
// API struct, such as *examplev1.Gadget, that is a [runtime.Object] with
// object metadata.
type TypedObject interface {
	cache.Object
	runtime.Object
}

// Requests are the list and watch calls of one resource in one namespace
// (or cluster-wide), as a typed client such as
// client.ExampleV1().Gadgets(namespace) makes them. Build them with
// [RequestsOf].
type Requests struct {
	List  func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// ResourceClient is the part of a typed resource client (client-gen's
// GadgetInterface, say) that an informer needs. L is its list type.
type ResourceClient[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// RequestsOf reduces a typed resource client to its [Requests].
func RequestsOf[L runtime.Object](client ResourceClient[L]) Requests {
	r := listwatch.Of[L](client)
	return Requests{List: r.List, Watch: r.Watch}
}

// listwatch returns the calls of client in namespace, as the list/watch
// layer takes them. A bound type keeps its client's encoding.
func (r *TypedResource[T, C]) listwatch(client C, namespace string) listwatch.Requests {
	q := r.requests(client, namespace)
	return listwatch.Requests{List: q.List, Watch: q.Watch}
}

// TypedResource describes one typed resource of a generated group: its
// GroupVersionResource, its scope, its Go type T and how a clientset of
// type C lists and watches it. Generated code declares one per kind with
// [NewTypedResource] and passes them to [Bind]; it also builds the kind's
// standalone informers with [TypedResource.NewInformer].
type TypedResource[T TypedObject, C any] struct {
	resource   schema.GroupVersionResource
	namespaced bool
	example    T
	requests   func(client C, namespace string) Requests
}

// NewTypedResource describes a typed resource: resource is what the API
// server serves it as (group, version and the plural, lower-case
// resource), namespaced its scope, example an empty object of its Go type
// (&examplev1.Gadget{}), and requests returns its list and watch calls
// through a clientset for a namespace ("" for all namespaces, and always
// "" for a cluster-scoped resource), such as
//
//	func(c versioned.Interface, namespace string) informers.Requests {
//		return informers.RequestsOf(c.ExampleV1().Gadgets(namespace))
//	}
//
// It only records them; [Bind] checks them.
func NewTypedResource[T TypedObject, C any](resource schema.GroupVersionResource, namespaced bool, example T, requests func(client C, namespace string) Requests) *TypedResource[T, C] {
	return &TypedResource[T, C]{resource: resource, namespaced: namespaced, example: example, requests: requests}
}

// Resource returns the resource the API server serves the type as.
func (r *TypedResource[T, C]) Resource() schema.GroupVersionResource { return r.resource }

// Namespaced reports whether the resource's objects live in a namespace.
func (r *TypedResource[T, C]) Namespaced() bool { return r.namespaced }

// NewInformer builds an informer of the resource that no factory shares,
// the way the generated New…InformerWithOptions functions do: it lists and
// watches through client in namespace ([metav1.NamespaceAll] for all;
// ignored for a cluster-scoped resource), with options' resync period,
// indexers, informer name (metrics identity, may be nil) and tweak of
// every request (may be nil). A nil client does not panic in the
// informer's goroutine: its list and watch return an error naming the
// resource.
func (r *TypedResource[T, C]) NewInformer(client C, namespace string, options internalinterfaces.InformerOptions) cache.TypedSharedIndexInformer[T] {
	if !r.namespaced {
		namespace = metav1.NamespaceAll
	}
	cfg := listwatch.Config{Options: listwatch.Options{Resource: r.resource, Missing: missingClient[C]()}, Namespace: namespace}
	if !isNil(client) && r.requests != nil {
		cfg.Requests = func(ns string) listwatch.Requests { return r.listwatch(client, ns) }
	}
	cfg.Tweak = options.TweakListOptions
	informer := cache.NewSharedIndexInformerWithOptions(
		cache.ToListWatcherWithWatchListSemantics(listwatch.New(cfg), client),
		r.example,
		cache.SharedIndexInformerOptions{
			ResyncPeriod:      options.ResyncPeriod,
			Indexers:          options.Indexers,
			Identifier:        options.InformerName.WithResource(r.resource),
			ObjectDescription: r.resource.String(),
		},
	)
	return cache.NewTypedSharedIndexInformer[T](informer)
}

// BindableResource is a resource that [Bind] takes with a clientset of
// type C: a [*TypedResource] with that client type.
type BindableResource[C any] interface {
	// bindWith returns the resource as the factory holds it, its informer
	// served through client.
	bindWith(client C) (*binding.Resource, error)
}

func (r *TypedResource[T, C]) bindWith(client C) (*binding.Resource, error) {
	t := reflect.TypeOf(r.example)
	var problems []error
	if err := binding.ValidateResource(r.resource); err != nil {
		problems = append(problems, err)
	}
	if t == nil || t.Kind() != reflect.Pointer || reflect.ValueOf(r.example).IsNil() {
		problems = append(problems, fmt.Errorf("the example object is %#v; it must be an empty object of the type, such as &examplev1.Gadget{}", r.example))
	}
	if r.requests == nil {
		problems = append(problems, errors.New("the requests function is nil"))
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	b := &binding.Resource{
		Resource:   r.resource,
		Namespaced: r.namespaced,
		Type:       t,
		Example:    r.example,
		Client:     client,
		Missing:    missingClient[C](),
		Typed:      func(i cache.SharedIndexInformer) cache.SharedIndexInformer { return accessor.Typed[T](i) },
	}
	if !isNil(client) {
		b.Requests = func(ns string) listwatch.Requests { return r.listwatch(client, ns) }
	}
	return b, nil
}

// isNil reports whether v is nil or a nil pointer, map, slice, channel or
// function in an interface.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// missingClient names a nil clientset of type C, for errors.
func missingClient[C any]() string {
	return fmt.Sprintf("the clientset (%v) is nil", reflect.TypeFor[C]())
}
