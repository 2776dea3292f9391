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
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internalinterfaces"
	"github.com/kubeinformers/informers/sharding"
)

// This file holds every factory-wide option and the values they set
// (factoryOptions). An option records its value here and nothing else;
// settings.go turns the values into each informer's settings. Adding an
// option means a field and a function here, and its rule in settingsFor.
// ResourceOptions, the per-resource ones, are in resource_options.go, and
// the lean-memory options with their transforms in lean.go.

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
	shard            *shardSource
	shardOption      string
	membership       *sharding.Membership
	tweakListOptions internalinterfaces.TweakListOptionsFunc
	customResync     map[reflect.Type]time.Duration
	transform        cache.TransformFunc
	// leanTransform runs after transform; see WithLeanMemory (lean.go).
	leanTransform cache.TransformFunc
	informerName  *cache.InformerName
	// listMode is set by WithListMode (listmode.go); listModeSet records
	// that it was given.
	listMode    ListMode
	listModeSet bool

	// optionErrs collects what the options found wrong. New returns them;
	// the client-go compatible constructors log them, and refuse to run
	// the informers an invalid narrowing option was meant for.
	optionErrs []optionError
}

// optionError is an invalid option value.
//
// Fail closed: an option that narrows what informers list (namespaces,
// selectors, shards) must never widen it when its value is bad. New
// returns every optionError. The client-go compatible constructors, which
// cannot return an error, log it; for client-go's own options they then
// behave as client-go does, but an informer that an invalid narrowing
// option was meant for does not run at all: it makes no request, never
// syncs, and Ready and WaitForCacheSync name it with the error.
type optionError struct {
	err error
	// refuses reports whether the informer of resource (namespaced or
	// not) must not run because of err; nil for client-go's options.
	refuses func(resource schema.GroupVersionResource, namespaced bool) bool
}

// invalid records an error of one of client-go's own options.
func (o *factoryOptions) invalid(err error) {
	o.optionErrs = append(o.optionErrs, optionError{err: err})
}

// invalidNarrowing records an error of an option that narrows what
// informers list; the informers refuses selects will not run.
func (o *factoryOptions) invalidNarrowing(err error, refuses func(schema.GroupVersionResource, bool) bool) {
	o.optionErrs = append(o.optionErrs, optionError{err: err, refuses: refuses})
}

// errs returns the errors the options found.
func (o *factoryOptions) errs() []error {
	out := make([]error, 0, len(o.optionErrs))
	for _, e := range o.optionErrs {
		out = append(out, e.err)
	}
	return out
}

// Which informers an invalid narrowing option refuses.
var (
	everyInformer       = func(schema.GroupVersionResource, bool) bool { return true }
	namespacedInformers = func(_ schema.GroupVersionResource, namespaced bool) bool { return namespaced }
)

// shardedInformers are the informers a shard on field applies to: all of
// them, but only the namespaced ones for the namespace hash.
func shardedInformers(field sharding.Field) func(schema.GroupVersionResource, bool) bool {
	if field == sharding.FieldNamespace {
		return namespacedInformers
	}
	return everyInformer
}

func informersOf(resource schema.GroupVersionResource) func(schema.GroupVersionResource, bool) bool {
	return func(r schema.GroupVersionResource, _ bool) bool { return r == resource }
}

// checkFactoryOptions checks what only the whole set of options can tell;
// newFactory calls it once every option has run.
func (f *sharedInformerFactory) checkFactoryOptions() {
	if len(f.namespaces) > 0 && f.namespaceSet {
		f.invalidNarrowing(fmt.Errorf("WithNamespace(%q) and WithNamespaces(%q) both given: use one", f.namespace, f.namespaces), namespacedInformers)
	}
	// Options for a resource that is not built in are not checked against
	// the clients here: a typed binding (Bind, after New) may serve it.
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
		for obj, period := range resyncConfig {
			t := reflect.TypeOf(obj)
			switch {
			case t == nil:
				factory.invalid(fmt.Errorf("WithCustomResyncConfig: a nil key names no type (resync period %v)", period))
				continue
			case period < 0:
				factory.invalid(fmt.Errorf("WithCustomResyncConfig: the resync period %v for %v is negative", period, t))
				continue
			}
			factory.customResync[t] = period
		}
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
			if err := checkNamespace(namespace); err != nil {
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
		if err := checkNamespaces(namespaces); err != nil {
			factory.invalidNarrowing(fmt.Errorf("WithNamespaces(%q): %w", namespaces, err), namespacedInformers)
			return factory
		}
		factory.namespaces = slices.Clone(namespaces)
		return factory
	}
}

// checkNamespace is the one check of a namespace name.
func checkNamespace(ns string) error {
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return fmt.Errorf("%q is not a valid namespace name: %s", ns, strings.Join(msgs, "; "))
	}
	return nil
}

// checkNamespaces checks a list of namespaces: at least one, each valid,
// none twice.
func checkNamespaces(namespaces []string) error {
	var errs []error
	if len(namespaces) == 0 {
		errs = append(errs, errors.New("no namespace given"))
	}
	seen := make(map[string]bool, len(namespaces))
	for _, ns := range namespaces {
		if err := checkNamespace(ns); err != nil {
			errs = append(errs, err)
		}
		if seen[ns] {
			errs = append(errs, fmt.Errorf("namespace %q is given twice", ns))
		}
		seen[ns] = true
	}
	return errors.Join(errs...)
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

// WithShardSelector shards every informer of the factory, of every form and
// in every namespace, by shardSelector, as client-go v0.38's option of the
// same name: each list and watch sends shardSelector.String() exactly as
// given, and each informer keeps only the objects the selector matches,
// also when the server ignores it (see [Factory.Notices]). shard.go says
// how it relates to the other shard options.
//
// A nil or empty selector ([apisharding.Everything]) means no sharding.
// Giving it together with [WithShard], [WithNamespaceShard] or
// [WithShardMembership] is an error from [New]. A selector the server
// rejects (for example one with two keys) leaves the informers unsynced,
// and [Factory.Ready] names each with the server's message.
func WithShardSelector(shardSelector apisharding.Selector) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		option := "WithShardSelector(nil)"
		if shardSelector != nil {
			option = fmt.Sprintf("WithShardSelector(%q)", shardSelector.String())
		}
		factory.setShard(option, staticShard(shardSelector, false), everyInformer)
		return factory
	}
}

// WithShard shards every informer of the factory by the hash of
// object.metadata.uid: the informers of replica index (0-based) of count
// cache only the objects in that replica's even slice of the hash space.
// It is [WithShardSelector] with the selector of
// sharding.NewShardRangeSelector("object.metadata.uid", index, count) of
// apimachinery v0.38 ([sharding.ForShard] here), byte for byte. A count
// below 1, or an index outside [0, count), is an error from [New]; under
// the other constructors no informer runs.
func WithShard(index, count int) SharedInformerOption {
	return withStaticShard("WithShard", sharding.FieldUID, index, count)
}

// WithNamespaceShard is [WithShard] by the hash of the object's namespace,
// so that all objects of a namespace land on one replica. Unlike
// [WithShardSelector] with the same selector, it leaves cluster-scoped
// informers unsharded: their objects have no namespace, and would all land
// on one replica.
func WithNamespaceShard(index, count int) SharedInformerOption {
	return withStaticShard("WithNamespaceShard", sharding.FieldNamespace, index, count)
}

func withStaticShard(option string, field sharding.Field, index, count int) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		option := fmt.Sprintf("%s(%d, %d)", option, index, count)
		nsOnly := field == sharding.FieldNamespace
		refuses := shardedInformers(field)
		sel, err := sharding.ForShard(field, index, count)
		if err != nil {
			factory.invalidNarrowing(fmt.Errorf("%s: %w", option, err), refuses)
			return factory
		}
		factory.setShard(option, staticShard(sel.APISelector(), nsOnly), refuses)
		return factory
	}
}

// WithShardMembership shards every informer of the factory by the ranges a
// Lease-based [sharding.Membership] assigns this replica, on field (the
// UID or the namespace hash). When the membership changes, each informer
// hands over inside its watch, without listing again: it lists only the
// ranges gained, delivered to handlers as adds, and delivers the objects
// of the ranges given up as deletes (cache.DeletedFinalStateUnknown, as a
// relist would); events of the ranges kept keep flowing. Until the first
// assignment, and while the replica owns no range, the informers cache
// nothing and send no request. As with [WithNamespaceShard], field
// [sharding.FieldNamespace] leaves cluster-scoped informers unsharded.
//
// The caller starts the membership (m.Start) and stops it (m.Stop) around
// the factory's life; the factory follows its assignments from Start on.
// When the membership stops, by Stop or because its context ended, the
// factory owns nothing from then on: its objects leave as deletes and its
// sharded informers send no further request. So the order of shutdown is
// free; m.Stop before the factory's Shutdown is the graceful one (the
// Lease is released and the others take over at once), and after a
// canceled context the others take over at the Lease's expiry.
//
// A replica that cannot serve its share gives it up: the factory registers
// a health check with m ([sharding.Membership.AddHealthCheck]) that fails
// while any informer following the membership is failing (what
// [Factory.Ready] reports: a list or watch that fails, such as a resource
// that is forbidden or does not exist). Once it has failed at every
// renewal for [sharding.MembershipConfig.HealthGrace] (by default the
// lease duration), the replica publishes itself not ready and the others
// take its ranges; it takes a share again at the first renewal at which
// the check passes. If every replica fails, none gives up its share. The
// rule and its bounds are in the Health section of [sharding.Membership].
func WithShardMembership(m *sharding.Membership, field sharding.Field) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		const option = "WithShardMembership"
		refuses := shardedInformers(field)
		if m == nil {
			factory.invalidNarrowing(errors.New("WithShardMembership: the *sharding.Membership is nil"), refuses)
			return factory
		}
		if err := field.Validate(); err != nil {
			factory.invalidNarrowing(fmt.Errorf("%s: %w", option, err), refuses)
			return factory
		}
		src := membershipShard(field)
		if factory.setShard(option, src, refuses) {
			factory.membership = m
			m.AddHealthCheck(factory.shardHealth)
		}
		return factory
	}
}

// setShard makes src (nil: no sharding) the factory-wide shard, given by
// option. A second shard option is an error: combining two would either
// widen or silently narrow what the first asked for.
func (o *factoryOptions) setShard(option string, src *shardSource, refuses func(schema.GroupVersionResource, bool) bool) bool {
	if o.shardOption != "" {
		o.invalidNarrowing(fmt.Errorf("%s: the factory is already sharded by %s; give one of WithShardSelector, WithShard, WithNamespaceShard and WithShardMembership", option, o.shardOption), refuses)
		return false
	}
	o.shardOption, o.shard = option, src
	return true
}

func compareResources(a, b schema.GroupVersionResource) int {
	return strings.Compare(a.String(), b.String())
}
