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

package informers

import (
	"context"
	"reflect"

	"github.com/kubeinformers/informers/internal/informer"
	"github.com/kubeinformers/informers/internal/rvwait"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

// This file runs and stops the factory's informers: Start, Shutdown,
// RemoveInformer, WaitForCacheSync and WaitForResourceVersion (a wait on
// the registry's informers of a resource, handed to internal/rvwait). Each
// informer runs under its own context, so that RemoveInformer can stop one
// alone (internal/informer/run.go).

func (f *sharedInformerFactory) Start(stopCh <-chan struct{}) {
	f.StartWithContext(wait.ContextForChannel(stopCh))
}

func (f *sharedInformerFactory) StartWithContext(ctx context.Context) {
	f.lock.Lock()
	defer f.lock.Unlock()

	if f.shuttingDown {
		return
	}
	if f.membership != nil && !f.followingMembership {
		// Follow the Lease-based assignment for as long as the first
		// Start's context; the informers switch ranges as it changes.
		f.followingMembership = true
		sm := f.startShardMetrics() // metrics.go
		f.wg.Go(func() { f.shard.Follow(ctx, f.membership, sm) })
	} else if f.shard != nil && f.metrics.Shard.Load() == nil {
		// A fixed shard (WithShard, WithShardSelector): its share of the
		// hash space, reported once.
		f.shard.ReportFixed(f.startShardMetrics())
	}
	for _, e := range f.all() {
		if e.run.Done() == nil { // not started yet (internal/informer/run.go)
			e.run.Start(ctx, &f.wg, e.informer, e.refused != nil, f.startMetrics(e))
		}
	}
}

func (f *sharedInformerFactory) Shutdown() {
	// Setting shuttingDown under the lock orders it after any Start in
	// progress, so wg.Wait below sees every goroutine Start added.
	f.lock.Lock()
	f.shuttingDown = true
	f.lock.Unlock()

	f.wg.Wait()
	f.lock.Lock()
	var hooks []*informer.Hooks
	for _, e := range f.all() {
		hooks = append(hooks, e.hooks)
	}
	f.lock.Unlock()
	informer.ShutDown(hooks, &f.metrics) // internal/informer/run.go: metrics, memory budget
	if !f.nameBorrowed {
		f.informerName.Release()
	}
}

// RemoveInformer stops every informer the factory holds for resource, in
// every form (typed or dynamic, and metadata), waits until their goroutines
// have ended and drops them with their caches and event handlers. It
// reports whether there was one.
//
// Other informers keep running. Asking for the resource again afterwards
// (an accessor, ForResource, ForMetadata) builds a fresh informer, which the
// next Start runs. Listers and informers obtained before the removal keep
// pointing at the stopped informer, whose store is emptied: get them again.
func (f *sharedInformerFactory) RemoveInformer(resource schema.GroupVersionResource) bool {
	f.lock.Lock()
	var removed []*entry
	for key, e := range f.entries {
		if key.resource != resource {
			continue
		}
		delete(f.entries, key)
		if e.id.Type != nil && f.byType[e.id.Type] == e {
			delete(f.byType, e.id.Type)
		}
		e.removed.Store(true)
		removed = append(removed, e)
	}
	f.lock.Unlock()

	// Wait outside the lock: an informer's handlers may call back into the
	// factory (a Lister(), say) while they drain.
	for _, e := range removed {
		e.run.Remove(errRemoved, e.hooks, e.informer, e.id) // internal/informer/run.go
	}
	return len(removed) > 0
}

func (f *sharedInformerFactory) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return f.WaitForCacheSyncWithContext(wait.ContextForChannel(stopCh)).Synced
}

// WaitForCacheSyncWithContext waits until every started informer has synced
// or ctx is done. Synced is keyed by object type, as in client-go: dynamic
// informers share *unstructured.Unstructured and metadata informers
// *metav1.PartialObjectMetadata, each true only if all of that form
// synced; [Factory.SyncStatus] tells them apart by resource.
//
// An informer has synced once its initial list is in the cache and its
// first watch (in every namespace) has returned, so that a change made
// after this returns reaches its handlers, also with a fake clientset. It
// does not wait for an informer that an invalid option keeps from running
// (see [NewSharedInformerFactoryWithOptions]), nor for one whose first
// watch failed in a way a retry will not fix (forbidden, say): it reports
// them as not synced at once. Err names each informer that has not synced
// with the reason, and wraps the context's cause when ctx ended first.
func (f *sharedInformerFactory) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	return informer.WaitForCacheSync(ctx, f.startedInformers()) // internal/informer/sync.go
}

// startedInformers are the informers Start has run, as internal/informer
// sees them.
func (f *sharedInformerFactory) startedInformers() []informer.Started {
	started := f.started()
	all := make([]informer.Started, len(started))
	for i, e := range started {
		all[i] = informer.Started{Name: e.id.String(), Type: e.id.Type, Informer: e.informer, Hooks: e.hooks, Refused: e.refused, Shard: e.shard, Done: e.run.Done()}
	}
	return all
}

// ErrResourceVersionNotComparable is wrapped by the errors of
// [Factory.WaitForResourceVersion] about a resource version that cannot
// be ordered: an empty one (client-go's fake clientsets set none on the
// objects they return, and their informers' caches then hold none), one
// that is not a positive decimal integer (an aggregated API server that
// does not use etcd's versions may send such), or a cache that cannot say
// which version it holds (client-go's AtomicFIFO feature turned off).
// Waiting cannot help then; a controller may read as it would without the
// wait. Test for it with [errors.Is].
var ErrResourceVersionNotComparable = rvwait.ErrNotComparable

// WaitForResourceVersion is [Factory.WaitForResourceVersion].
func (f *sharedInformerFactory) WaitForResourceVersion(ctx context.Context, resource schema.GroupVersionResource, namespace, resourceVersion string) error {
	return f.waitRequest(resource, namespace).ResourceVersion(ctx, resourceVersion)
}

// WaitForDeletion waits until every started informer of resource that
// watches namespace no longer holds the object name (uid, if set) or holds
// it marked for deletion: readyourwrites.Writes' wait for a DELETE, which
// may return no version. Not in Factory: Writes asserts it.
func (f *sharedInformerFactory) WaitForDeletion(ctx context.Context, resource schema.GroupVersionResource, namespace, name string, uid types.UID) error {
	return f.waitRequest(resource, namespace).Gone(ctx, name, uid)
}

// waitRequest is a wait on the factory's informers of resource, in every
// form, as they are now.
func (f *sharedInformerFactory) waitRequest(resource schema.GroupVersionResource, namespace string) rvwait.Request {
	r := rvwait.Request{Resource: resource, Namespace: namespace, Unknown: ErrUnknownResource, Removed: errRemoved}
	f.lock.Lock()
	defer f.lock.Unlock()
	for _, e := range f.all() {
		if e.id.Resource == resource {
			r.Entries = append(r.Entries, rvwait.Entry{
				Name: e.id.String(), Started: e.run.Done() != nil, Refused: e.refused, Done: e.run.Done(),
				Removed: e.removed.Load, Sources: &e.hooks.Versions, Informer: e.informer,
				Observe: e.hooks.Metrics.ObserveWait,
			})
		}
	}
	return r
}
