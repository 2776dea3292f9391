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
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/budget"
	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/multinamespace"
	"github.com/kubeinformers/informers/internal/optcheck"
	"github.com/kubeinformers/informers/internal/served"
	"github.com/kubeinformers/informers/internal/shard"
	"github.com/kubeinformers/informers/internalinterfaces"
	"github.com/kubeinformers/informers/sharding"
)

// This file holds the factory-wide options and the values they set
// (factoryOptions). An option records its value and nothing else; spec.go
// turns the values into each informer's spec. Adding an option means a
// field here, its function (here, or in the file of its concern), its rule
// in resolveSpec, and the engine that reads the spec field the rule sets
// (docs/architecture.md has the recipe). Options of one concern live with
// it:
// ResourceOptions in resource_options.go, the shard options in shard.go,
// WithListMode in listmode.go, the lean-memory options in lean.go,
// WithProtobuf in protobuf.go.

// SharedInformerOption configures a factory at construction. Pass options
// to [NewSharedInformerFactoryWithOptions] or [New].
type SharedInformerOption func(*sharedInformerFactory) *sharedInformerFactory

// factoryOptions are the values the options set; sharedInformerFactory
// embeds them.
type factoryOptions struct {
	dynamicClient  dynamic.Interface
	metadataClient metadata.Interface
	namespace      string
	// namespaceSet records that WithNamespace was given, which
	// WithNamespaces excludes.
	namespaceSet bool
	// namespaces is set by WithNamespaces.
	namespaces []string
	// resourceOptions is set by WithResourceOptions (resource_options.go).
	resourceOptions map[schema.GroupVersionResource]ResourceOptions
	// shard is the factory-wide shard (shard.go), nil for none, and
	// shardOption the option that set it; membership, if set, moves it,
	// from the first Start on.
	shard            *shard.Source
	shardOption      string
	membership       *sharding.Membership
	tweakListOptions internalinterfaces.TweakListOptionsFunc
	customResync     map[reflect.Type]time.Duration
	transform        cache.TransformFunc
	// leanTransform runs after transform; see WithLeanMemory (lean.go).
	// leanStrip is what it drops, which a built-in typed informer's
	// protobuf decoding then leaves out (internal/listwatch).
	leanTransform cache.TransformFunc
	leanStrip     listwatch.Strip
	informerName  *cache.InformerName
	// listMode is set by WithListMode (listmode.go); listModeSet records
	// that it was given.
	listMode    ListMode
	listModeSet bool
	// protobuf is set by WithProtobuf (protobuf.go).
	protobuf bool
	// dynamicBuiltIns is set by WithDynamicBuiltIns (dynamic_builtins.go).
	dynamicBuiltIns bool
	// withoutClientset is set by WithoutClientset.
	withoutClientset bool
	// apiDiscovery is set by WithAPIDiscovery (apidiscovery.go), and
	// discovery is what its informers ask once the options have run.
	apiDiscovery bool
	discovery    *served.Checker
	// memoryPool is the budget of WithMemoryBudget (memory_budget.go);
	// memoryBudgets are SetResourceMemoryBudget's, under the lock.
	memoryPool    *budget.Pool
	memoryBudgets map[schema.GroupVersionResource]int64

	// optionErrs collects what the options found wrong (internal/optcheck:
	// fail closed). New returns them; the client-go compatible
	// constructors log them, and refuse to run the informers an invalid
	// narrowing option was meant for.
	optionErrs optcheck.Errors
}

// invalid records an error of one of client-go's own options.
func (o *factoryOptions) invalid(err error) { o.optionErrs.Invalid(err) }

// invalidNarrowing records an error of an option that narrows what
// informers list; the informers refuses selects will not run.
func (o *factoryOptions) invalidNarrowing(err error, refuses optcheck.Refuses) {
	o.optionErrs.Narrowing(err, refuses)
}

// checkFactoryOptions checks what only the whole set of options can tell;
// newFactory calls it once every option has run.
func (f *sharedInformerFactory) checkFactoryOptions() {
	if len(f.namespaces) > 0 && f.namespaceSet {
		f.invalidNarrowing(fmt.Errorf("WithNamespace(%q) and WithNamespaces(%q) both given: use one", f.namespace, f.namespaces), optcheck.Namespaced)
	}
	f.checkDynamicBuiltIns()
	// Options for a resource that is not built in are not checked against
	// the clients here: a typed binding (gensupport.Bind, after New) may serve it.
	// Notices names those that nothing serves (unservedOptions).
}

// WithCustomResyncConfig sets the resync period of individual types: each
// key is an object of the type (such as &corev1.Pod{}), each value its
// period. Types not listed use the factory's default.
//
// A nil key names no type and a negative period is no period; [New] reports
// either as an error, the other constructors log it and ignore the entry.
func WithCustomResyncConfig(resyncConfig map[metav1.Object]time.Duration) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		maps.Copy(factory.customResync, optcheck.CustomResync(resyncConfig, factory.invalid))
		return factory
	}
}

// WithTweakListOptions sets a function that changes the options of every
// list and watch request the factory's informers make, for example to add a
// label or field selector. Listers then only see the matching objects.
// A nil function changes nothing.
func WithTweakListOptions(tweakListOptions internalinterfaces.TweakListOptionsFunc) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		factory.tweakListOptions = tweakListOptions
		return factory
	}
}

// WithNamespace limits the factory's namespaced informers to one
// namespace. Cluster-scoped resources (nodes, namespaces, …) are not
// affected. The empty string, [metav1.NamespaceAll], means all namespaces.
//
// An invalid name is an error from [New]; the other constructors log it
// and pass it on, as client-go does (the server then rejects the requests).
func WithNamespace(namespace string) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		if namespace != metav1.NamespaceAll {
			if err := multinamespace.CheckName(namespace); err != nil {
				factory.invalid(fmt.Errorf("WithNamespace: %w", err))
			}
		}
		factory.namespace = namespace
		factory.namespaceSet = true
		return factory
	}
}

// WithNamespaces limits the factory's namespaced informers to exactly these
// namespaces: each gets one list and watch per namespace, and its lister
// and indexer see their union. Cluster-scoped resources are not affected.
// Use it instead of [WithNamespace]; giving both is an error from [New].
// An invalid list is an error from New; under the other constructors the
// namespaced informers do not run (see [NewSharedInformerFactoryWithOptions]).
func WithNamespaces(namespaces ...string) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		if err := multinamespace.Check(namespaces); err != nil {
			factory.invalidNarrowing(fmt.Errorf("WithNamespaces(%q): %w", namespaces, err), optcheck.Namespaced)
			return factory
		}
		factory.namespaces = slices.Clone(namespaces)
		return factory
	}
}

// WithTransform sets a function that every informer of the factory applies
// to objects before caching them, for example to drop managedFields and
// save memory. A nil function sets none.
func WithTransform(transform cache.TransformFunc) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		factory.transform = transform
		return factory
	}
}

// WithInformerName sets the identity under which every informer of the
// factory registers its resource for metrics. Create it once at start-up
// with [cache.NewInformerName], which checks that the name is unique;
// Shutdown releases it.
//
// Each informer registers the resource the API server serves (for example
// networking.k8s.io/v1 "networkpolicies"), the same GVR that ForResource
// takes. client-go registers some under a misspelt plural such as
// "networkpolicys".
func WithInformerName(informerName *cache.InformerName) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		factory.informerName = informerName
		return factory
	}
}

// WithDynamicClient gives the factory the dynamic client through which
// ForResource serves resources that are not built in, such as custom
// resources. [NewForConfig] sets one built from its config; this option
// replaces it, for example with a fake in unit tests. A nil client is an
// error from [New].
func WithDynamicClient(client dynamic.Interface) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		if client == nil {
			factory.invalid(errors.New("WithDynamicClient: the dynamic.Interface is nil"))
			return factory
		}
		factory.dynamicClient = client
		return factory
	}
}

// WithMetadataClient gives the factory the metadata client through which
// [Factory.ForMetadata] serves metadata-only informers. [NewForConfig] sets
// one built from its config; this option replaces it, for example with a
// fake in unit tests. A nil client is an error from [New].
func WithMetadataClient(client metadata.Interface) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		if client == nil {
			factory.invalid(errors.New("WithMetadataClient: the metadata.Interface is nil"))
			return factory
		}
		factory.metadataClient = client
		return factory
	}
}

// WithoutClientset says that the factory has no kubernetes.Interface on
// purpose: [New] then accepts a nil one, and an informer that would need it
// (a typed accessor's) fails each list with an error naming it, which
// [Factory.Ready] reports. Use it for a factory that serves only
// ForResource over a dynamic client ([WithDynamicClient], with
// [WithDynamicBuiltIns] for the built-in resources too) and ForMetadata
// over a metadata client ([WithMetadataClient]); the dynamicinformer and
// metadatainformer packages build on it. Giving a client as well is an
// error from New.
func WithoutClientset() SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		factory.withoutClientset = true
		return factory
	}
}
