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
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/binding"
	"github.com/kubeinformers/informers/internal/schemetype"
)

// form is how a kind's objects are cached, as controller-runtime keeps
// them apart: as their Go type, as unstructured, or their metadata only.
type form int

const (
	formStructured form = iota
	formUnstructured
	formMetadata
)

// formOf is the form an object or list asks for.
func formOf(obj runtime.Object) form {
	switch obj.(type) {
	case runtime.Unstructured:
		return formUnstructured
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return formMetadata
	}
	return formStructured
}

type entryKey struct {
	form form
	gvk  schema.GroupVersionKind
}

// entry is the informer of one kind in one form: one informer per slot,
// each the only informer of a factory of its own (so that everything a
// slot's config says is a factory-wide option), and what GetInformer
// returns over them.
type entry struct {
	key        entryKey
	namespaced bool
	resource   schema.GroupVersionResource
	// slots is empty while the kind waits to be served (follow.go); c.mu
	// guards it and every slot's namespaces.
	slots []*slotInformer
	// overSlots is the informer over the slots (the one slot's, or a
	// multiInformer); informer is what GetInformer returns: overSlots,
	// or follow.
	overSlots cache.Informer
	informer  cache.Informer
	// follow is set under WithAPIDiscovery: the entry's informer then
	// reports synced while its resource is not served.
	follow *followInformer
}

// slotInformer is the informer of one slot of an entry.
type slotInformer struct {
	slot
	informer toolscache.SharedIndexInformer
	// factory runs informer; nil for an informer of Options.NewInformer,
	// which stop stops.
	factory informers.Factory
	stop    context.CancelFunc
}

// getEntry returns the entry of gvk in obj's form, building it unless
// failOnMissing, and whether the cache has started. Once started, it waits
// for the entry to sync unless block is false.
func (c *Cache) getEntry(ctx context.Context, gvk schema.GroupVersionKind, obj runtime.Object, failOnMissing, block bool) (*entry, bool, error) {
	key := entryKey{form: formOf(obj), gvk: gvk}
	c.mu.RLock()
	e, started := c.entries[key], c.started
	c.mu.RUnlock()
	fresh := e == nil
	if fresh {
		if failOnMissing {
			return nil, false, &cache.ErrResourceNotCached{GVK: gvk}
		}
		var err error
		if e, started, err = c.addInformerToMap(key, obj); err != nil {
			return nil, started, err
		}
	}
	// An informer built for this call has not synced when the call was
	// given up already, however quickly it syncs now.
	if block && started && ((fresh && ctx.Err() != nil) || !waitForSync(ctx, e.informer.HasSynced)) {
		return nil, started, apierrors.NewTimeoutError(fmt.Sprintf("failed waiting for %T Informer to sync", obj), 0)
	}
	return e, started, nil
}

// addInformerToMap builds the entry of key: its resource and scope from
// the mapper, its slots from the plan of its kind, and an informer per
// slot; it starts them if the cache runs. Under WithAPIDiscovery a kind
// the mapper does not know yet (its CRD not installed) gets an entry that
// waits for it (follow.go).
func (c *Cache) addInformerToMap(key entryKey, obj runtime.Object) (*entry, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil {
		return e, c.started, nil
	}
	e := &entry{key: key}
	mapping, err := c.config.mapper.RESTMapping(key.gvk.GroupKind(), key.gvk.Version)
	switch {
	case err == nil:
		if err := c.buildSlots(e, mapping, obj); err != nil {
			return nil, c.started, err
		}
	case c.config.settings.APIDiscovery && meta.IsNoMatchError(err):
		// Waits for the kind; resolve builds the slots once it is served.
	default:
		return nil, c.started, err
	}
	e.informer = e.overSlots
	if c.config.settings.APIDiscovery {
		e.follow = newFollowInformer(c, e, obj)
		e.informer = e.follow
	}
	c.entries[key] = e
	if c.started {
		c.startEntry(e)
	}
	return e, c.started, nil
}

// buildSlots builds e's informers, one per slot of the plan of its kind,
// for the resource and scope of mapping. The caller holds c.mu.
func (c *Cache) buildSlots(e *entry, mapping *meta.RESTMapping, obj runtime.Object) error {
	e.resource = mapping.Resource
	e.namespaced = mapping.Scope.Name() == meta.RESTScopeNameNamespace
	var slots []*slotInformer
	for _, s := range c.splitForCustom(c.config.plan(e.key.gvk).slots(e.namespaced)) {
		if !e.namespaced {
			s.namespaces = nil
		}
		si := &slotInformer{slot: s}
		parts := c.partsOf(e, s)
		var err error
		if c.config.newInformer != nil {
			si.informer, err = c.customInformer(e, parts, obj)
		} else {
			si.factory, si.informer, err = c.factoryInformer(e, parts)
		}
		if err != nil {
			return fmt.Errorf("crcache: %v: %w", e.key.gvk, err)
		}
		if h := c.config.watchErrorHandler; h != nil {
			if err := si.informer.SetWatchErrorHandlerWithContext(h); err != nil {
				return fmt.Errorf("crcache: %v: %w", e.key.gvk, err)
			}
		}
		slots = append(slots, si)
	}
	e.slots = slots
	e.overSlots = slots[0].informer
	if len(slots) > 1 {
		e.overSlots = &multiInformer{entry: e, done: c.done}
	}
	return nil
}

// splitForCustom gives each namespace a slot of its own when the caller's
// Options.NewInformer builds the informers: such an informer lists and
// watches one namespace, or all.
func (c *Cache) splitForCustom(slots []slot) []slot {
	if c.config.newInformer == nil {
		return slots
	}
	var out []slot
	for _, s := range slots {
		if len(s.namespaces) <= 1 {
			out = append(out, s)
			continue
		}
		for _, ns := range s.namespaces {
			out = append(out, slot{namespaces: []string{ns}, config: s.config})
		}
	}
	return out
}

// parts is what the informer of one slot is built from, whichever path
// builds it (the factory's, or Options.NewInformer's): assembled once, by
// partsOf, as controller-runtime's one addInformerToMap does.
type parts struct {
	// namespaces are those the informer lists and watches: nil for every
	// namespace, or for the factory options' own; else restricted, if
	// set, the one its field selector requires (restrictedNamespace).
	namespaces []string
	restricted string
	// tweak is the factory options' tweak, then the slot's selectors;
	// transform the slot's, else the factory options'.
	tweak     func(*metav1.ListOptions)
	transform toolscache.TransformFunc
	resync    time.Duration
	// metadata is the metadata client, whose lists and watches say the
	// kind (gvk.go).
	metadata metadata.Interface
}

// partsOf assembles the parts of the informer of slot s of e.
func (c *Cache) partsOf(e *entry, s slot) parts {
	p := parts{
		tweak:     s.config.tweak,
		transform: s.config.transform,
		resync:    jitter(s.config.syncPeriod),
		metadata:  kindedMetadata{Interface: c.metadata, resource: e.resource, gvk: e.key.gvk},
	}
	if user := c.config.settings.Tweak; user != nil {
		p.tweak = func(opts *metav1.ListOptions) {
			user(opts)
			s.config.tweak(opts)
		}
	}
	if p.transform == nil {
		p.transform = c.config.settings.Transform
	}
	// The factory path leaves the factory options' namespaces to them.
	if e.namespaced && (c.config.settings.Namespaces == nil || c.config.newInformer != nil) {
		p.namespaces, p.restricted = s.namespaces, s.restrictedNamespace()
	}
	return p
}

// factoryInformer builds the factory of one slot and its only informer.
// The factory options come first; the cache's own, after them, fold in
// what those set (settings) that the cache must see too.
func (c *Cache) factoryInformer(e *entry, p parts) (informers.Factory, toolscache.SharedIndexInformer, error) {
	key, resource := e.key, e.resource
	options := append(slices.Clip(c.config.options),
		informers.WithDynamicClient(c.dynamic),
		informers.WithMetadataClient(p.metadata),
		informers.WithTweakListOptions(p.tweak),
	)
	if p.transform != nil {
		options = append(options, informers.WithTransform(p.transform))
	}
	switch {
	case p.namespaces != nil:
		options = append(options, informers.WithNamespaces(p.namespaces...))
	case p.restricted != "":
		options = append(options, informers.WithNamespace(p.restricted))
	}
	if key.form == formUnstructured {
		options = append(options, informers.WithDynamicBuiltIns())
	}
	factory, err := informers.New(c.clientset, p.resync, options...)
	if err != nil {
		return nil, nil, err
	}
	c.factories = append(c.factories, factory)
	switch {
	case key.form == formMetadata:
		i, err := factory.ForMetadata(resource)
		if err != nil {
			return nil, nil, err
		}
		return factory, i.Informer(), nil
	case key.form == formUnstructured || slices.Contains(informers.SupportedResources(), resource):
		i, err := factory.ForResource(resource)
		if err != nil {
			return nil, nil, err
		}
		return factory, i.Informer(), nil
	}
	// A structured object of a type of the scheme alone: bound to the
	// factory as its typed resource.
	r, err := schemetype.Resource(c.config.restConfig, c.config.httpClient, c.config.scheme, key.gvk, resource, e.namespaced)
	if err != nil {
		return nil, nil, err
	}
	host, ok := factory.(binding.Host)
	if !ok {
		return nil, nil, errors.New("the factory cannot bind a resource")
	}
	if r, err = host.BindResource(r, nil); err != nil {
		return nil, nil, err
	}
	i, _ := host.ResolveBound(r)
	return factory, i, nil
}

// jitter spreads resyncs over ±10% of period, as controller-runtime does,
// so that the informers of a manager do not resync at once.
func jitter(period time.Duration) time.Duration {
	return time.Duration(float64(period) * (0.9 + rand.Float64()/5)) //nolint:gosec // not a secret
}

// startEntry runs e's informers under the cache's context, and under
// WithAPIDiscovery what resolves its kind. The caller holds c.mu and the
// cache has started.
func (c *Cache) startEntry(e *entry) {
	if c.stopped {
		return
	}
	if e.follow != nil && len(e.slots) == 0 {
		c.custom.Go(func() { e.follow.resolve(c.ctx) })
		return
	}
	c.startSlots(e)
}

// startSlots runs e's informers under the cache's context. The caller
// holds c.mu and the cache has started.
func (c *Cache) startSlots(e *entry) {
	for _, si := range e.slots {
		if si.factory != nil {
			si.factory.StartWithContext(c.ctx)
			continue
		}
		ctx, cancel := context.WithCancel(c.ctx)
		si.stop = cancel
		c.custom.Go(func() { si.informer.RunWithContext(ctx) })
	}
}

// remove stops e's informers and drops their caches. Their factories
// stay in c.factories, which Start shuts down when it ends.
func (e *entry) remove() {
	for _, si := range e.slots {
		if si.factory != nil {
			si.factory.RemoveInformer(e.resource)
		} else if si.stop != nil {
			si.stop()
		}
	}
}

// GetInformer returns the informer of obj's kind in obj's form, building
// it if needed; once the cache runs it waits for the informer to sync
// unless [cache.BlockUntilSynced](false).
func (c *Cache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	gvk, err := apiutil.GVKForObject(obj, c.config.scheme)
	if err != nil {
		return nil, err
	}
	e, _, err := c.getEntry(ctx, gvk, obj, false, blocks(opts))
	if err != nil {
		return nil, err
	}
	return e.informer, nil
}

// GetInformerForKind is GetInformer for the structured objects of gvk, a
// kind of the scheme.
func (c *Cache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	obj, err := c.config.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	e, _, err := c.getEntry(ctx, gvk, obj, false, blocks(opts))
	if err != nil {
		return nil, err
	}
	return e.informer, nil
}

// RemoveInformer stops the informer of obj's kind in obj's form and drops
// it with its cache; asking for it again builds a new one.
func (c *Cache) RemoveInformer(_ context.Context, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, c.config.scheme)
	if err != nil {
		return err
	}
	key := entryKey{form: formOf(obj), gvk: gvk}
	c.mu.Lock()
	e := c.entries[key]
	delete(c.entries, key)
	c.mu.Unlock()
	if e != nil {
		if e.follow != nil {
			e.follow.close()
		}
		e.remove()
	}
	return nil
}

// blocks is whether a GetInformer with opts waits for the sync.
func blocks(opts []cache.InformerGetOption) bool {
	var o cache.InformerGetOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o.BlockUntilSynced == nil || *o.BlockUntilSynced
}

// waitForSync waits until every synced func reports true, or ctx ends.
func waitForSync(ctx context.Context, synced ...func() bool) bool {
	fns := make([]toolscache.InformerSynced, len(synced))
	for i, f := range synced {
		fns[i] = f
	}
	return toolscache.WaitForCacheSync(ctx.Done(), fns...)
}
