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

package informer

import (
	"context"
	"sync"
	"time"

	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/memsize"
	"github.com/kubeinformers/informers/internal/meter"
	"github.com/kubeinformers/informers/internal/shard"
)

// This file holds what every informer the factory builds is wrapped in:
// SetShardSelector, event handlers whose lag is measured under metrics,
// and a "synced" that means no event is lost.
//
// client-go's informer has synced once its initial list is in the cache.
// When that list came from a LIST request, the WATCH that follows it is
// only sent afterwards, and a change made between the two is still
// delivered by a real server, which replays from the list's resource
// version; a fake clientset cannot replay, so a unit test that mutates
// right after WaitForCacheSync loses the event now and then. client-go's
// dynamic and metadata factories hide this by polling every 100 ms. The
// factory's informers instead report synced once the initial list is in
// the cache and the first watch of each namespace has returned: the list
// and watch layer (internal/listwatch) reports every watch request, so
// this needs no sleep. With the watch-list stream the two are one request,
// and nothing changes.

// Informer is an informer of the factory: the informer itself, with
// SetShardSelector, metered event handlers, and a HasSynced that includes
// the first watch.
type Informer struct {
	cache.SharedIndexInformer
	name    string
	shard   *shard.Informer
	gate    *syncGate
	checker *gatedChecker
	// departures, under a membership, wraps every transform so that a
	// shard handover's deletions reach handlers as tombstones.
	departures *listwatch.Departures
	// pretransform transforms list pages with the factory's transform
	// (internal/listwatch); a transform set later replaces it.
	pretransform *listwatch.Pretransform
	// transform is the one the informer was given, which the handler-lag
	// stamp wraps at start; lag measures its handlers (internal/meter).
	transform cache.TransformFunc
	lag       *meter.Lag
	// watchErrors is the user's watch error handler, which the
	// factory's own calls (Hooks.watchErrors).
	watchErrors *userWatchErrors
	// memory observes each object as it enters the cache, after every
	// transform (internal/memsize).
	memory *memsize.Meter
	// indexer is what GetIndexer hands out: reads that fail while the
	// informer is stopped over its memory budget (budgetindexer.go).
	indexer cache.Indexer
}

var (
	_ cache.SharedIndexInformer = &Informer{}
	_ shard.Setter              = &Informer{}
)

// wrap wraps a new informer of spec, whose transform Build has set
// already: the spec's departures and pretransform are
// what SetTransform keeps and stops when the user replaces it.
func wrap(informer cache.SharedIndexInformer, sh *shard.Informer, h *Hooks, spec *Spec) *Informer {
	return &Informer{
		SharedIndexInformer: informer,
		name:                spec.Name,
		shard:               sh,
		gate:                h.gate,
		checker:             &gatedChecker{inner: informer.HasSyncedChecker(), done: make(chan struct{})},
		departures:          spec.ListWatch.Departures,
		pretransform:        spec.ListWatch.Pretransform,
		transform:           spec.InformerTransform,
		lag:                 &h.Metrics.Lag,
		watchErrors:         &h.userWatchErrors,
		memory:              h.Memory,
		indexer:             &budgetIndexer{Indexer: informer.GetIndexer(), budget: h.Budget},
	}
}

// SetWatchErrorHandler is SetWatchErrorHandlerWithContext for a handler
// without a context.
func (i *Informer) SetWatchErrorHandler(handler cache.WatchErrorHandler) error {
	return i.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) {
		handler(r, err)
	})
}

// SetWatchErrorHandlerWithContext sets the handler of the informer's list
// and watch errors, in place of client-go's default one (which logs
// them), as client-go's does; the factory keeps its own handling before
// it, so that Ready still names the error. A resource that is not served
// (WithAPIDiscovery) is not an error and does not reach handler. Like
// client-go's, it fails once the informer has started.
func (i *Informer) SetWatchErrorHandlerWithContext(handler cache.WatchErrorHandlerWithContext) error {
	return i.watchErrors.set(handler)
}

// GetIndexer returns the informer's indexer, whose reads return why while
// the informer is stopped over its memory budget; see the root's
// WithMemoryBudget.
func (i *Informer) GetIndexer() cache.Indexer { return i.indexer }

// SetTransform replaces the informer's transform, the factory's included,
// as client-go's does; under a membership it is wrapped so that a shard
// handover's deletions stay tombstones.
func (i *Informer) SetTransform(transform cache.TransformFunc) error {
	if i.departures != nil {
		transform = i.departures.Transform(transform)
	}
	if err := i.SharedIndexInformer.SetTransform(transform); err != nil {
		return err
	}
	i.transform = transform
	if i.pretransform != nil {
		i.pretransform.Stop() // list pages now reach the new transform whole
	}
	return nil
}

// SetShardSelector limits the informer to the objects selector matches,
// in every namespace it lists, replacing the factory's shard for this
// informer; a nil or empty selector means no sharding. It must be called
// before the informer starts; afterwards it returns an error and changes
// nothing. client-go's SharedInformer has the method from v0.38 on; here
// it acts on the factory's own list and watch, so that the selector is
// sent as given, checked on the client and reported in Notices.
func (i *Informer) SetShardSelector(selector apisharding.Selector) error {
	return i.shard.SetSelector(selector)
}

// AddEventHandler adds a handler, as client-go's does; under metrics its
// lag is measured.
func (i *Informer) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	if h, ok := i.lag.Wrap(handler); ok {
		return i.lag.Added(i.SharedIndexInformer.AddEventHandler(h))
	}
	return i.SharedIndexInformer.AddEventHandler(handler)
}

// AddEventHandlerWithResyncPeriod adds a handler, as client-go's does;
// under metrics its lag is measured.
func (i *Informer) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, resyncPeriod time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	if h, ok := i.lag.Wrap(handler); ok {
		return i.lag.Added(i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(h, resyncPeriod))
	}
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(handler, resyncPeriod)
}

// AddEventHandlerWithOptions adds a handler, as client-go's does; under
// metrics its lag is measured.
func (i *Informer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if h, ok := i.lag.Wrap(handler); ok {
		return i.lag.Added(i.SharedIndexInformer.AddEventHandlerWithOptions(h, options))
	}
	return i.SharedIndexInformer.AddEventHandlerWithOptions(handler, options)
}

// RemoveEventHandler removes a handler, as client-go's does.
func (i *Informer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	if err := i.SharedIndexInformer.RemoveEventHandler(handle); err != nil {
		return err
	}
	i.lag.Removed(handle)
	return nil
}

// HasSynced reports whether the initial list is in the cache and the first
// watch of every namespace has returned.
func (i *Informer) HasSynced() bool {
	return i.gate.isOpen() && i.SharedIndexInformer.HasSynced()
}

// HasSyncedChecker is HasSynced as a [cache.DoneChecker].
func (i *Informer) HasSyncedChecker() cache.DoneChecker { return i.checker }

// Run runs the informer until stopCh is closed.
func (i *Informer) Run(stopCh <-chan struct{}) {
	i.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext fixes the informer's shard, then runs it until ctx is
// done, and closes its sync checker once it has synced.
func (i *Informer) RunWithContext(ctx context.Context) {
	i.shard.Start()
	i.watchErrors.start()
	// The memory estimate observes each object as the transforms leave
	// it; under metrics the handler-lag stamp is the last step.
	transform := i.memory.Transform(i.transform)
	if stamped := i.lag.Stamp(transform); stamped != nil {
		transform = stamped
	}
	if err := i.SharedIndexInformer.SetTransform(transform); err != nil {
		klog.Background().Error(err, "Cannot measure the memory and handler lag of an informer", "informer", i.name)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := make(chan struct{})
	defer close(stop)
	wg.Go(func() {
		select {
		case <-i.checker.inner.Done():
		case <-stop:
			return
		}
		select {
		case <-i.gate.open:
			i.checker.close()
		case <-stop:
		}
	})
	i.SharedIndexInformer.RunWithContext(ctx)
}

// gatedChecker is done once its inner checker is and the gate is open.
type gatedChecker struct {
	inner cache.DoneChecker
	once  sync.Once
	done  chan struct{}
}

func (c *gatedChecker) Name() string          { return c.inner.Name() }
func (c *gatedChecker) Done() <-chan struct{} { return c.done }
func (c *gatedChecker) close()                { c.once.Do(func() { close(c.done) }) }
