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
	"strconv"
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
	"github.com/kubeinformers/informers/internal/bridge"
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
	// factory runs informer; nil for an informer of Options.NewInformer.
	// stop ends the context either runs under, once started.
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
	if block && started && ((fresh && ctx.Err() != nil) || !waitForSync(ctx, c.syncedOrStopped(e))) {
		return nil, started, apierrors.NewTimeoutError(fmt.Sprintf("failed waiting for %T Informer to sync", obj), 0)
	}
	if block && started {
		if err := c.overBudget(e); err != nil {
			return nil, started, err // a read of a stopped informer: budget.go
		}
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
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	p := c.config.plan(e.key.gvk)
	if !namespaced && p.ownNamespaces {
		// Known only now, for a kind that was not served when the cache
		// was made (WithAPIDiscovery).
		return errClusterScopedNamespaces(p.example)
	}
	e.resource = mapping.Resource
	e.namespaced = namespaced
	var slots []*slotInformer
	planned := c.splitForCustom(p.slots(e.namespaced))
	for i, s := range planned {
		if !e.namespaced {
			s.namespaces = nil
		}
		si := &slotInformer{slot: s}
		parts := c.partsOf(e, s)
		var err error
		if c.config.newInformer != nil {
			si.informer, err = c.customInformer(e, parts, obj)
		} else {
			si.factory, si.informer, err = c.factoryInformer(e, parts, metricsLabel(c.config.name, e.key, i, len(planned)))
		}
		if err != nil {
			return abandon(slots, fmt.Errorf("crcache: %v: %w", e.key.gvk, err))
		}
		slots = append(slots, si)
		if h := c.config.watchErrorHandler; h != nil {
			if err := si.informer.SetWatchErrorHandlerWithContext(h); err != nil {
				return abandon(slots, fmt.Errorf("crcache: %v: %w", e.key.gvk, err))
			}
		}
	}
	e.slots = slots
	e.overSlots = slots[0].informer
	if len(slots) > 1 {
		e.overSlots = &multiInformer{entry: e, done: c.done}
	}
	return nil
}

// abandon shuts down the factories of a build that failed with err, none
// of which has started, so that nothing of it stays; it returns err.
func abandon(slots []*slotInformer, err error) error {
	for _, si := range slots {
		if si.factory != nil {
			si.factory.Shutdown()
		}
	}
	return err
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
func (c *Cache) factoryInformer(e *entry, p parts, label string) (informers.Factory, toolscache.SharedIndexInformer, error) {
	key, resource, settings := e.key, e.resource, c.config.settings
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
	if settings.InformerName != nil {
		// client-go's metrics take a resource once per name: the first
		// informer of it registers; the others (another form, another
		// namespace slot, one built again after RemoveInformer) do not,
		// rather than each log a duplicate. A metadata informer
		// registers none (the factory's rule).
		if key.form == formMetadata || c.named[resource] {
			options = append(options, informers.WithInformerName(nil))
		}
	}
	factory, err := informers.New(c.clientset, p.resync, options...)
	if err != nil {
		return nil, nil, err
	}
	b, ok := factory.(bridge.Factory)
	if !ok {
		factory.Shutdown()
		return nil, nil, fmt.Errorf("the factory %T cannot take a metrics label", factory)
	}
	b.BorrowName(label)
	if bytes, ok := c.budgets[resource]; ok {
		if err := factory.SetResourceMemoryBudget(resource, bytes); err != nil {
			factory.Shutdown() // never started: nothing of it stays
			return nil, nil, err
		}
	}
	informer, err := c.informerOf(factory, key, resource, e.namespaced)
	if err != nil {
		factory.Shutdown() // never started: nothing of it stays
		return nil, nil, err
	}
	if settings.InformerName != nil && key.form != formMetadata {
		c.named[resource] = true
	}
	return factory, informer, nil
}

// metricsLabel is the factory label of this module's metrics for slot i of
// n of the informer of key, in a cache named name: the same on every run
// of the same operator, whatever order the informers are built in. With n
// above 1 (namespaces with settings of their own) it names the slot by
// its place in the sorted namespaces.
func metricsLabel(name string, key entryKey, i, n int) string {
	kind := key.gvk.Kind + "." + key.gvk.Version
	if key.gvk.Group != "" {
		kind += "." + key.gvk.Group
	}
	label := name + "/" + [...]string{"structured", "unstructured", "metadata"}[key.form] + "/" + kind
	if n > 1 {
		label += "/slot-" + strconv.Itoa(i)
	}
	return label
}

// informerOf asks factory for the informer of resource in key's form.
func (c *Cache) informerOf(factory informers.Factory, key entryKey, resource schema.GroupVersionResource, namespaced bool) (toolscache.SharedIndexInformer, error) {
	switch {
	case key.form == formMetadata:
		i, err := factory.ForMetadata(resource)
		if err != nil {
			return nil, err
		}
		return i.Informer(), nil
	case key.form == formUnstructured || slices.Contains(informers.SupportedResources(), resource):
		i, err := factory.ForResource(resource)
		if err != nil {
			return nil, err
		}
		return i.Informer(), nil
	}
	// A structured object of a type of the scheme alone: bound to the
	// factory as its typed resource.
	r, err := schemetype.Resource(c.config.restConfig, c.config.httpClient, c.config.scheme, key.gvk, resource, namespaced)
	if err != nil {
		return nil, err
	}
	host, ok := factory.(binding.Host)
	if !ok {
		return nil, errors.New("the factory cannot bind a resource")
	}
	if r, err = host.BindResource(r, nil); err != nil {
		return nil, err
	}
	i, _ := host.ResolveBound(r)
	return i, nil
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
		c.running.Go(func() { e.follow.resolve(c.ctx) })
		return
	}
	c.startSlots(e)
}

// startSlots runs e's informers, each under a context of its own within
// the cache's, which remove ends. While the factories of an informer of
// the same key that RemoveInformer removed still shut down, they start
// once those have: the factory label of both is the same, and the old
// one's Shutdown deletes its series. The caller holds c.mu and the cache
// has started.
func (c *Cache) startSlots(e *entry) {
	if prev := c.removing[e.key]; prev != nil {
		c.running.Go(func() {
			select {
			case <-prev:
			case <-c.ctx.Done():
				return
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if !c.stopped && c.entries[e.key] == e {
				c.startSlots(e)
			}
		})
		return
	}
	for _, si := range e.slots {
		ctx, cancel := context.WithCancel(c.ctx)
		si.stop = cancel
		if si.factory != nil {
			si.factory.StartWithContext(ctx)
			continue
		}
		c.running.Go(func() { si.informer.RunWithContext(ctx) })
	}
}

// remove stops e's informers, which RemoveInformer has dropped from the
// cache, without waiting for them: RemoveInformer may be called from one
// of their own event handlers, which their stop waits for, as
// controller-runtime's Remove does not wait. Their factories shut down
// in the background (c.removing says so until they have), and Start
// waits for that before it returns; once Start has stopped the cache, it
// shuts them down itself. The caller holds c.mu.
func (c *Cache) remove(e *entry) {
	if e.follow != nil {
		e.follow.close()
	}
	var factories []informers.Factory
	for _, si := range e.slots {
		if si.stop != nil {
			si.stop()
		}
		if si.factory != nil {
			factories = append(factories, si.factory)
		}
	}
	if len(factories) == 0 || c.stopped {
		return
	}
	// An informer of the same key removed before, still shutting down,
	// is done first.
	prev, done := c.removing[e.key], make(chan struct{})
	c.removing[e.key] = done
	c.running.Go(func() {
		for _, f := range factories {
			f.Shutdown()
		}
		if prev != nil {
			<-prev
		}
		c.mu.Lock()
		if c.removing[e.key] == done {
			delete(c.removing, e.key)
		}
		c.mu.Unlock()
		close(done)
	})
}

// GetInformer returns the informer of obj's kind in obj's form, building
// it if needed; once the cache runs it waits for the informer to sync
// unless [cache.BlockUntilSynced](false).
func (c *Cache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	gvk, err := apiutil.GVKForObject(obj, c.config.scheme)
	if err != nil {
		return nil, err
	}
	return c.informerOfKind(ctx, gvk, obj, opts)
}

// GetInformerForKind is GetInformer for the structured objects of gvk, a
// kind of the scheme.
func (c *Cache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	obj, err := c.config.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	return c.informerOfKind(ctx, gvk, obj, opts)
}

// informerOfKind is the informer of gvk in obj's form, as GetInformer
// returns it.
func (c *Cache) informerOfKind(ctx context.Context, gvk schema.GroupVersionKind, obj runtime.Object, opts []cache.InformerGetOption) (cache.Informer, error) {
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
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil {
		delete(c.entries, key)
		c.remove(e)
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
