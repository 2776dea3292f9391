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

package multinamespace

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/shard"
)

// This file changes the composite's set of namespaces while it runs
// (SetNamespaces): a namespace added gets its own informer, configured
// as the others and started if the composite runs; a namespace removed is
// drained (drain.go), stopped, and each object it held reaches every
// handler as a deletion; a namespace kept is not touched.

// drainTimeout bounds the wait for a removed namespace's events to reach
// the handlers, for a watch that never passes the marker on (one stuck
// reconnecting, say). Past it the namespace is stopped anyway; what its
// store holds still reaches the handlers as deletions.
const drainTimeout = 30 * time.Second

// SetNamespaces replaces the composite's namespaces with namespaces (at
// least one, each a valid name, none twice); see the factory's
// SetNamespaces for what a handler sees. When it returns, the removed
// namespaces' informers have stopped, every handler has been told of
// their objects' departure, and listers no longer see them (from the start
// of the call); the added namespaces' informers run if the composite
// does, and their objects arrive as add events as they are listed. It
// fails, changing nothing, on bad input or for a composite built by [New].
//
// It must not be called from one of the composite's event handlers: it
// waits for the removed namespaces' deliveries to end.
func (c *Informer) SetNamespaces(namespaces []string) error {
	if err := Check(namespaces); err != nil {
		return err
	}
	if c.builder == nil {
		return errors.New("the informer's namespaces are fixed")
	}
	c.setMu.Lock()
	defer c.setMu.Unlock()

	want := slices.Sorted(slices.Values(namespaces))
	c.mu.Lock()
	old := c.view.Load()
	var kept, added, removed []*member
	for _, m := range old.members {
		if _, ok := slices.BinarySearch(want, m.ns); ok {
			kept = append(kept, m)
		} else {
			removed = append(removed, m)
		}
	}
	for _, ns := range want {
		if _, ok := old.byNS[ns]; !ok {
			added = append(added, c.add(ns))
		}
	}
	if len(added) == 0 && len(removed) == 0 {
		c.mu.Unlock()
		return nil
	}
	members := slices.Concat(kept, added)
	slices.SortFunc(members, func(a, b *member) int { return strings.Compare(a.ns, b.ns) })
	// From here on, listers see the new set.
	c.view.Store(newView(members))
	c.changed.Broadcast()
	for _, m := range added {
		if c.started && !c.ending {
			c.start(m)
		}
	}
	delivered := c.started
	for _, m := range removed {
		m.removing = true
	}
	c.mu.Unlock()

	if c.builder.Removing != nil {
		// Before any of them is drained or stopped: from the start of
		// the call the removed namespaces are out of the set.
		for _, m := range removed {
			c.builder.Removing(m.ns)
		}
	}
	for _, m := range removed {
		c.remove(m, delivered)
	}
	return nil
}

// add builds the informer of namespace ns and gives it what the composite
// was given: its transform, watch error handler, shard selector and
// indexers, and every handler. c.mu is held.
func (c *Informer) add(ns string) *member {
	b := c.builder.Add(ns)
	m := &member{ns: ns, inf: b.Informer, drain: b.Drain}
	// A fresh informer accepts all of these: it has not started.
	logErr := func(what string, err error) {
		if err != nil {
			klog.Background().Error(err, "Cannot configure the informer of an added namespace", "namespace", ns, "setting", what)
		}
	}
	if c.transform != nil {
		logErr("transform", m.inf.SetTransform(c.transform))
	}
	if c.watchErrors != nil {
		logErr("watch error handler", m.inf.SetWatchErrorHandlerWithContext(c.watchErrors))
	}
	if c.selectorSet {
		if s, ok := m.inf.(shard.Setter); ok {
			logErr("shard selector", s.SetShardSelector(c.selector))
		}
	}
	if len(c.indexers) > 0 {
		logErr("indexers", m.inf.AddIndexers(c.indexers))
	}
	for reg := range c.regs {
		logErr("event handler", reg.addTo(m))
	}
	return m
}

// remove stops m, a namespace that SetNamespaces removed, and tells every
// handler that its objects are gone (when delivered, the composite had
// started and handlers may hold them).
func (c *Informer) remove(m *member, delivered bool) {
	c.mu.Lock()
	running := m.done != nil
	var regs []draining
	for reg := range c.regs {
		if r := reg.subs[m]; r != nil {
			regs = append(regs, draining{r.drained, reg.removed})
		}
	}
	ctx := c.runCtx
	c.mu.Unlock()

	if running {
		c.drain(ctx, m, regs)
		m.cancel()
		<-m.done
	}

	// Every delivery of m has ended: what its store holds is what its
	// handlers may still hold. Each leaves as a tombstone.
	var gone []interface{}
	if delivered {
		for _, obj := range m.inf.GetStore().List() {
			if isDrainMarker(obj) {
				continue
			}
			key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err != nil {
				continue
			}
			gone = append(gone, cache.DeletedFinalStateUnknown{Key: key, Obj: obj})
		}
	}
	c.mu.Lock()
	var serials []*serialHandler
	for reg := range c.regs {
		if _, ok := reg.subs[m]; ok {
			delete(reg.subs, m)
			serials = append(serials, reg.serial)
		}
	}
	c.mu.Unlock()
	if len(gone) > 0 {
		for _, s := range serials {
			s.departed(gone)
		}
	}
	// Release the memory even if someone still holds the informer.
	if err := m.inf.GetStore().Replace(nil, ""); err != nil {
		klog.Background().Error(err, "Cannot empty the store of a removed namespace", "namespace", m.ns)
	}
	c.builder.Removed(m.ns)
}

// drain waits until every event m's informer has put in its store has
// reached the handlers of regs: its watch stops passing events on and
// sends a marker, which each handler sees after everything before it.
// Without it, the informer's stop would drop the events still queued for
// a handler, and a deletion among them would leave the handler holding an
// object the store no longer has, so that no tombstone would ever tell it.
// An informer that has not synced is not drained: until then its events
// are the initial list's additions, which the tombstones cover.
func (c *Informer) drain(ctx context.Context, m *member, regs []draining) {
	if m.drain == nil || !m.inf.HasSynced() || len(regs) == 0 {
		return
	}
	m.drain.request()
	timer := time.NewTimer(drainTimeout)
	defer timer.Stop()
	for _, r := range regs {
		select {
		case <-r.drained:
		case <-r.removed: // its deliveries have ended
		case <-ctx.Done():
			return
		case <-timer.C:
			klog.Background().Info("A removed namespace's events did not drain in time; stopping it anyway", "namespace", m.ns, "timeout", drainTimeout)
			return
		}
	}
}

// draining is what drain waits on for one registration: the marker's
// arrival, or the registration's removal.
type draining struct{ drained, removed <-chan struct{} }
