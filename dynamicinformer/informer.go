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

package dynamicinformer

import (
	"context"
	"errors"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamiclister"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/gvrfactory"
)

// Factory is the factory every constructor of this package returns: a
// [DynamicSharedInformerFactory] with the contracts of [informers.Factory]
// for removing an informer and saying why one is not ready. Reach it with a
// type assertion, or get it from [New].
type Factory interface {
	DynamicSharedInformerFactory

	// StartWithContext runs, in goroutines, every informer requested so
	// far that is not running yet, until ctx is done.
	StartWithContext(ctx context.Context)

	// RemoveInformer stops the informer of resource, waits until its
	// goroutines have ended, and drops it with its cache and event
	// handlers; it reports whether there was one. Use it when a custom
	// resource's CustomResourceDefinition is deleted: the informer then
	// sends no further request. ForResource afterwards builds a fresh
	// informer, which the next Start runs. See [informers.Factory].
	RemoveInformer(resource schema.GroupVersionResource) bool

	// Ready returns nil when every started informer has synced and its
	// last list or watch succeeded; otherwise one error naming each
	// informer that is not, with the last error it got. It makes no
	// request. See [informers.Factory].
	Ready() error

	// SyncStatus reports, per started informer, whether it has synced.
	SyncStatus() map[informers.InformerID]bool

	// Notices returns conditions an operator should know of that do not
	// make the informers unready; see [informers.Factory].
	Notices() []string

	// WaitForResourceVersion waits until every started informer of
	// resource reflects namespace ("" for all) at resourceVersion or
	// later, so that a lister read sees the write that returned it. See
	// [informers.Factory.WaitForResourceVersion].
	WaitForResourceVersion(ctx context.Context, resource schema.GroupVersionResource, namespace, resourceVersion string) error
}

// DynamicSharedInformerOption configures a factory of
// [NewDynamicSharedInformerFactoryWithOptions] or [New].
type DynamicSharedInformerOption func(*dynamicSharedInformerFactory) *dynamicSharedInformerFactory

// WithShardSelector limits every informer of the factory to the objects
// shardSelector matches, as client-go v0.38's option of the same name; see
// [informers.WithShardSelector]. A nil or empty selector means no sharding.
func WithShardSelector(shardSelector apisharding.Selector) DynamicSharedInformerOption {
	return WithFactoryOptions(informers.WithShardSelector(shardSelector))
}

// WithFactoryOptions applies options of the module's factory, those that
// apply to dynamic informers: [informers.WithNamespace],
// [informers.WithNamespaces], [informers.WithTweakListOptions],
// [informers.WithTransform], [informers.WithLeanMemory],
// [informers.WithListMode], the shard options,
// [informers.WithResourceOptions] and [informers.WithInformerName].
// [informers.WithDynamicClient] replaces the factory's client. Options that
// concern only typed or metadata informers do nothing here.
//
// Invalid values are errors from [New]. Under
// [NewDynamicSharedInformerFactoryWithOptions] they are logged, and an
// invalid option meant to narrow what is listed (namespaces, selectors,
// shards, per-resource options) keeps the informers it was meant for from
// running, so that they never list more than asked: Ready names them.
func WithFactoryOptions(options ...informers.SharedInformerOption) DynamicSharedInformerOption {
	return func(factory *dynamicSharedInformerFactory) *dynamicSharedInformerFactory {
		factory.options = append(factory.options, options...)
		return factory
	}
}

// NewDynamicSharedInformerFactory returns a factory of dynamic informers
// over all namespaces, with defaultResync as every informer's resync
// period (zero: none).
func NewDynamicSharedInformerFactory(client dynamic.Interface, defaultResync time.Duration) DynamicSharedInformerFactory {
	return NewFilteredDynamicSharedInformerFactory(client, defaultResync, metav1.NamespaceAll, nil)
}

// NewFilteredDynamicSharedInformerFactory returns a factory of dynamic
// informers limited to namespace (all of them for [metav1.NamespaceAll]),
// whose list and watch calls go through tweakListOptions. Listers of its
// informers see only what these filters let through.
func NewFilteredDynamicSharedInformerFactory(client dynamic.Interface, defaultResync time.Duration, namespace string, tweakListOptions TweakListOptionsFunc) DynamicSharedInformerFactory {
	f, _ := newFactory(client, defaultResync, filtered(namespace, tweakListOptions), nil, false)
	return f
}

// NewDynamicSharedInformerFactoryWithOptions returns a factory configured
// by options. It cannot return an error: it logs each invalid option (see
// [WithFactoryOptions]); [New] returns them instead.
func NewDynamicSharedInformerFactoryWithOptions(client dynamic.Interface, defaultResync time.Duration, options ...DynamicSharedInformerOption) DynamicSharedInformerFactory {
	f, _ := newFactory(client, defaultResync, nil, options, false)
	return f
}

// New returns a factory configured by options, like
// [NewDynamicSharedInformerFactoryWithOptions], but checks its input
// first: a nil client, a negative resync period or an invalid option is an
// error that names the problem, and no factory is returned.
func New(client dynamic.Interface, defaultResync time.Duration, options ...DynamicSharedInformerOption) (Factory, error) {
	f, err := newFactory(client, defaultResync, nil, options, true)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// dynamicSharedInformerFactory is the one implementation of Factory; its
// name matches client-go's, so that DynamicSharedInformerOption has the
// same signature.
type dynamicSharedInformerFactory struct {
	*gvrfactory.Factory[informers.InformerID]
	// options are the module's options the DynamicSharedInformerOptions
	// gave, applied after the client.
	options []informers.SharedInformerOption
}

var _ Factory = &dynamicSharedInformerFactory{}

var form = gvrfactory.Form[informers.InformerID]{
	Example: &unstructured.Unstructured{},
	ID: func(resource schema.GroupVersionResource) informers.InformerID {
		return informers.InformerID{Form: informers.FormDynamic, Resource: resource, Type: reflect.TypeOf(&unstructured.Unstructured{})}
	},
	Resource: func(id informers.InformerID) (schema.GroupVersionResource, bool) {
		return id.Resource, id.Form == informers.FormDynamic
	},
	Lister: func(indexer cache.Indexer, resource schema.GroupVersionResource) cache.GenericLister {
		return dynamiclister.NewRuntimeObjectShim(dynamiclister.New(indexer, resource))
	},
}

// newFactory builds the factory on a root factory of its own, without a
// typed client. With check (New) invalid input is an error and no factory
// is returned; without, as client-go's constructors, it is logged.
func newFactory(client dynamic.Interface, defaultResync time.Duration, base []informers.SharedInformerOption, options []DynamicSharedInformerOption, check bool) (*dynamicSharedInformerFactory, error) {
	f, errs := gvrfactory.Apply(&dynamicSharedInformerFactory{}, options)
	all := []informers.SharedInformerOption{informers.WithoutClientset(), informers.WithDynamicBuiltIns()}
	// A nil client is kept out of the root factory's options, where it
	// would be a second error; New reports it once.
	if client != nil {
		all = append(all, informers.WithDynamicClient(client))
	} else if check {
		errs = append(errs, errors.New("the dynamic.Interface is nil"))
	}
	all = append(append(all, base...), f.options...)
	root, err := gvrfactory.Build("dynamicinformer", check, errs,
		func() (informers.Factory, error) { return informers.New(nil, defaultResync, all...) },
		func() informers.Factory {
			// The client-go compatible constructor's factory is a Factory.
			return informers.NewSharedInformerFactoryWithOptions(nil, defaultResync, all...).(informers.Factory)
		})
	if err != nil {
		return nil, err
	}
	f.Factory = gvrfactory.New(form, root, func(resource schema.GroupVersionResource) (gvrfactory.Informer, error) {
		return root.ForResource(resource)
	})
	return f, nil
}

// filtered are the root options of the namespace and tweak that client-go's
// filtered constructors take.
func filtered(namespace string, tweakListOptions TweakListOptionsFunc) []informers.SharedInformerOption {
	return gvrfactory.Filtered(namespace, tweakListOptions, informers.WithNamespace,
		func(tweak func(*metav1.ListOptions)) informers.SharedInformerOption {
			return informers.WithTweakListOptions(tweak)
		})
}

// ForResource returns the shared informer of gvr, of
// *unstructured.Unstructured objects, built in or not. An invalid gvr (an
// empty version, a subresource) gets an informer that never runs, which
// WaitForCacheSync reports as not synced and Ready names.
func (f *dynamicSharedInformerFactory) ForResource(gvr schema.GroupVersionResource) informers.GenericInformer {
	return f.Factory.ForResource(gvr)
}

// NewFilteredDynamicInformer returns an informer of gvr's objects as
// *unstructured.Unstructured, limited to namespace and with its list and
// watch calls through tweakListOptions, outside any factory: run it
// yourself. Besides indexers it has the namespace index. Like a factory's,
// it reports synced once its first watch has returned.
func NewFilteredDynamicInformer(client dynamic.Interface, gvr schema.GroupVersionResource, namespace string, resyncPeriod time.Duration, indexers cache.Indexers, tweakListOptions TweakListOptionsFunc) informers.GenericInformer {
	f, _ := newFactory(client, resyncPeriod, filtered(namespace, tweakListOptions), nil, false)
	return f.Standalone(gvr, indexers)
}
