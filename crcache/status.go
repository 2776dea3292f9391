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
	"maps"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/multinamespace"
)

// This file is what the cache offers beyond controller-runtime's
// cache.Cache: the factory's readiness, status, notices, namespaces changed
// at run time and read-your-writes, over every informer of the cache.
// Reach it from a manager with mgr.GetCache().(*crcache.Cache).

// Ready returns nil when the cache runs and every informer has synced and
// its last list or watch succeeded; otherwise one error naming each
// informer that is not, with its last error ([informers.Factory.Ready]).
// A kind waiting to be served (WithAPIDiscovery) is not an error. It makes
// no request.
func (c *Cache) Ready() error {
	c.mu.RLock()
	started, stopped := c.started, c.stopped
	factories := c.liveFactories()
	c.mu.RUnlock()
	switch {
	case !started:
		return errors.New("crcache: the cache has not started")
	case stopped:
		return errors.New("crcache: the cache has stopped")
	}
	var errs []error
	for _, f := range factories {
		if err := f.Ready(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ReadyzCheck is [Cache.Ready] as a controller-runtime healthz.Checker:
// mgr.AddReadyzCheck("informers", c.ReadyzCheck).
func (c *Cache) ReadyzCheck(_ *http.Request) error { return c.Ready() }

// SyncStatus reports, per informer of the cache, whether it has synced
// ([informers.Factory.SyncStatus]); an informer of several namespace
// settings is synced when every one is.
func (c *Cache) SyncStatus() map[informers.InformerID]bool {
	c.mu.RLock()
	factories := c.liveFactories()
	c.mu.RUnlock()
	out := map[informers.InformerID]bool{}
	for _, f := range factories {
		for id, synced := range f.SyncStatus() {
			if prev, ok := out[id]; ok {
				synced = synced && prev
			}
			out[id] = synced
		}
	}
	return out
}

// Notices returns conditions an operator should know of that do not make
// the cache unready ([informers.Factory.Notices]), and the kinds that wait
// to be served (WithAPIDiscovery), sorted.
func (c *Cache) Notices() []string {
	c.mu.RLock()
	factories := c.liveFactories()
	var out []string
	for _, e := range c.entries {
		if len(e.slots) == 0 {
			out = append(out, fmt.Sprintf("%v: no resource serves the kind yet: the cache waits for it (WithAPIDiscovery)", e.key.gvk))
		}
	}
	c.mu.RUnlock()
	for _, f := range factories {
		out = append(out, f.Notices()...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// liveFactories are the factories of the entries the cache holds. The
// caller holds c.mu.
func (c *Cache) liveFactories() []informers.Factory {
	var out []informers.Factory
	for _, key := range slices.SortedFunc(maps.Keys(c.entries), compareKeys) {
		for _, si := range c.entries[key].slots {
			if si.factory != nil {
				out = append(out, si.factory)
			}
		}
	}
	return out
}

func compareKeys(a, b entryKey) int {
	if c := strings.Compare(a.gvk.String(), b.gvk.String()); c != 0 {
		return c
	}
	return int(a.form) - int(b.form)
}

// SetNamespaces replaces the cache's namespaces (those of
// DefaultNamespaces, or of the factory option WithNamespaces) with
// namespaces, while the cache runs, for the informers built and those
// built later ([informers.Factory.SetNamespaces]): a namespace added lists
// and watches; one removed leaves the cache with a delete event per
// object to every handler; one kept makes no new request. Kinds of
// ByObject with namespaces of their own are not changed.
//
// It is an error, and changes nothing, when the cache watches every
// namespace, when its namespaces have settings of their own
// (DefaultNamespaces values that set anything, or the AllNamespaces key),
// with Options.NewInformer, and for an empty list or an invalid or
// repeated name. It must not be called from an event handler.
func (c *Cache) SetNamespaces(namespaces ...string) error {
	if err := multinamespace.Check(namespaces); err != nil {
		return fmt.Errorf("crcache: SetNamespaces(%q): %w", namespaces, err)
	}
	sorted := slices.Sorted(slices.Values(namespaces))
	c.setNamespaces.Lock()
	defer c.setNamespaces.Unlock()

	c.mu.Lock()
	if err := c.namespacesChangeable(); err != nil {
		c.mu.Unlock()
		return fmt.Errorf("crcache: SetNamespaces(%q): %w", namespaces, err)
	}
	follow := func(p plan) plan {
		p.perNamespace = slices.Clone(p.perNamespace)
		for i := range p.perNamespace {
			if p.perNamespace[i].follows {
				p.perNamespace[i].namespaces = sorted
			}
		}
		return p
	}
	c.config.defaults = follow(c.config.defaults)
	for gvk, p := range c.config.byObject {
		c.config.byObject[gvk] = follow(p)
	}
	var targets []informers.Factory
	for _, e := range c.entries {
		for _, si := range e.slots {
			if si.follows && e.namespaced {
				si.namespaces = sorted
				targets = append(targets, si.factory)
			}
		}
	}
	c.mu.Unlock()

	var errs []error
	for _, f := range targets {
		if err := f.SetNamespaces(sorted...); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("crcache: SetNamespaces(%q): %w", namespaces, errors.Join(errs...))
	}
	return nil
}

// namespacesChangeable says why SetNamespaces cannot change the cache's
// namespaces, or nil. The caller holds c.mu.
func (c *Cache) namespacesChangeable() error {
	switch {
	case c.config.newInformer != nil:
		return errors.New("the cache's informers are built by Options.NewInformer")
	case c.stopped:
		return errors.New("the cache has stopped")
	}
	for _, s := range c.config.defaults.perNamespace {
		if s.follows {
			return nil
		}
	}
	if len(c.config.defaults.perNamespace) == 0 {
		return errors.New("the cache watches every namespace (give DefaultNamespaces, or the factory option WithNamespaces, to change them later)")
	}
	return errors.New("the cache's namespaces have settings of their own (DefaultNamespaces values that set anything, or the AllNamespaces key)")
}

// WaitForResourceVersion waits until every informer of gvk the cache holds,
// in every form, reflects namespace at resourceVersion or later
// ([informers.Factory.WaitForResourceVersion]): call it after a write and
// before a read that must see it, with the namespace of the write ("" for
// a cluster-scoped object or every namespace) and the resourceVersion it
// returned. It is an error wrapping [informers.ErrUnknownResource] when
// the cache holds no informer of gvk.
func (c *Cache) WaitForResourceVersion(ctx context.Context, gvk schema.GroupVersionKind, namespace, resourceVersion string) error {
	type target struct {
		factory  informers.Factory
		resource schema.GroupVersionResource
		ns       string
	}
	var targets []target
	c.mu.RLock()
	for key, e := range c.entries {
		if key.gvk != gvk {
			continue
		}
		ns := namespace
		if !e.namespaced {
			ns = ""
		}
		for _, si := range e.slots {
			if si.factory == nil {
				continue
			}
			if ns != "" && e.slotOf(ns) != si {
				continue
			}
			targets = append(targets, target{si.factory, e.resource, ns})
		}
	}
	c.mu.RUnlock()
	if len(targets) == 0 {
		return fmt.Errorf("crcache: WaitForResourceVersion(%v, %q): %w: the cache holds no informer of the kind in that namespace", gvk, namespace, informers.ErrUnknownResource)
	}
	for _, t := range targets {
		if err := t.factory.WaitForResourceVersion(ctx, t.resource, t.ns, resourceVersion); err != nil {
			return fmt.Errorf("crcache: %w", err)
		}
	}
	return nil
}
