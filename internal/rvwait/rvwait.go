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

// Package rvwait waits until an informer's cache reflects a resource
// version, or a deletion: the engine of the root package's
// Factory.WaitForResourceVersion and of readyourwrites.Writes.
//
// # What "the cache reflects rv" means, and how it is known
//
// With client-go's AtomicFIFO feature (on by default since v0.36), the
// informer's indexer records the resource version of every write it
// applies, in the same critical section as the write:
// LastStoreSyncResourceVersion is the version of the last object added,
// updated or deleted, of the last list (Replace: the initial list, a
// watch-list stream's end, a relist after 410 Gone), or of the last
// bookmark. Bookmarks reach the indexer through the informer's queue, in
// order behind the events before them, so a version read there means that
// the lister holds every event up to it: that is the one version this
// package trusts. The reflector's own LastSyncResourceVersion is not: it
// advances when an event is received, before the queue has applied it.
//
// client-go calls no one when the indexer's version advances. An event
// that changes an object reaches the informer's handlers after the indexer
// has applied it, so a handler, added on the first wait only, wakes the
// waiters at once. A bookmark or a list that changes nothing calls no
// handler; for those a waiter looks again on a backoff from 1 ms to
// [MaxRecheck], which only runs while someone waits and costs a read lock.
// What the informer never receives (an object its selectors or shard
// filter out, another namespace's write) is reflected only by the next
// bookmark: the API server's watch cache sends one to each watch every
// minute from the watch's start; a resource served without the watch
// cache gets none.
package rvwait

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/wake"
)

// ErrNotComparable is wrapped by the errors about a resource version that
// cannot be ordered: empty, as client-go's fake clientsets leave objects,
// or not a positive decimal integer, as an aggregated API server that does
// not use etcd's versions may send.
var ErrNotComparable = errors.New("resource version not comparable")

// MaxRecheck bounds the time between two looks at a cache whose version
// no event has advanced: how late a wait may notice a bookmark.
const MaxRecheck = 100 * time.Millisecond

// minRecheck is the first backoff step: the queue applies a bookmark in
// microseconds after the watch has received it.
const minRecheck = time.Millisecond

// Compare orders two resource versions like
// [resourceversion.CompareResourceVersion], with an error that wraps
// [ErrNotComparable] and says which one is at fault.
func Compare(a, b string) (int, error) {
	c, err := resourceversion.CompareResourceVersion(a, b)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNotComparable, err)
	}
	return c, nil
}

// Check returns an error wrapping ErrNotComparable if rv cannot be waited
// for.
func Check(rv string) error {
	if rv == "" {
		return fmt.Errorf("%w: the resource version is empty (client-go's fake clientsets set none on the objects they return)", ErrNotComparable)
	}
	_, err := Compare(rv, rv)
	return err
}

// Sources are the caches of one informer, one per namespace it watches;
// the factory adds them as it builds the informer.
type Sources struct {
	mu   sync.Mutex
	list []*Source
}

// Add records the client-go informer that watches namespace ("" for all
// namespaces, or a cluster-scoped resource).
func (s *Sources) Add(namespace string, informer cache.SharedIndexInformer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, NewSource(namespace, informer))
}

// Remove forgets the source of namespace, whose informer has stopped
// because the factory no longer watches it (SetNamespaces): a wait on
// namespace then says that no informer watches it.
func (s *Sources) Remove(namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = slices.DeleteFunc(s.list, func(src *Source) bool { return src.namespace == namespace })
}

// All returns the sources added so far.
func (s *Sources) All() []*Source {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Source(nil), s.list...)
}

// AllOr returns the sources added so far or, if there are none, adds
// informer as the one source of every namespace and returns it: for an
// informer the factory did not build, whose namespaces it does not know.
func (s *Sources) AllOr(informer cache.SharedIndexInformer) []*Source {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.list) == 0 {
		s.list = append(s.list, NewSource("", informer))
	}
	return append([]*Source(nil), s.list...)
}

// Source is the cache of one watch: a client-go informer of one namespace,
// or of all of them.
type Source struct {
	namespace string
	informer  cache.SharedIndexInformer

	// The waking handler, added on the first wait.
	regOnce sync.Once
	regErr  error

	// advanced wakes the waiters when the cache may have advanced; while
	// no one waits, an event costs a lock and nothing else.
	advanced wake.Signal
}

// NewSource returns the source of informer, which watches namespace.
func NewSource(namespace string, informer cache.SharedIndexInformer) *Source {
	return &Source{namespace: namespace, informer: informer}
}

// Namespace is the namespace the source watches, "" for all of them.
func (s *Source) Namespace() string { return s.namespace }

// Covers reports whether a wait on namespace waits on this source: one
// that watches every namespace (or a cluster-scoped resource) covers them
// all, and namespace "" means every source.
func (s *Source) Covers(namespace string) bool {
	return namespace == "" || s.namespace == "" || s.namespace == namespace
}

// Synced reports whether the source's informer has synced.
func (s *Source) Synced() bool { return s.informer.HasSynced() }

// Newest is the resource version the cache reflects: every event up to it
// is in the lister.
func (s *Source) Newest() string {
	return s.informer.GetStore().LastStoreSyncResourceVersion()
}

// Reached waits until the cache reflects want or a later version, or ctx
// is done. It returns the newest version seen and, on failure, an error
// that says what was wanted and what was seen; ctx's error is wrapped.
func (s *Source) Reached(ctx context.Context, want string) (string, error) {
	if err := Check(want); err != nil {
		return "", err
	}
	var newest string
	ended, err := s.wait(ctx, func() (bool, error) {
		newest = s.Newest()
		if newest == "" {
			if s.informer.HasSynced() {
				return false, fmt.Errorf("%w: the cache has synced but holds no resource version: its server sets none on objects (client-go's fake clientsets do not)", ErrNotComparable)
			}
			return false, nil // not listed yet
		}
		c, err := Compare(newest, want)
		if err != nil {
			return false, fmt.Errorf("the cache is at %q, the wanted version is %q: %w", newest, want, err)
		}
		return c >= 0, nil
	})
	if ended {
		seen := newest
		if seen == "" {
			seen = "none"
		}
		return newest, fmt.Errorf("resource version %s not reached, newest seen %s: %w", want, seen, err)
	}
	return newest, err
}

// Gone waits until the cache no longer holds the object of key with uid
// (any object of key when uid is empty), or holds it marked for deletion:
// a deletion's effect is in the lister. It needs no resource version, so
// that a DELETE answered with a Status (which carries none) can be waited
// for.
func (s *Source) Gone(ctx context.Context, key string, uid types.UID) error {
	ended, err := s.wait(ctx, func() (bool, error) {
		obj, exists, err := s.informer.GetStore().GetByKey(key)
		if err != nil {
			return false, err
		}
		if !exists {
			return true, nil
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return false, fmt.Errorf("the cache holds a %T at %s: %w", obj, key, err)
		}
		return (uid != "" && m.GetUID() != uid) || m.GetDeletionTimestamp() != nil, nil
	})
	if ended {
		return fmt.Errorf("the cache still holds %s: %w", key, err)
	}
	return err
}

// wait calls done until it reports true or an error, each time the cache
// may have changed, or ctx ends: then ended is true and err is ctx's cause.
func (s *Source) wait(ctx context.Context, done func() (bool, error)) (ended bool, err error) {
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.AtomicFIFO) {
		return false, fmt.Errorf("%w: client-go's AtomicFIFO feature is off, so the cache does not record which version it holds", ErrNotComparable)
	}
	if err := s.register(); err != nil {
		return false, err
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	backoff := minRecheck
	for {
		// Take the channel before looking, so that a change between the
		// look and the select still wakes this waiter.
		advanced := s.advanced.Next()
		ok, err := done()
		if err != nil || ok {
			return false, err
		}
		if timer == nil {
			timer = time.NewTimer(backoff)
		} else {
			timer.Reset(backoff)
		}
		select {
		case <-ctx.Done():
			return true, context.Cause(ctx)
		case <-advanced:
		case <-timer.C:
			backoff = min(2*backoff, MaxRecheck)
		}
	}
}

// register adds the handler that wakes the waiters, once. It asks for no
// resync: a resync changes nothing in the cache.
func (s *Source) register() error {
	s.regOnce.Do(func() {
		noResync := time.Duration(0)
		_, err := s.informer.AddEventHandlerWithOptions(waker{s}, cache.HandlerOptions{ResyncPeriod: &noResync})
		if err != nil {
			s.regErr = fmt.Errorf("cannot follow the informer's cache: %w", err)
		}
	})
	return s.regErr
}

// waker is the handler that wakes a source's waiters; client-go calls it
// after the indexer has applied the event.
type waker struct{ s *Source }

func (w waker) OnAdd(any, bool)   { w.s.advanced.Broadcast() }
func (w waker) OnUpdate(any, any) { w.s.advanced.Broadcast() }
func (w waker) OnDelete(any)      { w.s.advanced.Broadcast() }
