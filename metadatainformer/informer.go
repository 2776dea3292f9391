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

package metadatainformer

import (
	"context"
	"errors"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatalister"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/gvrfactory"
)

// Factory is the factory every constructor of this package returns: a
// [SharedInformerFactory] with the contracts of [informers.Factory] for
// removing an informer and saying why one is not ready. Reach it with a
// type assertion, or get it from [New].
type Factory interface {
	SharedInformerFactory

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

// SharedInformerOption configures a factory of
// [NewSharedInformerFactoryWithOptions] or [New].
type SharedInformerOption func(*metadataSharedInformerFactory) *metadataSharedInformerFactory

// WithTransform sets a function that every informer of the factory applies
// to objects before caching them. A nil function sets none.
func WithTransform(transform cache.TransformFunc) SharedInformerOption {
	return WithFactoryOptions(informers.WithTransform(transform))
}

// WithShardSelector limits every informer of the factory to the objects
// shardSelector matches, as client-go v0.38's option of the same name; see
// [informers.WithShardSelector]. A nil or empty selector means no sharding.
func WithShardSelector(shardSelector apisharding.Selector) SharedInformerOption {
	return WithFactoryOptions(informers.WithShardSelector(shardSelector))
}

// WithFactoryOptions applies options of the module's factory, those that
// apply to metadata informers: [informers.WithNamespace],
// [informers.WithNamespaces], [informers.WithTweakListOptions],
// [informers.WithTransform], [informers.WithLeanMemory],
// [informers.WithListMode], the shard options and
// [informers.WithResourceOptions]. [informers.WithMetadataClient] replaces
// the factory's client. Options that concern only typed or dynamic
// informers do nothing here.
//
// Invalid values are errors from [New]. Under
// [NewSharedInformerFactoryWithOptions] they are logged, and an invalid
// option meant to narrow what is listed (namespaces, selectors, shards,
// per-resource options) keeps the informers it was meant for from running,
// so that they never list more than asked: Ready names them.
func WithFactoryOptions(options ...informers.SharedInformerOption) SharedInformerOption {
	return func(factory *metadataSharedInformerFactory) *metadataSharedInformerFactory {
		factory.options = append(factory.options, options...)
		return factory
	}
}

// NewSharedInformerFactory returns a factory of metadata informers over
// all namespaces, with defaultResync as every informer's resync period
// (zero: none).
func NewSharedInformerFactory(client metadata.Interface, defaultResync time.Duration) SharedInformerFactory {
	return NewFilteredSharedInformerFactory(client, defaultResync, metav1.NamespaceAll, nil)
}

// NewFilteredSharedInformerFactory returns a factory of metadata informers
// limited to namespace (all of them for [metav1.NamespaceAll]), whose list
// and watch calls go through tweakListOptions. Listers of its informers
// see only what these filters let through.
func NewFilteredSharedInformerFactory(client metadata.Interface, defaultResync time.Duration, namespace string, tweakListOptions TweakListOptionsFunc) SharedInformerFactory {
	f, _ := newFactory(client, defaultResync, filtered(namespace, tweakListOptions), nil, false)
	return f
}

// NewSharedInformerFactoryWithOptions returns a factory configured by
// options. It cannot return an error: it logs each invalid option (see
// [WithFactoryOptions]); [New] returns them instead.
func NewSharedInformerFactoryWithOptions(client metadata.Interface, defaultResync time.Duration, options ...SharedInformerOption) SharedInformerFactory {
	f, _ := newFactory(client, defaultResync, nil, options, false)
	return f
}

// New returns a factory configured by options, like
// [NewSharedInformerFactoryWithOptions], but checks its input first: a nil
// client, a negative resync period or an invalid option is an error that
// names the problem, and no factory is returned.
func New(client metadata.Interface, defaultResync time.Duration, options ...SharedInformerOption) (Factory, error) {
	f, err := newFactory(client, defaultResync, nil, options, true)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// metadataSharedInformerFactory is the one implementation of Factory; its
// name matches client-go's, so that SharedInformerOption has the same
// signature.
type metadataSharedInformerFactory struct {
	*gvrfactory.Factory[informers.InformerID]
	// options are the module's options the SharedInformerOptions gave,
	// applied after the client.
	options []informers.SharedInformerOption
}

var _ Factory = &metadataSharedInformerFactory{}

var form = gvrfactory.Form[informers.InformerID]{
	Example: &metav1.PartialObjectMetadata{},
	ID: func(resource schema.GroupVersionResource) informers.InformerID {
		return informers.InformerID{Form: informers.FormMetadata, Resource: resource, Type: reflect.TypeOf(&metav1.PartialObjectMetadata{})}
	},
	Resource: func(id informers.InformerID) (schema.GroupVersionResource, bool) {
		return id.Resource, id.Form == informers.FormMetadata
	},
	Lister: func(indexer cache.Indexer, resource schema.GroupVersionResource) cache.GenericLister {
		return metadatalister.NewRuntimeObjectShim(metadatalister.New(indexer, resource))
	},
}

// newFactory builds the factory on a root factory of its own, without a
// typed client. With check (New) invalid input is an error and no factory
// is returned; without, as client-go's constructors, it is logged.
func newFactory(client metadata.Interface, defaultResync time.Duration, base []informers.SharedInformerOption, options []SharedInformerOption, check bool) (*metadataSharedInformerFactory, error) {
	f, errs := gvrfactory.Apply(&metadataSharedInformerFactory{}, options)
	all := []informers.SharedInformerOption{informers.WithoutClientset()}
	// A nil client is kept out of the root factory's options, where it
	// would be a second error; New reports it once.
	if client != nil {
		all = append(all, informers.WithMetadataClient(client))
	} else if check {
		errs = append(errs, errors.New("the metadata.Interface is nil"))
	}
	all = append(append(all, base...), f.options...)
	root, err := gvrfactory.Build("metadatainformer", check, errs,
		func() (informers.Factory, error) { return informers.New(nil, defaultResync, all...) },
		func() informers.Factory {
			// The client-go compatible constructor's factory is a Factory.
			return informers.NewSharedInformerFactoryWithOptions(nil, defaultResync, all...).(informers.Factory)
		})
	if err != nil {
		return nil, err
	}
	f.Factory = gvrfactory.New(form, root, func(resource schema.GroupVersionResource) (gvrfactory.Informer, error) {
		return root.ForMetadata(resource)
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
// *metav1.PartialObjectMetadata objects. An invalid gvr (an empty version,
// a subresource) gets an informer that never runs, which WaitForCacheSync
// reports as not synced and Ready names.
func (f *metadataSharedInformerFactory) ForResource(gvr schema.GroupVersionResource) informers.GenericInformer {
	return f.Factory.ForResource(gvr)
}

// NewFilteredMetadataInformer returns an informer of gvr's objects as
// *metav1.PartialObjectMetadata, limited to namespace and with its list and
// watch calls through tweakListOptions, outside any factory: run it
// yourself. Besides indexers it has the namespace index. Like a factory's,
// it reports synced once its first watch has returned.
func NewFilteredMetadataInformer(client metadata.Interface, gvr schema.GroupVersionResource, namespace string, resyncPeriod time.Duration, indexers cache.Indexers, tweakListOptions TweakListOptionsFunc) informers.GenericInformer {
	f, _ := newFactory(client, resyncPeriod, filtered(namespace, tweakListOptions), nil, false)
	return f.Standalone(gvr, indexers)
}
