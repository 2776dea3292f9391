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

package crcache

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/bridge"
)

// defaultSyncPeriod is controller-runtime's default resync period.
const defaultSyncPeriod = 10 * time.Hour

// watchConfig is how one slot of the cache lists, watches and reads: a
// [cache.Config] with every default applied.
type watchConfig struct {
	label                 labels.Selector // nil: none
	field                 fields.Selector // nil: none
	transform             toolscache.TransformFunc
	unsafeDisableDeepCopy bool
	enableWatchBookmarks  bool
	syncPeriod            time.Duration
}

// slot is one list and watch of a kind. namespaces nil watches every
// namespace (less those its field selector leaves out); otherwise those
// namespaces, with one list and watch each. follows marks the slots whose
// namespaces are the cache's own, which SetNamespaces changes.
type slot struct {
	namespaces []string
	follows    bool
	config     watchConfig
}

// plan is how the cache watches the kinds it applies to: the default one
// for every kind, or a kind's own from [cache.Options.ByObject].
type plan struct {
	// perNamespace, if not empty, are the slots of a namespaced kind.
	perNamespace []slot
	// all is the slot of a cluster-scoped kind, and of a namespaced one
	// when perNamespace is empty.
	all watchConfig
	// ownNamespaces is whether the ByObject entry of the kind sets
	// Namespaces, which a cluster-scoped kind must not; example is that
	// entry's object, to name its type.
	ownNamespaces bool
	example       runtime.Object
}

// errClusterScopedNamespaces is controller-runtime's error for a ByObject
// entry of a cluster-scoped kind that sets namespaces.
func errClusterScopedNamespaces(obj runtime.Object) error {
	return fmt.Errorf("crcache: type %T is not namespaced, but its ByObject.Namespaces setting is not nil", obj)
}

// slots returns the slots of a kind of the given scope.
func (p plan) slots(namespaced bool) []slot {
	if namespaced && len(p.perNamespace) > 0 {
		return p.perNamespace
	}
	return []slot{{config: p.all}}
}

// routes reports whether a kind of the plan, if namespaced, has a slot
// that holds namespace's objects: one of that namespace, or of every
// namespace.
func (p plan) routes(namespace string) bool {
	if len(p.perNamespace) == 0 {
		return true
	}
	for _, s := range p.perNamespace {
		if s.namespaces == nil || slices.Contains(s.namespaces, namespace) {
			return true
		}
	}
	return false
}

// followedNamespaces are the cache's namespaces that SetNamespaces
// changes, those of the default plan's slot that follows them; nil if
// none does.
func (c *config) followedNamespaces() []string {
	for _, s := range c.defaults.perNamespace {
		if s.follows {
			return s.namespaces
		}
	}
	return nil
}

// config is [cache.Options] resolved once, with this module's options:
// everything the cache reads to build and read an informer.
type config struct {
	restConfig                  *rest.Config
	httpClient                  *http.Client
	scheme                      *runtime.Scheme
	mapper                      meta.RESTMapper
	readerFailOnMissingInformer bool
	watchErrorHandler           toolscache.WatchErrorHandlerWithContext
	newInformer                 func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer

	defaults plan
	byObject map[schema.GroupVersionKind]plan

	// options are given to every factory the cache builds, before the
	// cache's own; settings are what they set.
	options  []informers.SharedInformerOption
	settings bridge.Settings
	// name begins the factory label of this module's metrics for every
	// informer of the cache: that of WithInformerName, else "crcache".
	name string
}

// plan returns the plan of gvk.
func (c *config) plan(gvk schema.GroupVersionKind) plan {
	if p, ok := c.byObject[gvk]; ok {
		return p
	}
	return c.defaults
}

// resolveOptions applies controller-runtime's defaults and precedence to
// opts: for a kind of ByObject, its own settings, then those of
// DefaultNamespaces for the namespace, then the Default* ones.
func resolveOptions(restConfig *rest.Config, opts cache.Options, options []informers.SharedInformerOption, settings bridge.Settings) (*config, error) {
	if restConfig == nil {
		return nil, fmt.Errorf("crcache: the REST config is nil")
	}
	restConfig = rest.CopyConfig(restConfig)
	if restConfig.UserAgent == "" {
		restConfig.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	c := &config{
		restConfig:                  restConfig,
		httpClient:                  opts.HTTPClient,
		scheme:                      opts.Scheme,
		mapper:                      opts.Mapper,
		readerFailOnMissingInformer: opts.ReaderFailOnMissingInformer,
		watchErrorHandler:           opts.DefaultWatchErrorHandler,
		newInformer:                 opts.NewInformer,
		byObject:                    make(map[schema.GroupVersionKind]plan, len(opts.ByObject)),
		options:                     options,
		settings:                    settings,
		name:                        "crcache",
	}
	if settings.InformerName != nil {
		c.name = settings.InformerName.Name()
	}
	if c.httpClient == nil {
		hc, err := rest.HTTPClientFor(restConfig)
		if err != nil {
			return nil, fmt.Errorf("crcache: could not create HTTP client from config: %w", err)
		}
		c.httpClient = hc
	}
	if c.scheme == nil {
		c.scheme = scheme.Scheme
	}
	if c.mapper == nil {
		mapper, err := apiutil.NewDynamicRESTMapper(restConfig, c.httpClient)
		if err != nil {
			return nil, fmt.Errorf("crcache: could not create RESTMapper from config: %w", err)
		}
		c.mapper = mapper
	}

	global := cache.Config{
		LabelSelector:         opts.DefaultLabelSelector,
		FieldSelector:         opts.DefaultFieldSelector,
		Transform:             opts.DefaultTransform,
		UnsafeDisableDeepCopy: opts.DefaultUnsafeDisableDeepCopy,
		EnableWatchBookmarks:  opts.DefaultEnableWatchBookmarks,
		SyncPeriod:            opts.SyncPeriod,
	}
	if err := conflicts(opts, settings, c.scheme, c.mapper); err != nil {
		return nil, err
	}
	c.defaults = plan{all: resolve(global)}
	switch {
	case settings.Namespaces != nil:
		// The factory options' namespaces: the factories get them from
		// those options, so the slot only routes reads.
		c.defaults.perNamespace = []slot{{namespaces: settings.Namespaces, follows: true, config: c.defaults.all}}
	default:
		c.defaults.perNamespace = namespaceSlots(opts.DefaultNamespaces, global, nil, true, nil)
	}

	for obj, byObject := range opts.ByObject {
		gvk, err := apiutil.GVKForObject(obj, c.scheme)
		if err != nil {
			return nil, fmt.Errorf("crcache: failed to get GVK for type %T: %w", obj, err)
		}
		namespaced, err := apiutil.IsObjectNamespaced(obj, c.scheme, c.mapper)
		switch {
		case err != nil && settings.APIDiscovery && meta.IsNoMatchError(err):
			// No resource serves the kind yet: its entry waits for one
			// (follow.go), and buildSlots checks the scope then. The plan
			// is a namespaced kind's; a cluster-scoped kind's slot is
			// plan.all either way.
			namespaced = true
		case err != nil:
			return nil, fmt.Errorf("crcache: failed to determine if %T is namespaced: %w", obj, err)
		}
		if !namespaced && byObject.Namespaces != nil {
			return nil, errClusterScopedNamespaces(obj)
		}
		own := cache.Config{
			LabelSelector:         byObject.Label,
			FieldSelector:         byObject.Field,
			Transform:             byObject.Transform,
			UnsafeDisableDeepCopy: byObject.UnsafeDisableDeepCopy,
			EnableWatchBookmarks:  byObject.EnableWatchBookmarks,
			SyncPeriod:            byObject.SyncPeriod,
		}
		p := plan{all: resolve(withDefaults(own, global)), ownNamespaces: byObject.Namespaces != nil, example: obj}
		switch {
		case !namespaced:
		case byObject.Namespaces == nil && settings.Namespaces != nil:
			p.perNamespace = []slot{{namespaces: settings.Namespaces, follows: true, config: p.all}}
		case byObject.Namespaces == nil:
			p.perNamespace = namespaceSlots(opts.DefaultNamespaces, global, &own, true, nil)
		case settings.Namespaces != nil && len(byObject.Namespaces) > 0:
			return nil, fmt.Errorf("crcache: cache.Options.ByObject[%T].Namespaces and the factory option WithNamespace or WithNamespaces both set namespaces; set them in one place", obj)
		default:
			p.perNamespace = namespaceSlots(byObject.Namespaces, global, &own, false, opts.DefaultNamespaces)
		}
		c.byObject[gvk] = p
	}
	return c, nil
}

// namespaceSlots are the slots of the namespaces configured, each
// namespace's config defaulted from own (a ByObject's, if not nil), then
// from the DefaultNamespaces entry of the namespace (defaultNamespaces),
// then from global. Namespaces that set nothing of their own share one
// slot, which follows the cache's namespaces if follows; the
// AllNamespaces key watches every namespace but the others configured.
func namespaceSlots(configured map[string]cache.Config, global cache.Config, own *cache.Config, follows bool, defaultNamespaces map[string]cache.Config) []slot {
	var shared []string
	var slots []slot
	for _, ns := range slices.Sorted(maps.Keys(configured)) {
		cfg := configured[ns]
		if ns != metav1.NamespaceAll && isZero(cfg) && !hasOwn(ns, defaultNamespaces) {
			shared = append(shared, ns)
			continue
		}
		if own != nil {
			cfg = withDefaults(cfg, *own)
		}
		if nsDefaults, ok := defaultNamespaces[ns]; ok {
			cfg = withDefaults(cfg, nsDefaults)
		}
		cfg = withDefaults(cfg, global)
		if ns != metav1.NamespaceAll {
			slots = append(slots, slot{namespaces: []string{ns}, config: resolve(cfg)})
			continue
		}
		var selectors []fields.Selector
		for _, other := range slices.Sorted(maps.Keys(configured)) {
			if other != metav1.NamespaceAll {
				selectors = append(selectors, fields.OneTermNotEqualSelector("metadata.namespace", other))
			}
		}
		if cfg.FieldSelector != nil {
			selectors = append(selectors, cfg.FieldSelector)
		}
		if len(selectors) > 0 {
			cfg.FieldSelector = fields.AndSelectors(selectors...)
		}
		slots = append(slots, slot{config: resolve(cfg)})
	}
	if len(shared) > 0 {
		cfg := global
		if own != nil {
			cfg = withDefaults(*own, global)
		}
		// Only namespaces with no settings of their own share a slot, so
		// that only the cache's own namespaces follow SetNamespaces.
		slots = append(slots, slot{namespaces: shared, follows: follows && !hasAll(configured), config: resolve(cfg)})
	}
	return slots
}

// hasOwn is whether a DefaultNamespaces entry of ns sets anything.
func hasOwn(ns string, defaultNamespaces map[string]cache.Config) bool {
	cfg, ok := defaultNamespaces[ns]
	return ok && !isZero(cfg)
}

// isZero is whether cfg sets nothing.
func isZero(cfg cache.Config) bool {
	return cfg.LabelSelector == nil && cfg.FieldSelector == nil && cfg.Transform == nil &&
		cfg.UnsafeDisableDeepCopy == nil && cfg.EnableWatchBookmarks == nil && cfg.SyncPeriod == nil
}

// made is which settings of one resource a side (cache.Options, or the
// factory options) makes.
type made struct {
	namespaces, selectors, transform, resync bool
}

func madeBy(cfgs ...cache.Config) made {
	var m made
	for _, cfg := range cfgs {
		m.selectors = m.selectors || cfg.LabelSelector != nil || cfg.FieldSelector != nil
		m.transform = m.transform || cfg.Transform != nil
		m.resync = m.resync || cfg.SyncPeriod != nil
	}
	return m
}

func (m made) or(o made) made {
	return made{m.namespaces || o.namespaces, m.selectors || o.selectors, m.transform || o.transform, m.resync || o.resync}
}

// byObjectMade is what one ByObject entry makes, for its kind's resource.
type byObjectMade struct {
	name     string // "ByObject[*v1.Pod]"
	typ      reflect.Type
	resource schema.GroupVersionResource
	made     made
}

// conflicts names each setting that opts and the factory options both
// make for one resource: its namespaces, its selectors (a tweak changes
// the requests too), its transform and its resync period. Either may make
// it; both would leave one of them unused. A ByObject entry is compared
// with the factory options of its kind's resource, from mapper; a kind
// the mapper does not know yet (WithAPIDiscovery waits for its CRD) with
// the resource its kind's name gives, as the CRD's plural usually is.
// Options.NewInformer informers get the factory options' tweak and
// transform; the settings of WithResourceOptions and
// WithCustomResyncConfig, which only the factory's informers apply, are
// refused beside it.
func conflicts(opts cache.Options, s bridge.Settings, scheme *runtime.Scheme, mapper meta.RESTMapper) error {
	defaults := []cache.Config{{LabelSelector: opts.DefaultLabelSelector, FieldSelector: opts.DefaultFieldSelector, Transform: opts.DefaultTransform, SyncPeriod: opts.SyncPeriod}}
	for _, cfg := range opts.DefaultNamespaces {
		defaults = append(defaults, cfg)
	}
	every := madeBy(defaults...)
	every.namespaces = opts.DefaultNamespaces != nil
	var byObject []byObjectMade
	for obj, b := range opts.ByObject {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return fmt.Errorf("crcache: failed to get GVK for type %T: %w", obj, err)
		}
		var resource schema.GroupVersionResource
		switch mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); {
		case err == nil:
			resource = mapping.Resource
		case meta.IsNoMatchError(err):
			resource, _ = meta.UnsafeGuessKindToResource(gvk)
		default:
			return fmt.Errorf("crcache: failed to map %T to its resource: %w", obj, err)
		}
		cfgs := []cache.Config{{LabelSelector: b.Label, FieldSelector: b.Field, Transform: b.Transform, SyncPeriod: b.SyncPeriod}}
		for _, cfg := range b.Namespaces {
			cfgs = append(cfgs, cfg)
		}
		m := madeBy(cfgs...)
		m.namespaces = len(b.Namespaces) > 0
		byObject = append(byObject, byObjectMade{name: fmt.Sprintf("ByObject[%T]", obj), typ: reflect.TypeOf(obj), resource: resource, made: m})
	}
	slices.SortFunc(byObject, func(a, b byObjectMade) int { return strings.Compare(a.name, b.name) })

	var errs []error
	both := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.Namespaces != nil && every.namespaces {
		both("cache.Options.DefaultNamespaces and the factory option WithNamespace or WithNamespaces both set the namespaces")
	}
	if s.Tweak != nil && every.selectors {
		both("cache.Options' label or field selectors (Default*Selector or DefaultNamespaces) and the factory option WithTweakListOptions both change the requests")
	}
	if s.Transform != nil && every.transform {
		both("cache.Options' transform (DefaultTransform or DefaultNamespaces) and the factory option WithTransform both set the transform")
	}
	if len(s.CustomResync) > 0 && every.resync {
		both("cache.Options' SyncPeriod (or DefaultNamespaces') and the factory option WithCustomResyncConfig both set the resync period")
	}
	for _, b := range byObject {
		if s.Tweak != nil && b.made.selectors {
			both("cache.Options.%s's label or field selectors and the factory option WithTweakListOptions both change the requests of %v", b.name, b.resource)
		}
		if s.Transform != nil && b.made.transform {
			both("cache.Options.%s.Transform and the factory option WithTransform both set the transform of %v", b.name, b.resource)
		}
		if b.made.resync && slices.Contains(s.CustomResync, b.typ) {
			both("cache.Options.%s.SyncPeriod and the factory option WithCustomResyncConfig both set the resync period of %v", b.name, b.typ)
		}
	}
	for _, resource := range slices.SortedFunc(maps.Keys(s.Resources), func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) }) {
		r := s.Resources[resource]
		where, m := "cache.Options (Default*, SyncPeriod, DefaultNamespaces)", every
		for _, b := range byObject {
			if b.resource == resource {
				where, m = "cache.Options (Default*, SyncPeriod, DefaultNamespaces or "+b.name+")", m.or(b.made)
			}
		}
		if r.Namespaces && m.namespaces {
			both("%s and WithResourceOptions(%v).Namespaces both set its namespaces", where, resource)
		}
		if (r.Selectors || r.Tweak) && m.selectors {
			both("%s and WithResourceOptions(%v)'s selectors or TweakListOptions both change its requests", where, resource)
		}
		if r.Transform && m.transform {
			both("%s and WithResourceOptions(%v).Transform both set its transform", where, resource)
		}
		if r.Resync && m.resync {
			both("%s and WithResourceOptions(%v).ResyncPeriod both set its resync period", where, resource)
		}
		if opts.NewInformer != nil {
			both("cache.Options.NewInformer builds informers no factory runs, which WithResourceOptions(%v) cannot apply to", resource)
		}
	}
	if opts.NewInformer != nil && len(s.CustomResync) > 0 {
		both("cache.Options.NewInformer builds informers no factory runs, which WithCustomResyncConfig cannot apply to")
	}
	if len(errs) > 0 {
		return fmt.Errorf("crcache: %w; set each in one place", errors.Join(errs...))
	}
	return nil
}

func hasAll(configured map[string]cache.Config) bool {
	_, ok := configured[metav1.NamespaceAll]
	return ok
}

// withDefaults fills every unset setting of cfg from defaults.
func withDefaults(cfg, defaults cache.Config) cache.Config {
	if cfg.LabelSelector == nil {
		cfg.LabelSelector = defaults.LabelSelector
	}
	if cfg.FieldSelector == nil {
		cfg.FieldSelector = defaults.FieldSelector
	}
	if cfg.Transform == nil {
		cfg.Transform = defaults.Transform
	}
	if cfg.UnsafeDisableDeepCopy == nil {
		cfg.UnsafeDisableDeepCopy = defaults.UnsafeDisableDeepCopy
	}
	if cfg.EnableWatchBookmarks == nil {
		cfg.EnableWatchBookmarks = defaults.EnableWatchBookmarks
	}
	if cfg.SyncPeriod == nil {
		cfg.SyncPeriod = defaults.SyncPeriod
	}
	return cfg
}

// resolve turns a fully defaulted [cache.Config] into a watchConfig.
func resolve(cfg cache.Config) watchConfig {
	return watchConfig{
		label:                 cfg.LabelSelector,
		field:                 cfg.FieldSelector,
		transform:             cfg.Transform,
		unsafeDisableDeepCopy: ptr.Deref(cfg.UnsafeDisableDeepCopy, false),
		enableWatchBookmarks:  ptr.Deref(cfg.EnableWatchBookmarks, true),
		syncPeriod:            ptr.Deref(cfg.SyncPeriod, defaultSyncPeriod),
	}
}

// restrictedNamespace is the namespace a slot of every namespace makes
// its requests in when its field selector requires one, so that it needs
// only that namespace's grants, as controller-runtime does.
func (s slot) restrictedNamespace() string {
	if s.namespaces != nil || s.config.field == nil || s.config.field.Empty() {
		return ""
	}
	ns, _ := s.config.field.RequiresExactMatch("metadata.namespace")
	return ns
}

// tweak applies the slot's selectors and bookmarks to a request.
func (w watchConfig) tweak(opts *metav1.ListOptions) {
	if w.label != nil {
		opts.LabelSelector = w.label.String()
	}
	if w.field != nil {
		opts.FieldSelector = w.field.String()
	}
	// Only watches ask for bookmarks; the tweak cannot tell a watch from a
	// list (the client sets Watch after it), and a list ignores the field.
	if !w.enableWatchBookmarks {
		opts.AllowWatchBookmarks = false
	}
}
