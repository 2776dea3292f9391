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
	gvk        schema.GroupVersionKind
	namespaced bool
	slots      []*slotInformer
	informer   cache.Informer
}

// slotInformer is the informer of one slot of an entry.
type slotInformer struct {
	slot
	resource schema.GroupVersionResource
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
	if e == nil {
		if failOnMissing {
			return nil, false, &cache.ErrResourceNotCached{GVK: gvk}
		}
		var err error
		if e, started, err = c.addInformerToMap(key, obj); err != nil {
			return nil, started, err
		}
	}
	if block && started && !e.informer.HasSynced() {
		if !waitForSync(ctx, e.informer.HasSynced) {
			return nil, started, apierrors.NewTimeoutError(fmt.Sprintf("failed waiting for %T Informer to sync", obj), 0)
		}
	}
	return e, started, nil
}

// addInformerToMap builds the entry of key: its resource and scope from
// the mapper, its slots from the plan of its kind, and an informer per
// slot; it starts them if the cache runs.
func (c *Cache) addInformerToMap(key entryKey, obj runtime.Object) (*entry, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil {
		return e, c.started, nil
	}
	mapping, err := c.config.mapper.RESTMapping(key.gvk.GroupKind(), key.gvk.Version)
	if err != nil {
		return nil, c.started, err
	}
	e := &entry{gvk: key.gvk, namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}
	for _, s := range c.config.plan(key.gvk).slots(e.namespaced) {
		si := &slotInformer{slot: s, resource: mapping.Resource}
		if c.config.newInformer != nil {
			si.informer, err = c.customInformer(key, mapping, s, obj)
		} else {
			si.factory, si.informer, err = c.factoryInformer(key, mapping, s, e.namespaced)
		}
		if err != nil {
			return nil, c.started, fmt.Errorf("crcache: %v: %w", key.gvk, err)
		}
		if h := c.config.watchErrorHandler; h != nil {
			if err := si.informer.SetWatchErrorHandlerWithContext(h); err != nil {
				return nil, c.started, fmt.Errorf("crcache: %v: %w", key.gvk, err)
			}
		}
		e.slots = append(e.slots, si)
	}
	e.informer = e.slots[0].informer
	if len(e.slots) > 1 {
		e.informer = &multiInformer{entry: e, done: c.done}
	}
	c.entries[key] = e
	if c.started {
		c.startEntry(e)
	}
	return e, c.started, nil
}

// factoryInformer builds the factory of one slot and its only informer.
func (c *Cache) factoryInformer(key entryKey, mapping *meta.RESTMapping, s slot, namespaced bool) (informers.Factory, toolscache.SharedIndexInformer, error) {
	transform := s.config.transform
	if key.form == formMetadata {
		// The metadata client's objects say PartialObjectMetadata;
		// controller-runtime's say the kind they are of.
		transform = withGVK(key.gvk, transform)
	}
	options := []informers.SharedInformerOption{
		informers.WithDynamicClient(c.dynamic),
		informers.WithMetadataClient(c.metadata),
		informers.WithTweakListOptions(s.config.tweak),
	}
	if transform != nil {
		options = append(options, informers.WithTransform(transform))
	}
	if ns := s.requestNamespace(); ns != "" && namespaced {
		options = append(options, informers.WithNamespace(ns))
	}
	if key.form == formUnstructured {
		options = append(options, informers.WithDynamicBuiltIns())
	}
	options = append(options, c.config.options...)
	factory, err := informers.New(c.clientset, jitter(s.config.syncPeriod), options...)
	if err != nil {
		return nil, nil, err
	}
	c.factories = append(c.factories, factory)
	resource := mapping.Resource
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
	r, err := schemetype.Resource(c.config.restConfig, c.config.httpClient, c.config.scheme, key.gvk, resource, namespaced)
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

// withGVK sets gvk on metadata-only objects before transform runs.
func withGVK(gvk schema.GroupVersionKind, transform toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			m.SetGroupVersionKind(gvk)
		}
		if transform == nil {
			return obj, nil
		}
		return transform(obj)
	}
}

// jitter spreads resyncs over ±10% of period, as controller-runtime does,
// so that the informers of a manager do not resync at once.
func jitter(period time.Duration) time.Duration {
	return time.Duration(float64(period) * (0.9 + rand.Float64()/5)) //nolint:gosec // not a secret
}

// startEntry runs e's informers under the cache's context. The caller
// holds c.mu and the cache has started.
func (c *Cache) startEntry(e *entry) {
	if c.stopped {
		return
	}
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
			si.factory.RemoveInformer(si.resource)
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
