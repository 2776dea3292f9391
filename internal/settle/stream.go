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

package settle

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// This file makes a fake client stream watch lists, for
// informertest.ServeWatchList. client-go's fakes declare that they cannot
// stream (IsWatchListSemanticsUnSupported), so a reflector over one lists;
// and their object tracker could not serve a stream anyway: its watch
// knows no kind to list with, and replays existing objects into a channel
// of 100 that panics when full. Once a fake client is registered here
// (ServeWatchList), the factory's informers over it stream
// (listwatch.Semantics asks WatchListOf) and each namespace's follower (Informer.Watch) answers a
// watch with sendInitialEvents from the fake's own LIST and WATCH: the
// listed objects as ADDED events, the bookmark that ends the initial
// events ("k8s.io/initial-events-end") at the list's resource version,
// then the events of a watch from that resource version, read as any
// other watch so that Settle stays exact. The reflector sees what a
// server sends and takes its watch-list path.

// Streaming is how one fake client streams watch lists.
type Streaming struct {
	// stallTimeout, if not 0, replaces listwatch.StallTimeout for the
	// streams of the client's informers.
	stallTimeout atomic.Int64

	mu sync.Mutex
	// stalled are the resources whose streams send no end bookmark.
	stalled map[schema.GroupVersionResource]bool

	// sent counts, by resource, the streams that have handed all their
	// initial events to the informer.
	sent Counts
}

// registry holds the Streaming of each fake client registered, by a weak
// pointer to the client: an entry does not keep its client alive, and
// goes once the client is gone.
var registry struct {
	used atomic.Bool
	mu   sync.Mutex
	m    map[weak.Pointer[byte]]*Streaming
}

// clientKey is the registry's key of client, a pointer (every fake
// client is one).
func clientKey(client any) (weak.Pointer[byte], bool) {
	v := reflect.ValueOf(client)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() || v.Type().Elem().Size() == 0 {
		return weak.Pointer[byte]{}, false
	}
	return weak.Make((*byte)(v.UnsafePointer())), true
}

// ServeWatchList registers client, a fake client, as streaming watch
// lists, and returns its Streaming (the same one for every call on
// client).
func ServeWatchList(client any) (*Streaming, error) {
	if !IsFake(client) {
		return nil, fmt.Errorf("informertest: %T is not one of client-go's fake clients", client)
	}
	k, ok := clientKey(client)
	if !ok {
		return nil, fmt.Errorf("informertest: %T is not a pointer to a fake client", client)
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.m == nil {
		registry.m = map[weak.Pointer[byte]]*Streaming{}
	}
	for old := range registry.m {
		if old.Value() == nil {
			delete(registry.m, old)
		}
	}
	s := registry.m[k]
	if s == nil {
		s = &Streaming{stalled: map[schema.GroupVersionResource]bool{}}
		registry.m[k] = s
	}
	registry.used.Store(true)
	return s, nil
}

// WatchListOf returns the Streaming of client, or nil when client does
// not stream watch lists: one atomic load in a process that never
// registered a client.
func WatchListOf(client any) *Streaming {
	if !registry.used.Load() {
		return nil
	}
	k, ok := clientKey(client)
	if !ok {
		return nil
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return registry.m[k]
}

// SetStallTimeout sets how long a stream of the client's informers may be
// silent before the factory abandons it; 0 restores the default.
func (v *Streaming) SetStallTimeout(d time.Duration) { v.stallTimeout.Store(int64(d)) }

// StallTimeout is the timeout SetStallTimeout set, or 0.
func (v *Streaming) StallTimeout() time.Duration { return time.Duration(v.stallTimeout.Load()) }

// Stall makes the streams of resource opened from now on send no end
// bookmark.
func (v *Streaming) Stall(resource schema.GroupVersionResource) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.stalled[resource] = true
}

func (v *Streaming) stalls(resource schema.GroupVersionResource) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.stalled[resource]
}

// delivered records that a stream of resource handed its initial events on.
func (v *Streaming) delivered(resource schema.GroupVersionResource) {
	v.sent.Add(resource)
}

// WaitSent returns once n streams of resource have handed all their
// initial events to their informers, or with ctx's cause.
func (v *Streaming) WaitSent(ctx context.Context, resource schema.GroupVersionResource, n int) error {
	if got, err := v.sent.Wait(ctx, resource, n); err != nil {
		return fmt.Errorf("informertest: %d of %d watch-list streams of %v sent: %w", got, n, resource, err)
	}
	return nil
}

// ListFunc is a list call.
type ListFunc func(context.Context, metav1.ListOptions) (runtime.Object, error)

// streamStart is what a watch-list stream of a fake client begins with:
// the fake's list as ADDED events, and the bookmark that ends them.
type streamStart struct {
	v        *Streaming
	resource schema.GroupVersionResource
	events   []watch.Event
}

// Stream makes s answer the watch-list streams of its informer, of
// resource, as v says, from the list and watch calls given to Watch. It
// must be called before the informer runs.
func (s *Informer) Stream(v *Streaming, resource schema.GroupVersionResource) {
	s.watchList, s.resource = v, resource
}

// initial lists, with list, what a watch with sendInitialEvents opts starts with, and
// returns the events of the stream's start and the options of the plain
// watch that follows them.
func (s *Informer) initial(ctx context.Context, list ListFunc, opts metav1.ListOptions) (*streamStart, metav1.ListOptions, error) {
	lo := opts
	lo.Watch, lo.SendInitialEvents, lo.AllowWatchBookmarks = false, nil, false
	lo.ResourceVersion, lo.ResourceVersionMatch, lo.TimeoutSeconds = "", "", nil
	lo.Limit, lo.Continue = 0, ""
	obj, err := list(ctx, lo)
	if err != nil {
		return nil, opts, err
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, opts, fmt.Errorf("informertest: %s: the fake's list %T: %w", s.name, obj, err)
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return nil, opts, fmt.Errorf("informertest: %s: the fake's list %T: %w", s.name, obj, err)
	}
	rv := lm.GetResourceVersion()
	start := &streamStart{v: s.watchList, resource: s.resource, events: make([]watch.Event, 0, len(items)+1)}
	for _, item := range items {
		start.events = append(start.events, watch.Event{Type: watch.Added, Object: item})
	}
	if !s.watchList.stalls(s.resource) {
		bookmark := s.example.DeepCopyObject()
		m, err := meta.Accessor(bookmark)
		if err != nil {
			return nil, opts, fmt.Errorf("informertest: %s: the example object %T has no metadata: %w", s.name, bookmark, err)
		}
		m.SetResourceVersion(rv)
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		start.events = append(start.events, watch.Event{Type: watch.Bookmark, Object: bookmark})
	}
	wo := opts
	wo.SendInitialEvents, wo.ResourceVersion, wo.ResourceVersionMatch = nil, rv, ""
	return start, wo, nil
}
