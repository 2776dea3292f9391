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
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/bridge"
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

// MemoryStatus reports, per informer of the cache, its objects and the
// estimate of the heap its cache retains ([informers.Factory.MemoryStatus]).
// A kind of several namespace settings has one informer per setting, each
// listing and watching on its own: their objects and bytes are summed, and
// Budget is the budget each of them has (the cache's one budget, or the
// resource's own, which caps each setting's informer), never a sum.
func (c *Cache) MemoryStatus() map[informers.InformerID]informers.MemoryStatus {
	c.mu.RLock()
	factories := c.liveFactories()
	c.mu.RUnlock()
	out := map[informers.InformerID]informers.MemoryStatus{}
	for _, f := range factories {
		for id, m := range f.MemoryStatus() {
			prev := out[id]
			m.Objects += prev.Objects
			m.Bytes += prev.Bytes
			m.Budget = max(m.Budget, prev.Budget) // the same for every setting
			if m.Stopped == nil {
				m.Stopped = prev.Stopped
			}
			out[id] = m
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
// ByObject with namespaces of their own are not changed, nor are the
// DefaultNamespaces entries that set anything (a selector, a transform):
// those namespaces stay, with their settings, whatever namespaces says.
//
// Once the cache has started, it returns when every informer has listed
// the added namespaces; reads (Get, List) see the new set only from then
// on, the added namespaces with their objects, never empty before their
// first list: meanwhile a read in an added namespace waits for the call
// (its informer hands the namespace's objects to the handlers first), and
// a List of every namespace has the old ones only. If a list or watch of an added namespace fails before it
// has synced, or the cache stops meanwhile, it takes the added
// namespaces out of every informer again, leaving the cache's namespaces
// as they were, and returns an error naming the kind, the namespace and
// the failure.
//
// It is an error, and changes nothing, when the cache watches every
// namespace, when no DefaultNamespaces entry is free of settings, with the
// AllNamespaces key, with Options.NewInformer, for a namespace that has a
// DefaultNamespaces entry of its own settings (it would be cached twice,
// once without them), and for an empty list or an invalid or repeated
// name. It must not be called from an event handler.
func (c *Cache) SetNamespaces(namespaces ...string) error {
	fail := func(err error) error { return fmt.Errorf("crcache: SetNamespaces(%q): %w", namespaces, err) }
	if err := multinamespace.Check(namespaces); err != nil {
		return fail(err)
	}
	want := slices.Sorted(slices.Values(namespaces))
	c.setNamespaces.Lock()
	defer c.setNamespaces.Unlock()

	c.mu.RLock()
	err := c.namespacesChangeable(want)
	old := c.config.followedNamespaces()
	c.mu.RUnlock()
	if err != nil {
		return fail(err)
	}
	union := slices.Compact(slices.Sorted(slices.Values(slices.Concat(old, want))))
	added := slices.DeleteFunc(slices.Clone(want), func(ns string) bool { return slices.Contains(old, ns) })

	// First every informer that follows the cache's namespaces adds the
	// new ones and lists them; reads still see the old set only, and
	// those in an added namespace wait (Get, List). An informer built
	// meanwhile has the old set: the loop widens it too, until none is
	// left, and then switches reads under the same lock.
	change := &namespaceChange{added: added, done: make(chan struct{})}
	c.mu.Lock()
	c.adding = change
	c.mu.Unlock()
	// Before a restore, which waits for the handlers to be handed the
	// removal of the added namespaces: a handler may be a waiting reader.
	finish := sync.OnceFunc(func() {
		c.mu.Lock()
		c.adding = nil
		c.mu.Unlock()
		close(change.done)
	})
	defer finish()
	widened := map[informers.Factory]bool{}
	var kept []follower
	for {
		c.mu.Lock()
		pending, started := c.followers(widened), c.started
		if len(pending) == 0 {
			kept = c.followers(nil)
			c.switchNamespaces(want)
			c.adding = nil
			c.mu.Unlock()
			finish()
			break
		}
		c.mu.Unlock()
		for _, f := range pending {
			widened[f.factory] = true
			if err := c.widen(f, union, added, started); err != nil {
				finish()
				return fail(errors.Join(fmt.Errorf("%v: %w; the cache's namespaces are unchanged", f.gvk, err), c.restore(widened, old)))
			}
		}
	}

	// Then the removed namespaces go: reads no longer see them.
	var errs []error
	for _, f := range kept {
		if err := f.factory.SetNamespaces(want...); err != nil {
			errs = append(errs, fmt.Errorf("%v: %w", f.gvk, err))
		}
	}
	if len(errs) > 0 {
		return fail(errors.Join(errs...))
	}
	return nil
}

// namespaceChange is a SetNamespaces call under way: done is closed once
// it has switched reads to its namespaces, or failed.
type namespaceChange struct {
	added []string
	done  chan struct{}
}

// follower is the factory of a slot that follows the cache's namespaces.
type follower struct {
	gvk      schema.GroupVersionKind
	resource schema.GroupVersionResource
	factory  informers.Factory
}

// followers returns the factories of the slots that follow the cache's
// namespaces, but those in skip. The caller holds c.mu.
func (c *Cache) followers(skip map[informers.Factory]bool) []follower {
	var out []follower
	for _, key := range slices.SortedFunc(maps.Keys(c.entries), compareKeys) {
		e := c.entries[key]
		for _, si := range e.slots {
			if si.follows && e.namespaced && si.factory != nil && !skip[si.factory] {
				out = append(out, follower{gvk: key.gvk, resource: e.resource, factory: si.factory})
			}
		}
	}
	return out
}

// widen gives f's informer the namespaces union and, once the cache has
// started, waits until it has listed added: nil then, or the error of a
// list or watch of one of them, or that the cache stopped.
func (c *Cache) widen(f follower, union, added []string, started bool) error {
	if err := f.factory.SetNamespaces(union...); err != nil {
		return err
	}
	if !started || len(added) == 0 {
		return nil
	}
	b, ok := f.factory.(bridge.Factory)
	if !ok {
		return fmt.Errorf("the factory %T cannot say whether a namespace has synced", f.factory)
	}
	for _, ns := range added {
		var failed error
		err := wait.PollUntilContextCancel(c.ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
			listed, err := bridge.NamespaceListed(b, f.resource, ns)
			failed = err
			return listed || err != nil, nil
		})
		switch {
		case failed != nil:
			return fmt.Errorf("namespace %s did not sync: %w", ns, failed)
		case err != nil:
			return fmt.Errorf("namespace %s did not sync: the cache stopped", ns)
		}
	}
	return nil
}

// restore gives the widened factories the namespaces old again, which
// takes out those widen added; the old ones were never touched.
func (c *Cache) restore(widened map[informers.Factory]bool, old []string) error {
	var errs []error
	for f := range widened {
		if err := f.SetNamespaces(old...); err != nil {
			errs = append(errs, fmt.Errorf("restoring the namespaces %q: %w", old, err))
		}
	}
	return errors.Join(errs...)
}

// switchNamespaces makes namespaces the cache's: the plans of the kinds
// built later, and where reads of the built ones go. The caller holds
// c.mu.
func (c *Cache) switchNamespaces(namespaces []string) {
	follow := func(p plan) plan {
		p.perNamespace = slices.Clone(p.perNamespace)
		for i := range p.perNamespace {
			if p.perNamespace[i].follows {
				p.perNamespace[i].namespaces = namespaces
			}
		}
		return p
	}
	c.config.defaults = follow(c.config.defaults)
	for gvk, p := range c.config.byObject {
		c.config.byObject[gvk] = follow(p)
	}
	for _, e := range c.entries {
		for _, si := range e.slots {
			if si.follows && e.namespaced {
				si.namespaces = namespaces
			}
		}
	}
}

// namespacesChangeable says why SetNamespaces cannot make namespaces the
// cache's, or nil. The caller holds c.mu.
func (c *Cache) namespacesChangeable(namespaces []string) error {
	switch {
	case c.config.newInformer != nil:
		return errors.New("the cache's informers are built by Options.NewInformer")
	case c.stopped:
		return errors.New("the cache has stopped")
	}
	if c.config.followedNamespaces() == nil {
		if len(c.config.defaults.perNamespace) == 0 {
			return errors.New("the cache watches every namespace (give DefaultNamespaces, or the factory option WithNamespaces, to change them later)")
		}
		return errors.New("the cache's namespaces have settings of their own (DefaultNamespaces values that set anything, or the AllNamespaces key)")
	}
	for _, s := range c.config.defaults.perNamespace {
		for _, ns := range s.namespaces {
			if !s.follows && slices.Contains(namespaces, ns) {
				return fmt.Errorf("namespace %q has settings of its own (its DefaultNamespaces entry), which SetNamespaces does not change: leave it out, it stays in the cache with them", ns)
			}
		}
	}
	return nil
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
