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

package informers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/accessor"
	"github.com/kubeinformers/informers/internal/binding"
	"github.com/kubeinformers/informers/internal/informer"
	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/meter"
	"github.com/kubeinformers/informers/internalinterfaces"
)

// Factory is the factory [New] and [NewForConfig] return: a
// [SharedInformerFactory], exactly as client-go's, that also serves custom
// resources and metadata-only informers, can remove one informer, and says
// why it is not ready.
//
// Every informer it hands out, of every form, shares one life cycle: Start
// runs those not yet running, WaitForCacheSync and Ready cover all of them,
// and Shutdown waits for all of them. Each also has client-go v0.38's
// SetShardSelector(k8s.io/apimachinery/pkg/sharding.Selector) error (on
// client-go v0.37 reach it with a type assertion), and its HasSynced is
// true once its initial list is in the cache and its first watch has
// returned, so that no event after the sync is lost.
type Factory interface {
	SharedInformerFactory

	// ForMetadata returns the shared informer that caches only the
	// metadata of resource's objects, as *metav1.PartialObjectMetadata,
	// for any resource the server serves, built in or custom. It is not
	// the typed or dynamic informer of the same resource; both can run at
	// once. It needs a metadata client (NewForConfig, or
	// [WithMetadataClient]).
	ForMetadata(resource schema.GroupVersionResource) (GenericInformer, error)

	// RemoveInformer stops every informer the factory holds for resource,
	// in every form (typed or dynamic, and metadata), waits until their
	// goroutines have ended, and drops them with their caches and event
	// handlers. It reports whether there was one.
	//
	// The other informers keep running. Asking for the resource again
	// afterwards (an accessor, ForResource, ForMetadata) builds a fresh
	// informer, which the next Start runs. Listers and informers obtained
	// before the removal keep pointing at the stopped informer, whose
	// store is emptied: get them again. Use it when a custom resource's
	// CRD is deleted, or a controller stops needing a resource.
	RemoveInformer(resource schema.GroupVersionResource) bool

	// Ready returns nil when every started informer has synced and its
	// last list or watch succeeded; otherwise one error naming each
	// informer that is not, with the last error it got (or the invalid
	// option that keeps it from running). It is cheap: it makes no
	// request, so it can back a /readyz endpoint.
	Ready() error

	// SyncStatus reports, per started informer, whether it has synced:
	// its initial list is in the cache and its first watch has returned.
	// Unlike WaitForCacheSync's map, keyed by Go type, it tells apart
	// resources of one type, such as two custom resources.
	SyncStatus() map[InformerID]bool

	// MemoryStatus reports, per started informer, its objects and the
	// estimate of the heap its cache retains (the metric
	// kubeinformers_informer_bytes); see [MemoryStatus].
	MemoryStatus() map[InformerID]MemoryStatus
	// SetMemoryBudget sets the factory's memory budget ([WithMemoryBudget]),
	// shared by every factory built with the same option; 0 removes it.
	// SetResourceMemoryBudget sets resource's ([ResourceOptions.MemoryBudget]).
	// An informer stopped over a budget tries again.
	SetMemoryBudget(bytes int64) error
	SetResourceMemoryBudget(resource schema.GroupVersionResource, bytes int64) error

	// Notices returns conditions an operator should know of that do not
	// make the informers unready, such as a server that ignored the shard
	// selector of [WithShardSelector] or [WithShard] (the informers then
	// filter on the client).
	Notices() []string

	// WaitForResourceVersion waits until every started informer the factory
	// holds for resource, in every form (typed or dynamic, and metadata),
	// reflects namespace at resourceVersion or later: a write that returned
	// resourceVersion, and every earlier write there, is in its cache, a
	// created or updated object with that content, a deleted one gone. Call
	// it after a write and before reading a lister, when the read must see
	// the write; the readyourwrites package records the versions.
	//
	// namespace is the namespace of the write, or "" for a cluster-scoped
	// object or to mean every namespace the informers watch. An informer of
	// several namespaces ([WithNamespaces]) waits only on its watch of
	// namespace, so that the write is reflected by its own event.
	//
	// It returns as soon as an event or a bookmark at or past resourceVersion
	// is in the cache: within milliseconds of the write for an object the
	// informer holds. A write the informer never receives (an object its
	// selectors or shard filter out, or with namespace "" the writes of other
	// namespaces) is reflected by the watch's next bookmark, which the API
	// server's watch cache sends every minute (a resource served without
	// one gets none): set a deadline on ctx.
	//
	// It returns an error, never waiting past ctx:
	//   - wrapping [ErrUnknownResource] when the factory holds no informer of
	//     resource;
	//   - naming the namespaces watched, when no informer watches namespace;
	//   - when none of the resource's informers has been started (those not
	//     started are otherwise not waited for), or one is stopped;
	//   - wrapping [ErrResourceVersionNotComparable] for a version that cannot
	//     be ordered, such as the empty one of client-go's fakes;
	//   - wrapping ctx's cause when ctx ends first, naming the informer, the
	//     version wanted and the newest one it reflected.
	//
	// Until it is first called for a resource it costs nothing; afterwards
	// each informer of the resource calls one more event handler, which takes
	// a lock.
	WaitForResourceVersion(ctx context.Context, resource schema.GroupVersionResource, namespace, resourceVersion string) error

	// SetNamespaces replaces the factory's namespaces, those of
	// [WithNamespaces] or [WithNamespace], with namespaces, for the
	// informers already built, running or not, and those built later;
	// nothing is rebuilt and no other informer is touched:
	//   - a namespace added gets its own list and watch, started at once if
	//     the informer runs; its objects arrive as add events, as on a first
	//     list;
	//   - a namespace removed is stopped; every handler receives a deletion
	//     of each of its objects, as a [cache.DeletedFinalStateUnknown]
	//     (the object was not deleted: the informer stopped watching it);
	//   - a namespace kept is not touched: no new list or watch, no event.
	//
	// When it returns, listers and indexers no longer hold an object of a
	// removed namespace (they stop seeing them as the call begins), and
	// every handler has received those deletions; the added namespaces may
	// still be listing. HasSynced, once true, stays true; [Factory.Ready]
	// names an added namespace whose list or watch fails, and
	// [Factory.WaitForResourceVersion] with the namespace waits until it
	// reflects a write.
	//
	// It returns an error and changes nothing for an empty list, an invalid
	// or repeated name, a factory that watches all namespaces (built with
	// neither option), one whose namespace option is invalid, one that has
	// been shut down, and one built by a client-go compatible constructor
	// with WithNamespace ([NewFilteredSharedInformerFactory] and
	// [NewSharedInformerFactoryWithOptions] then build client-go's own
	// single-namespace informers; use [New] or [WithNamespaces]).
	// Informers with namespaces of their own ([ResourceOptions].Namespaces,
	// a group built with another namespace, InformerFor's newFunc) and
	// cluster-scoped ones are not changed. It must not be called from an
	// event handler of the factory's informers: it waits for the removed
	// namespaces' deliveries to end.
	SetNamespaces(namespaces ...string) error
}

// sharedInformerFactory is the one implementation of Factory. Its name and
// the option type built on it match client-go's, so that
// SharedInformerOption has the very same signature.
type sharedInformerFactory struct {
	client        kubernetes.Interface
	defaultResync time.Duration
	// factoryOptions are the values the options set (options.go), and
	// settings those that decide each informer, resolved once (spec.go).
	factoryOptions
	settings informer.Settings

	// groups caches the group accessors (generated, factory_groups.go).
	groups groups

	lock sync.Mutex
	// entries and byType are the registry (registry.go): every informer
	// the factory holds, by form and resource, and the typed ones also by
	// Go type for InformerFor.
	entries map[registryKey]*entry
	byType  map[reflect.Type]*entry
	// bindings are the typed resources bound by gensupport.Bind (bind.go).
	bindings binding.Table
	// wg counts running informer goroutines, for Shutdown.
	wg sync.WaitGroup
	// shuttingDown is set by Shutdown; Start does nothing afterwards.
	shuttingDown bool
	// followingMembership is set by the first Start under
	// WithShardMembership.
	followingMembership bool

	// currentNamespaces is the set SetNamespaces last gave (namespaces.go),
	// sorted; nil until then. Guarded by lock; setNamespaces serializes
	// SetNamespaces calls, which wait outside lock.
	currentNamespaces []string
	setNamespaces     sync.Mutex
	// clientGoNamespace is set by the client-go compatible constructors:
	// WithNamespace then builds client-go's single-namespace informers,
	// which SetNamespaces cannot change.
	clientGoNamespace bool

	// metrics is the factory's part in the metrics (metrics.go): the
	// name it reports under, and its shard metrics.
	metrics meter.Factory
	// nameBorrowed keeps Shutdown from releasing informerName (bridge.go).
	nameBorrowed bool
}

var (
	_ Factory           = &sharedInformerFactory{}
	_ accessor.Resolver = &sharedInformerFactory{}
)

// NewSharedInformerFactory returns a factory for informers over all
// namespaces, with defaultResync as the resync period of every informer
// (zero: no resync).
func NewSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync)
}

// NewFilteredSharedInformerFactory returns a factory whose informers only
// see namespace and whose list and watch calls go through tweakListOptions.
//
// Deprecated: use [NewSharedInformerFactoryWithOptions] with [WithNamespace]
// and [WithTweakListOptions].
func NewFilteredSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration, namespace string, tweakListOptions internalinterfaces.TweakListOptionsFunc) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync, WithNamespace(namespace), WithTweakListOptions(tweakListOptions))
}

// NewSharedInformerFactoryWithOptions returns a factory configured by
// options. It accepts whatever client-go's does, and logs each option with
// a bad value. Use [New] to get such mistakes back as an error instead.
//
// A bad value of one of client-go's own options then behaves as it does in
// client-go. A bad value of an option this module adds to narrow what is
// listed ([WithNamespaces], [WithResourceOptions], the shard options) fails
// closed: the informers it was meant for never run, so they never list
// more than asked (all namespaces, unfiltered, unsharded). They make no
// request and never sync; WaitForCacheSync reports them as not synced
// without waiting for them, and [Factory.Ready] names each with the option
// error.
//
// The factory it returns is a [Factory]; a type assertion reaches the
// additional methods.
func NewSharedInformerFactoryWithOptions(client kubernetes.Interface, defaultResync time.Duration, options ...SharedInformerOption) SharedInformerFactory {
	f := newFactory(client, defaultResync, options, true)
	f.optionErrs.Log(klog.Background()) // internal/optcheck
	return f
}

// New returns a factory configured by options, like
// [NewSharedInformerFactoryWithOptions], but checks its input first: a nil
// client (unless [WithoutClientset] is given), a negative resync period or
// an invalid option value is an error that names the problem, and no
// factory is returned.
//
// For custom resources and metadata-only informers, pass
// [WithDynamicClient] and [WithMetadataClient], or use [NewForConfig].
func New(client kubernetes.Interface, defaultResync time.Duration, options ...SharedInformerOption) (Factory, error) {
	f := newFactory(client, defaultResync, options, false)
	if err := f.optionErrs.New(client == nil, f.withoutClientset, defaultResync); err != nil {
		return nil, err // internal/optcheck
	}
	return f, nil
}

// NewForConfig returns a factory whose typed, dynamic and metadata clients
// are all built from config, so that it serves built-in resources, custom
// resources and metadata-only informers alike. Options are checked as by
// [New]; [WithDynamicClient] and [WithMetadataClient] replace the clients
// built here.
//
// When config sets neither ContentType nor AcceptContentTypes, the typed
// clients ask for protobuf with a JSON fallback (ContentType
// "application/vnd.kubernetes.protobuf", AcceptContentTypes
// "application/vnd.kubernetes.protobuf,application/json"), as
// kube-controller-manager's do; config itself is not changed, and a
// content type set in it is kept (see [WithProtobuf] to override it for
// the informers). The dynamic and metadata clients choose their own
// content types, as client-go's do.
func NewForConfig(config *rest.Config, defaultResync time.Duration, options ...SharedInformerOption) (Factory, error) {
	if config == nil {
		return nil, errors.New("informers: NewForConfig: the rest.Config is nil")
	}
	client, err := kubernetes.NewForConfig(listwatch.ProtobufConfig(config))
	if err != nil {
		return nil, fmt.Errorf("informers: NewForConfig: building the clientset for %q: %w", config.Host, err)
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("informers: NewForConfig: building the dynamic client for %q: %w", config.Host, err)
	}
	meta, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("informers: NewForConfig: building the metadata client for %q: %w", config.Host, err)
	}
	// The clients built here come first, so that options can replace them.
	all := append([]SharedInformerOption{WithDynamicClient(dyn), WithMetadataClient(meta)}, options...)
	return New(client, defaultResync, all...)
}

func newFactory(client kubernetes.Interface, defaultResync time.Duration, options []SharedInformerOption, clientGo bool) *sharedInformerFactory {
	f := &sharedInformerFactory{
		client:            client,
		defaultResync:     defaultResync,
		clientGoNamespace: clientGo,
		factoryOptions: factoryOptions{
			namespace:    metav1.NamespaceAll,
			customResync: make(map[reflect.Type]time.Duration),
		},
		entries: make(map[registryKey]*entry),
		byType:  make(map[reflect.Type]*entry),
	}
	for i, opt := range options {
		if opt == nil {
			f.invalid(fmt.Errorf("option %d is nil", i))
			continue
		}
		// Options return the factory they configure; upstream trusts that
		// pointer, so do we, but never lose it to a nil.
		if next := opt(f); next != nil {
			f = next
		}
	}
	f.checkFactoryOptions()
	f.setUpAPIDiscovery()
	f.resolveSettings() // spec.go
	return f
}

// InformerName returns the identity set by [WithInformerName], or nil.
func (f *sharedInformerFactory) InformerName() *cache.InformerName {
	return f.informerName
}
