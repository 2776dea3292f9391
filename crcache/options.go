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
	"fmt"
	"maps"
	"net/http"
	"slices"
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

// slot is one list and watch of a kind: namespace "" watches every
// namespace (less those its field selector leaves out), any other one
// only that namespace.
type slot struct {
	namespace string
	config    watchConfig
}

// plan is how the cache watches the kinds it applies to: the default one
// for every kind, or a kind's own from [cache.Options.ByObject].
type plan struct {
	// namespaces, if not empty, are the slots of a namespaced kind.
	namespaces []slot
	// all is the slot of a cluster-scoped kind, and of a namespaced one
	// when namespaces is empty.
	all watchConfig
}

// slots returns the slots of a kind of the given scope.
func (p plan) slots(namespaced bool) []slot {
	if namespaced && len(p.namespaces) > 0 {
		return p.namespaces
	}
	return []slot{{config: p.all}}
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

	// options are given to every factory the cache builds.
	options []informers.SharedInformerOption
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
func resolveOptions(restConfig *rest.Config, opts cache.Options, options []informers.SharedInformerOption) (*config, error) {
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
	c.defaults = plan{all: resolve(global)}
	for _, ns := range slices.Sorted(maps.Keys(opts.DefaultNamespaces)) {
		cfg := withDefaults(opts.DefaultNamespaces[ns], global)
		c.defaults.namespaces = append(c.defaults.namespaces, newSlot(ns, cfg, opts.DefaultNamespaces))
	}

	for obj, byObject := range opts.ByObject {
		gvk, err := apiutil.GVKForObject(obj, c.scheme)
		if err != nil {
			return nil, fmt.Errorf("crcache: failed to get GVK for type %T: %w", obj, err)
		}
		namespaced, err := apiutil.IsObjectNamespaced(obj, c.scheme, c.mapper)
		if err != nil {
			return nil, fmt.Errorf("crcache: failed to determine if %T is namespaced: %w", obj, err)
		}
		if !namespaced && byObject.Namespaces != nil {
			return nil, fmt.Errorf("crcache: type %T is not namespaced, but its ByObject.Namespaces setting is not nil", obj)
		}
		own := cache.Config{
			LabelSelector:         byObject.Label,
			FieldSelector:         byObject.Field,
			Transform:             byObject.Transform,
			UnsafeDisableDeepCopy: byObject.UnsafeDisableDeepCopy,
			EnableWatchBookmarks:  byObject.EnableWatchBookmarks,
			SyncPeriod:            byObject.SyncPeriod,
		}
		p := plan{all: resolve(withDefaults(own, global))}
		namespaces := byObject.Namespaces
		if namespaced && namespaces == nil {
			namespaces = opts.DefaultNamespaces // nil or empty: every namespace
		}
		if namespaced {
			for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
				cfg := withDefaults(namespaces[ns], own)
				if nsDefaults, ok := opts.DefaultNamespaces[ns]; ok {
					cfg = withDefaults(cfg, nsDefaults)
				}
				cfg = withDefaults(cfg, global)
				p.namespaces = append(p.namespaces, newSlot(ns, cfg, namespaces))
			}
		}
		c.byObject[gvk] = p
	}
	return c, nil
}

// newSlot is the slot of namespace ns of the namespaces configured: the
// AllNamespaces key watches every namespace but the others configured.
func newSlot(ns string, cfg cache.Config, configured map[string]cache.Config) slot {
	if ns == metav1.NamespaceAll {
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
	}
	return slot{namespace: ns, config: resolve(cfg)}
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

// requestNamespace is the namespace a slot's requests are made in: its
// own, or the one its field selector requires, so that a cache restricted
// to a namespace by a field selector needs only that namespace's grants.
func (s slot) requestNamespace() string {
	if s.namespace != "" {
		return s.namespace
	}
	if s.config.field == nil || s.config.field.Empty() {
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
