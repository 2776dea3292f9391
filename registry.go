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
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Form is how an informer holds its objects.
type Form string

const (
	// FormTyped informers cache the API's Go types, such as *corev1.Pod.
	FormTyped Form = "typed"
	// FormDynamic informers cache *unstructured.Unstructured; ForResource
	// returns them for resources that are not built in.
	FormDynamic Form = "dynamic"
	// FormMetadata informers cache *metav1.PartialObjectMetadata only; see
	// Factory.ForMetadata.
	FormMetadata Form = "metadata"
)

// InformerID names one informer of a factory.
type InformerID struct {
	// Form is how the informer holds its objects.
	Form Form
	// Resource is the resource it lists and watches. It is empty for a
	// typed informer that was only ever requested through InformerFor with
	// a type this module does not know.
	Resource schema.GroupVersionResource
	// Type is the Go type of the cached objects: the API type for the
	// typed form, *unstructured.Unstructured or *metav1.PartialObjectMetadata
	// for the others.
	Type reflect.Type
}

// String formats the ID for humans, such as "pods (v1)",
// "widgets.example.com/v1 [dynamic]" or "deployments.apps/v1 [metadata]".
func (id InformerID) String() string {
	var s string
	switch r := id.Resource; {
	case r.Resource == "" && id.Type != nil:
		s = id.Type.String()
	case r.Group == "":
		s = fmt.Sprintf("%s (%s)", r.Resource, r.Version)
	default:
		s = fmt.Sprintf("%s.%s/%s", r.Resource, r.Group, r.Version)
	}
	if id.Form != FormTyped {
		s += " [" + string(id.Form) + "]"
	}
	return s
}

// errRemoved is the cause with which RemoveInformer stops an informer.
var errRemoved = errors.New("informer removed from its factory")

// entry is one informer the factory holds. The registry is keyed by form
// and resource (entries) and, for typed informers, by Go type (byType),
// which is what InformerFor and WaitForCacheSync speak.
type entry struct {
	id       InformerID // Resource may be filled in later, under the factory lock
	informer cache.SharedIndexInformer
	// removed is set by RemoveInformer. Accessors that cached the informer
	// check it on every call and resolve again once it is set.
	removed atomic.Bool
	health  health
	// shardNotice says, once, that the server ignored the shard selector.
	shardNotice atomic.Pointer[string]
	// refused, if set, is why the informer must not run (an option it
	// cannot honour without widening what it lists); Start skips it and
	// Ready reports it.
	refused error

	// Set by Start, under the factory lock. Each informer runs under its
	// own context so that RemoveInformer can stop it alone.
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// health is the last error each of an informer's list/watch sources (one
// per namespace) got, until a later list or watch of it succeeds.
type health struct {
	mu   sync.Mutex
	errs map[string]error
}

func (h *health) observe(source string, err error) {
	// An expired resource version (410) is how a watch normally ends
	// after etcd compaction; the reflector relists at once. It says
	// nothing about whether the informer can serve.
	if err != nil && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || errors.Is(err, context.Canceled)) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		delete(h.errs, source)
		return
	}
	if h.errs == nil {
		h.errs = make(map[string]error)
	}
	h.errs[source] = err
}

// last returns the errors of the failing sources, or nil.
func (h *health) last() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch len(h.errs) {
	case 0:
		return nil
	case 1:
		for source, err := range h.errs {
			if source == "" {
				return err
			}
		}
	}
	var parts []string
	for _, source := range slices.Sorted(maps.Keys(h.errs)) {
		parts = append(parts, fmt.Sprintf("namespace %s: %v", source, h.errs[source]))
	}
	return errors.New(strings.Join(parts, "; "))
}

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
		f.wg.Go(func() { f.shard.follow(ctx, f.membership) })
	}
	for _, e := range f.all() {
		if e.done != nil {
			continue
		}
		ictx, cancel := context.WithCancelCause(ctx)
		done := make(chan struct{})
		e.cancel, e.done = cancel, done
		if e.refused != nil {
			// Counted as started, so that WaitForCacheSync and Ready
			// report it, but never run.
			close(done)
			continue
		}
		f.wg.Go(func() {
			defer close(done)
			e.informer.RunWithContext(ictx)
		})
	}
}

// all returns every entry once; the caller holds f.lock.
func (f *sharedInformerFactory) all() []*entry {
	out := make([]*entry, 0, len(f.entries)+len(f.byType))
	for _, e := range f.entries {
		out = append(out, e)
	}
	for _, e := range f.byType {
		if e.id.Resource.Resource == "" { // not also in entries
			out = append(out, e)
		}
	}
	return out
}

func (f *sharedInformerFactory) Shutdown() {
	// Setting shuttingDown under the lock orders it after any Start in
	// progress, so wg.Wait below sees every goroutine Start added.
	f.lock.Lock()
	f.shuttingDown = true
	f.lock.Unlock()

	f.wg.Wait()
	f.informerName.Release()
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
		if e.cancel != nil {
			e.cancel(errRemoved)
			<-e.done
		}
		// Release the memory even if someone still holds the informer.
		if err := e.informer.GetStore().Replace(nil, ""); err != nil {
			klog.Background().Error(err, "Cannot empty the store of a removed informer", "informer", e.id)
		}
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
// synced; [Factory.SyncStatus] tells them apart by resource. Err names each
// informer that has not synced with the last error it got, and wraps the
// context's cause.
func (f *sharedInformerFactory) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	started := f.started()

	// Wait on the informers' sync signals instead of polling them.
	checkers := make([]cache.DoneChecker, 0, len(started))
	for _, e := range started {
		checkers = append(checkers, e.informer.HasSyncedChecker())
	}
	cache.WaitFor(ctx, "" /* no logging */, checkers...)

	res := cache.SyncResult{Synced: make(map[reflect.Type]bool, len(started))}
	var unsynced []string
	for _, e := range started {
		synced := e.informer.HasSynced()
		t := e.id.Type
		if prev, seen := res.Synced[t]; seen {
			synced = synced && prev
		}
		res.Synced[t] = synced
		if !e.informer.HasSynced() {
			unsynced = append(unsynced, describe(e, "not synced"))
		}
	}
	if len(unsynced) > 0 {
		slices.Sort(unsynced)
		// WaitFor only returns early when ctx is done, so the cause is
		// set; wrapping it keeps errors.Is(err, context.DeadlineExceeded).
		res.Err = fmt.Errorf("%w; caches not synced: %s", context.Cause(ctx), strings.Join(unsynced, "; "))
	}
	return res
}

// started returns the informers Start has run so far.
func (f *sharedInformerFactory) started() []*entry {
	f.lock.Lock()
	defer f.lock.Unlock()
	var out []*entry
	for _, e := range f.all() {
		if e.done != nil {
			out = append(out, e)
		}
	}
	return out
}

// SyncStatus reports, for every informer Start has run, whether it has
// synced. Unlike WaitForCacheSync's map it tells resources of the same Go
// type apart, such as two custom resources.
func (f *sharedInformerFactory) SyncStatus() map[InformerID]bool {
	started := f.started()
	out := make(map[InformerID]bool, len(started))
	f.lock.Lock()
	defer f.lock.Unlock()
	for _, e := range started {
		out[e.id] = e.informer.HasSynced()
	}
	return out
}

// Ready returns nil when every informer Start has run has synced and its
// last list or watch succeeded. Otherwise it returns one error that names
// each informer that is not ready with the last error it got, such as
//
//	informers not ready: pods (v1): not synced: pods is forbidden: User "x" cannot list resource "pods" ...
//
// It takes the factory lock briefly and makes no request, so it can back a
// /readyz endpoint; see the example of [Factory].
func (f *sharedInformerFactory) Ready() error {
	started := f.started()
	var problems []string
	f.lock.Lock()
	for _, e := range started {
		err := e.health.last()
		switch {
		case !e.informer.HasSynced():
			problems = append(problems, describe(e, "not synced"))
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: failing: %v", e.id, err))
		}
	}
	f.lock.Unlock()
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	return fmt.Errorf("informers not ready: %s", strings.Join(problems, "; "))
}

// describe says what is wrong with e, with the last error it got if any.
// The caller holds f.lock (e.id may change under it).
func describe(e *entry, state string) string {
	if err := e.health.last(); err != nil {
		return fmt.Sprintf("%s: %s: %v", e.id, state, err)
	}
	return fmt.Sprintf("%s: %s", e.id, state)
}

// register adds e, with its informer built, to the registry; the caller
// holds f.lock.
func (f *sharedInformerFactory) register(e *entry) {
	if e.id.Resource.Resource != "" {
		f.entries[registryKey{form: e.id.Form, resource: e.id.Resource}] = e
	}
	if e.id.Form == FormTyped && e.id.Type != nil {
		f.byType[e.id.Type] = e
	}
}

// registryKey is the key of the registry's main index.
type registryKey struct {
	form     Form
	resource schema.GroupVersionResource
}
