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
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/binding"
)

// Binding is a set of typed resources bound to an [informers.Factory] by
// [Bind]. The factory package kubeinformers-gen generates wraps one in its
// SharedInformerFactory view, and the generated kind accessors reach their
// informers through it ([Binder], [Kind]).
type Binding struct {
	factory   informers.Factory
	host      binding.Host
	resources map[schema.GroupVersionResource]*binding.Resource
}

// Binder is implemented by the generated factory views: it hands the
// generated accessors ([Kind.Init]) the Binding their informers come from.
type Binder interface {
	Binding() *Binding
}

// Bind binds typed resources, served through client, to factory: from
// then on their informers are typed informers of that factory, built and
// run like the built-in ones. Each of them
//
//   - is requested through a [Kind] accessor, [Binding.InformerFor], the
//     factory's InformerFor with an object of its type, or ForResource,
//     which returns the typed informer instead of a dynamic one;
//   - takes the factory's options: [informers.WithResourceOptions] given
//     for its resource (with or without a dynamic client),
//     [informers.WithNamespace] and [informers.WithNamespaces] if it is
//     namespaced, [informers.WithTweakListOptions],
//     [informers.WithTransform], [informers.WithLeanMemory],
//     [informers.WithCustomResyncConfig], the shard options and the
//     membership;
//   - starts with the factory's Start, is waited for by WaitForCacheSync,
//     stops with Shutdown or [informers.Factory.RemoveInformer], and is
//     named by resource in [informers.Factory.Ready],
//     [informers.Factory.SyncStatus] and sync errors.
//
// Bind checks what needs the resources' scope and client: a nil client,
// namespaces or a namespace shard in WithResourceOptions for a
// cluster-scoped resource. It returns these as one error naming each
// resource, and the resources they concern are bound refused (fail
// closed): their informers never run, make no request, and Ready names
// them with the error. Resources that cannot be bound at all (an invalid
// or built-in resource, no example object, the resource bound before to
// another Go type or scope) are left out, also with an error. The Binding
// is returned whenever factory is one of package informers', so that
// constructors that cannot return an error, as the generated
// NewSharedInformerFactory, log it and go on.
//
// A resource is bound once per factory: binding it again, to the same Go
// type and scope (calling a generated New twice, say), shares the first
// binding's informer and client.
//
// factory must come from package informers ([informers.New],
// [informers.NewForConfig], [informers.NewSharedInformerFactoryWithOptions],
// …).
func Bind[C any](factory informers.Factory, client C, resources ...BindableResource[C]) (*Binding, error) {
	host, ok := factory.(binding.Host)
	if !ok || isNil(factory) {
		return nil, fmt.Errorf("informers: Bind: the factory %T is not one of package informers' (use informers.New or NewForConfig)", factory)
	}
	var clientErr error
	if isNil(client) {
		clientErr = fmt.Errorf("not started: %s", missingClient[C]())
	}
	b := &Binding{factory: factory, host: host, resources: make(map[schema.GroupVersionResource]*binding.Resource, len(resources))}
	var errs []error
	for i, res := range resources {
		if res == nil {
			errs = append(errs, fmt.Errorf("resource %d is nil", i))
			continue
		}
		r, err := res.bindWith(client)
		if err != nil {
			errs = append(errs, fmt.Errorf("%v: %w", resourceName(res), err))
			continue
		}
		bound, err := host.BindResource(r, clientErr)
		if bound != nil {
			b.resources[bound.Resource] = bound
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return b, fmt.Errorf("informers: Bind: %w", errors.Join(errs...))
	}
	return b, nil
}

// Factory returns the factory the resources are bound to.
func (b *Binding) Factory() informers.Factory { return b.factory }

// Resources returns the resources bound by this Binding, sorted.
func (b *Binding) Resources() []schema.GroupVersionResource {
	return slices.SortedFunc(maps.Keys(b.resources), func(x, y schema.GroupVersionResource) int {
		return strings.Compare(x.String(), y.String())
	})
}

// InformerFor is the factory's InformerFor for the generated view, whose
// InformerFor takes the user's clientset: it returns the shared informer
// of obj's type. For a bound type that is the bound typed informer, and
// newFunc is not called; for any other type, the first call builds it
// with newFunc and the type's resync period, as the factory's InformerFor
// does.
func (b *Binding) InformerFor(obj runtime.Object, newFunc func(resyncPeriod time.Duration) cache.SharedIndexInformer) cache.SharedIndexInformer {
	return b.factory.InformerFor(obj, func(_ kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return newFunc(resync)
	})
}

// resourceName names a resource Bind could not take, for its error.
func resourceName(res any) string {
	if r, ok := res.(interface {
		Resource() schema.GroupVersionResource
	}); ok {
		return r.Resource().String()
	}
	return fmt.Sprintf("%T", res)
}
