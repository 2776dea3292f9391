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
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kubeinformers/informers/internal/bridge"
	"github.com/kubeinformers/informers/internal/served"
)

// This file is what WithAPIDiscovery adds to the cache: kinds that come
// and go. controller-runtime's own cache fails GetInformer for a kind no
// CRD serves yet, so a controller's source retries every 10 s, logs each
// failure, and the manager exits after CacheSyncTimeout. Here the entry of
// such a kind waits for it instead: GetInformer succeeds at once, the
// informer reports synced (there is nothing to sync), reads find nothing,
// and once the mapper knows the kind the cache builds its informers and
// hands them the handlers and indexers given meanwhile. A kind that stops
// being served later is the factory's informer's to follow (it empties by
// delete events and waits); meanwhile it reports synced here too, so that
// a controller started then does not time out.

// followInformer is the informer GetInformer returns under
// WithAPIDiscovery.
type followInformer struct {
	c      *Cache
	e      *entry
	obj    runtime.Object
	closed chan struct{} // closed by RemoveInformer

	checkerOnce sync.Once
	checker     *polledDone

	mu       sync.Mutex
	served   cache.Informer // the entry's overSlots; nil until the kind is served
	handlers []*followRegistration
	indexers []toolscache.Indexers
}

var _ cache.Informer = &followInformer{}

func newFollowInformer(c *Cache, e *entry, obj runtime.Object) *followInformer {
	f := &followInformer{c: c, e: e, obj: obj, closed: make(chan struct{})}
	if len(e.slots) > 0 {
		f.served = e.overSlots
	}
	return f
}

func (f *followInformer) close() { close(f.closed) }

// resolve waits until the mapper knows the entry's kind, then builds and
// starts its informers and attaches what was given meanwhile. It waits
// through the cache's served.Checker, whose one paced poller per group
// version the factory's discovery uses too; it asks the mapper after each
// answer that serves the kind. It logs one line when it starts waiting and
// one when it is done.
func (f *followInformer) resolve(ctx context.Context) {
	gvk := f.e.key.gvk
	log := klog.FromContext(ctx).WithValues("kind", gvk.String())
	log.Info("crcache: no resource serves the kind: the cache waits for it, with none of its objects (WithAPIDiscovery)")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-f.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		if f.c.servedChecker().WaitKind(ctx, gvk) != nil {
			return
		}
		mapping, err := f.c.config.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			continue
		}
		f.c.mu.Lock()
		if f.c.entries[f.e.key] != f.e || f.c.stopped {
			f.c.mu.Unlock()
			return
		}
		err = f.c.buildSlots(f.e, mapping, f.obj)
		if err == nil {
			// Attached before the informers start and before c.mu is
			// released: whoever sees the slots sees them attached, and a
			// handler or indexer given meanwhile waits for f.mu, then
			// goes to them once.
			f.attach()
			f.c.startSlots(f.e)
		}
		f.c.mu.Unlock()
		if err != nil {
			log.Error(err, "crcache: the kind is served, but the cache cannot build its informer")
			return
		}
		log.Info("crcache: the kind is served: the cache lists and watches it", "resource", mapping.Resource.String())
		return
	}
}

// servedChecker is the cache's served.Checker, built at the first wait.
func (c *Cache) servedChecker() *served.Checker {
	c.servedOnce.Do(func() { c.served = served.New(c.clientset.Discovery()) })
	return c.served
}

// attach hands the entry's new informer the handlers and indexers given
// while the kind was not served. The caller holds c.mu.
func (f *followInformer) attach() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.served = f.e.overSlots
	for _, ix := range f.indexers {
		if err := f.served.AddIndexers(ix); err != nil {
			klog.Background().Error(err, "crcache: adding indexers", "kind", f.e.key.gvk.String())
		}
	}
	f.indexers = nil
	for _, r := range f.handlers {
		reg, err := f.served.AddEventHandlerWithOptions(r.handler, r.options)
		if err != nil {
			klog.Background().Error(err, "crcache: adding an event handler", "kind", f.e.key.gvk.String())
			continue
		}
		r.setReal(reg)
	}
}

// waits is whether the entry's informers all wait for a resource the
// server does not serve.
func (f *followInformer) waits() bool {
	f.c.mu.RLock()
	defer f.c.mu.RUnlock()
	if len(f.e.slots) == 0 {
		return true
	}
	for _, si := range f.e.slots {
		b, ok := si.factory.(bridge.Factory)
		if !ok || !bridge.WaitsForResource(b, f.e.resource) {
			return false
		}
	}
	return true
}

func (f *followInformer) current() cache.Informer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.served
}

func (f *followInformer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return f.AddEventHandlerWithOptions(handler, toolscache.HandlerOptions{})
}

func (f *followInformer) AddEventHandlerWithResyncPeriod(handler toolscache.ResourceEventHandler, resyncPeriod time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return f.AddEventHandlerWithOptions(handler, toolscache.HandlerOptions{ResyncPeriod: &resyncPeriod})
}

func (f *followInformer) AddEventHandlerWithOptions(handler toolscache.ResourceEventHandler, options toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := &followRegistration{f: f, handler: handler, options: options}
	if f.served != nil {
		reg, err := f.served.AddEventHandlerWithOptions(handler, options)
		if err != nil {
			return nil, err
		}
		r.reg = reg
	}
	f.handlers = append(f.handlers, r)
	return r, nil
}

func (f *followInformer) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*followRegistration)
	if !ok || r.f != f {
		return errNotOurs(handle)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers = slices.DeleteFunc(f.handlers, func(h *followRegistration) bool { return h == r })
	if reg := r.getReal(); reg != nil && f.served != nil {
		return f.served.RemoveEventHandler(reg)
	}
	return nil
}

func (f *followInformer) AddIndexers(indexers toolscache.Indexers) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.served != nil {
		return f.served.AddIndexers(indexers)
	}
	f.indexers = append(f.indexers, indexers)
	return nil
}

// HasSynced is true while the kind is not served, and afterwards once
// the informer has synced or waits for its resource again.
func (f *followInformer) HasSynced() bool {
	served := f.current()
	return served == nil || served.HasSynced() || f.waits()
}

func (f *followInformer) HasSyncedChecker() toolscache.DoneChecker {
	f.checkerOnce.Do(func() {
		f.checker = newPolledDone("crcache "+f.e.key.gvk.String(), f.HasSynced, f.c.done, f.closed)
	})
	return f.checker
}

func (f *followInformer) IsStopped() bool {
	served := f.current()
	return served != nil && served.IsStopped()
}

// followRegistration is a handler of a followInformer: synced while the
// kind is not served, the informer's registration once it is.
type followRegistration struct {
	f       *followInformer
	handler toolscache.ResourceEventHandler
	options toolscache.HandlerOptions

	checkerOnce sync.Once
	checker     *polledDone

	mu  sync.Mutex
	reg toolscache.ResourceEventHandlerRegistration
}

func (r *followRegistration) setReal(reg toolscache.ResourceEventHandlerRegistration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reg = reg
}

func (r *followRegistration) getReal() toolscache.ResourceEventHandlerRegistration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reg
}

func (r *followRegistration) HasSynced() bool {
	reg := r.getReal()
	return reg == nil || reg.HasSynced() || r.f.waits()
}

func (r *followRegistration) HasSyncedChecker() toolscache.DoneChecker {
	r.checkerOnce.Do(func() {
		r.checker = newPolledDone("crcache handler of "+r.f.e.key.gvk.String(), r.HasSynced, r.f.c.done, r.f.closed)
	})
	return r.checker
}

// polledDone is a DoneChecker of a condition no channel signals: it asks
// every 100 ms, as client-go's WaitForCacheSync does, until the condition
// holds or the cache stops.
type polledDone struct {
	name string
	ch   chan struct{}
}

func newPolledDone(name string, cond func() bool, stops ...<-chan struct{}) *polledDone {
	d := &polledDone{name: name, ch: make(chan struct{})}
	if cond() {
		close(d.ch)
		return d
	}
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stops[0]:
				return
			case <-stops[1]:
				return
			case <-t.C:
				if cond() {
					close(d.ch)
					return
				}
			}
		}
	}()
	return d
}

func (d *polledDone) Name() string          { return d.name }
func (d *polledDone) Done() <-chan struct{} { return d.ch }

// errNotOurs is the error of a registration another informer returned.
func errNotOurs(handle toolscache.ResourceEventHandlerRegistration) error {
	return fmt.Errorf("crcache: the registration %T was not returned by this informer", handle)
}
