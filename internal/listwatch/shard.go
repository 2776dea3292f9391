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

// Package listwatch builds the list and watch calls of every informer this
// module makes: typed, dynamic and metadata-only, standalone or shared by a
// factory. Keeping them in one place means that a request option (a tweak,
// a selector, a shard filter) or a health hook is added once for all forms.
package listwatch

// This file holds the sharding of list and watch calls: the Sharder the
// factory implements, the check of the server's echo, the client-side
// filter of lists, and the watch wrapper that filters events.

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Sharder limits an informer to a shard of its resource's objects. The
// factory implements it (shard.go in the root package).
type Sharder interface {
	// Current returns the shard in force and its generation, which
	// changes whenever the shard does. tweak sets the request's shard
	// selector, and keep reports whether an object belongs to the shard
	// (an error: it cannot be placed, for example a selector on two
	// keys). A nil tweak means the informer is not sharded: every object
	// is kept. A nil keep with a tweak means the shard is empty: nothing
	// is kept, and nothing received is reported as ignored (no selector
	// was sent).
	Current() (gen uint64, tweak func(*metav1.ListOptions), keep func(runtime.Object) (bool, error))
	// Track registers a running watch, which the sharder stops when the
	// shard changes; the returned function unregisters it.
	Track(w watch.Interface) (untrack func())
	// Ignored is told of an object the server sent outside the shard
	// selector it was given: a server without the ShardedListAndWatch
	// feature ignores the selector.
	Ignored(obj runtime.Object)
}

// orNothing substitutes, for an empty shard (nil keep), a filter that keeps
// nothing and a sharder that reports nothing.
func orNothing(keep func(runtime.Object) (bool, error), s Sharder) (func(runtime.Object) (bool, error), Sharder) {
	if keep != nil {
		return keep, s
	}
	return func(runtime.Object) (bool, error) { return false, nil }, silentSharder{s}
}

// silentSharder is a Sharder whose Ignored does nothing: without a
// selector sent, every object outside the (empty) shard is expected.
type silentSharder struct{ Sharder }

func (silentSharder) Ignored(runtime.Object) {}

// checkEcho compares the shard selector a server says it applied
// (ListMeta.ShardInfo) with the one sent, as client-go's
// cache.NewShardedListWatch does from v0.38 on: a server that applied
// another selector returned another shard, which no client-side filter
// can repair. A list without ShardInfo was not filtered by the server;
// filterList then does the work.
func checkEcho(list runtime.Object, sent string, resource schema.GroupVersionResource) error {
	// ListAccessor returns a typed or unstructured list itself, and the
	// ListMeta of any other; either has ShardInfo if the version has it.
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil // filterList reports a list it cannot read
	}
	sharded, ok := lm.(metav1.ShardedListInterface)
	if !ok {
		return nil
	}
	if info := sharded.GetShardInfo(); info != nil && info.Selector != sent {
		return fmt.Errorf("informers: list %s: the server applied the shard selector %q, not the %q sent", resource, info.Selector, sent)
	}
	return nil
}

// filterList drops the items of a list response that are outside the
// shard, reporting them as ignored by the server. An item the shard
// cannot place fails the list, as in client-go's sharded list/watch.
func filterList(list runtime.Object, keep func(runtime.Object) (bool, error), s Sharder, resource schema.GroupVersionResource) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return fmt.Errorf("informers: filtering a list of %s by shard: %w", resource, err)
	}
	kept := items[:0]
	for _, item := range items {
		ok, err := keep(item)
		if err != nil {
			return fmt.Errorf("informers: list %s: placing an object in the shard: %w", resource, err)
		}
		if ok {
			kept = append(kept, item)
		} else {
			s.Ignored(item)
		}
	}
	if len(kept) == len(items) {
		return nil
	}
	return meta.SetList(list, kept)
}

// shardWatch passes on the events of objects in the shard, and every
// bookmark and error. The sharder stops it when the shard changes.
type shardWatch struct {
	in      watch.Interface
	out     chan watch.Event
	stop    chan struct{}
	once    sync.Once
	untrack func()
}

func newShardWatch(ctx context.Context, in watch.Interface, keep func(runtime.Object) (bool, error), s Sharder, resource schema.GroupVersionResource) *shardWatch {
	w := &shardWatch{in: in, out: make(chan watch.Event), stop: make(chan struct{})}
	w.untrack = s.Track(w)
	go func() {
		defer close(w.out)
		defer w.untrack()
		defer in.Stop()
		for {
			select {
			case <-w.stop:
				return
			case ev, ok := <-in.ResultChan():
				if !ok {
					return
				}
				switch ev.Type {
				case watch.Added, watch.Modified, watch.Deleted:
					ok, err := keep(ev.Object)
					if err != nil {
						// As client-go's sharded watch: drop the event
						// and say why; the next list reports it.
						utilruntime.HandleErrorWithContext(ctx, err, "Cannot place a watched object in the shard; dropping the event", "resource", resource)
						continue
					}
					if !ok {
						s.Ignored(ev.Object)
						continue
					}
				}
				select {
				case w.out <- ev:
				case <-w.stop:
					return
				}
			}
		}
	}()
	return w
}

func (w *shardWatch) Stop()                          { w.once.Do(func() { close(w.stop) }) }
func (w *shardWatch) ResultChan() <-chan watch.Event { return w.out }
