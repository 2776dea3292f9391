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
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/sharding"
)

// This file holds the factory's sharding: each replica of a controller
// caches only a slice of the objects, chosen by a 64-bit hash of their UID
// (or namespace). The slice is sent to the API server as
// metav1.ListOptions.ShardSelector (KEP-5866, the alpha ShardedListAndWatch
// feature), so the server filters both LIST and WATCH; and every object
// received is checked again on the client with the same hash, so a server
// without the feature, which ignores the selector, still yields exactly
// the shard.

// WithShard shards every informer of the factory by the hash of
// object.metadata.uid: the informers of replica index (0-based) of count
// cache only the objects in that replica's even slice of the hash space
// ([sharding.ForShard]). A count below 1, or an index outside [0, count),
// is an error from [New].
func WithShard(index, count int) SharedInformerOption {
	return withStaticShard("WithShard", sharding.FieldUID, index, count)
}

// WithNamespaceShard is [WithShard] by the hash of the object's namespace,
// so that all objects of a namespace land on one replica. Cluster-scoped
// informers are not sharded by it: their objects have no namespace.
func WithNamespaceShard(index, count int) SharedInformerOption {
	return withStaticShard("WithNamespaceShard", sharding.FieldNamespace, index, count)
}

func withStaticShard(option string, field sharding.Field, index, count int) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		sel, err := sharding.ForShard(field, index, count)
		if err != nil {
			factory.optionErrs = append(factory.optionErrs, fmt.Errorf("%s(%d, %d): %w", option, index, count, err))
			return factory
		}
		if factory.shard != nil {
			factory.optionErrs = append(factory.optionErrs, fmt.Errorf("%s(%d, %d): the factory is already sharded by %s", option, index, count, factory.shard.describe()))
			return factory
		}
		factory.shard = newShardSource(field, &sel)
		return factory
	}
}

// WithShardMembership shards every informer of the factory by the ranges a
// Lease-based [sharding.Membership] assigns this replica, on field (the
// UID or the namespace hash). When the membership changes, each informer
// lists again with its new ranges without a restart: objects that left its
// shard are delivered to handlers as deletes (cache.DeletedFinalStateUnknown),
// objects that joined as adds, and the others as updates with an unchanged
// resource version. Until the first assignment, and while the replica owns
// no range, the informers cache nothing.
//
// The caller starts the membership (m.Start) and stops it (m.Stop) around
// the factory's life; the factory follows its assignments from Start on.
func WithShardMembership(m *sharding.Membership, field sharding.Field) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		switch {
		case m == nil:
			factory.optionErrs = append(factory.optionErrs, errors.New("WithShardMembership: the *sharding.Membership is nil"))
			return factory
		case factory.shard != nil:
			factory.optionErrs = append(factory.optionErrs, fmt.Errorf("WithShardMembership: the factory is already sharded by %s", factory.shard.describe()))
			return factory
		}
		if err := field.Validate(); err != nil {
			factory.optionErrs = append(factory.optionErrs, fmt.Errorf("WithShardMembership: %w", err))
			return factory
		}
		factory.shard = newShardSource(field, nil)
		factory.membership = m
		return factory
	}
}

// shardSource is a shard in force, static or following a membership, and
// the watches running under it.
type shardSource struct {
	field sharding.Field

	mu      sync.Mutex
	gen     uint64
	sel     *sharding.Selector // nil: owns nothing
	watches map[watch.Interface]struct{}
}

func newShardSource(field sharding.Field, sel *sharding.Selector) *shardSource {
	return &shardSource{field: field, sel: sel, watches: make(map[watch.Interface]struct{})}
}

func (s *shardSource) describe() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sel == nil {
		return fmt.Sprintf("a membership on %s", s.field)
	}
	return s.sel.String()
}

// set switches to new ranges and stops every running watch, so that each
// informer lists again under the new shard.
func (s *shardSource) set(ranges []sharding.Range) {
	var sel *sharding.Selector
	if len(ranges) > 0 {
		next, err := sharding.NewSelector(s.field, ranges...)
		if err != nil {
			// Ranges come from Membership, which only hands out valid ones.
			klog.Background().Error(err, "Ignoring an invalid shard assignment", "ranges", ranges)
			return
		}
		sel = &next
	}
	s.mu.Lock()
	if (s.sel == nil) == (sel == nil) && (sel == nil || s.sel.Equal(*sel)) {
		s.mu.Unlock()
		return
	}
	s.sel = sel
	s.gen++
	watches := make([]watch.Interface, 0, len(s.watches))
	for w := range s.watches {
		watches = append(watches, w)
	}
	s.mu.Unlock()
	for _, w := range watches {
		w.Stop()
	}
}

// follow applies the membership's assignments until ctx ends.
func (s *shardSource) follow(ctx context.Context, m *sharding.Membership) {
	ch, cancel := m.Subscribe()
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return
		case ranges, ok := <-ch:
			if !ok {
				return
			}
			s.set(ranges)
		}
	}
}

// entrySharder is one informer's view of a shard source: it implements
// listwatch.Sharder and reports, once per entry, a server that ignores the
// selector. Under WithNamespaces each namespace's informer has its own
// entrySharder, and the entry's notice is what makes the report once.
type entrySharder struct {
	source *shardSource
	e      *entry
}

var _ listwatch.Sharder = &entrySharder{}

func (es *entrySharder) Current() (uint64, func(*metav1.ListOptions), func(runtime.Object) bool) {
	es.source.mu.Lock()
	defer es.source.mu.Unlock()
	sel := es.source.sel
	if sel == nil {
		// Owning nothing: ask for everything, keep nothing (a nil keep),
		// report nothing. An empty shard selector would select every
		// object, not none.
		return es.source.gen, func(*metav1.ListOptions) {}, nil
	}
	s := *sel
	return es.source.gen, s.TweakListOptions, func(obj runtime.Object) bool { return s.Matches(obj) }
}

func (es *entrySharder) Track(w watch.Interface) func() {
	es.source.mu.Lock()
	es.source.watches[w] = struct{}{}
	es.source.mu.Unlock()
	return func() {
		es.source.mu.Lock()
		delete(es.source.watches, w)
		es.source.mu.Unlock()
	}
}

func (es *entrySharder) Ignored(obj runtime.Object) {
	es.source.mu.Lock()
	owning := es.source.sel != nil
	sel := ""
	if owning {
		sel = es.source.sel.String()
	}
	es.source.mu.Unlock()
	if !owning || es.e.shardNotice.Load() != nil {
		return // nothing was asked of the server, or it is reported
	}
	name := "<unknown>"
	if m, ok := obj.(metav1.Object); ok {
		name = m.GetNamespace() + "/" + m.GetName()
	}
	msg := fmt.Sprintf("the server ignored the shard selector %s (it sent %s, outside the shard): it lacks the ShardedListAndWatch feature; filtering on the client instead", sel, name)
	if es.e.shardNotice.CompareAndSwap(nil, &msg) {
		klog.Background().Info("Shard selector ignored by the server; filtering on the client", "informer", es.e.id, "selector", sel, "object", name)
	}
}

// sharderFor returns the sharder of an informer with settings s, or nil.
func (f *sharedInformerFactory) sharderFor(e *entry, s settings) listwatch.Sharder {
	if s.shard == nil {
		return nil
	}
	return &entrySharder{source: s.shard, e: e}
}

// Notices returns what an operator should know about the factory's
// informers that does not make them unready, such as a server that ignored
// the shard selector (the informers then filter on the client). Each
// informer reports a condition once.
func (f *sharedInformerFactory) Notices() []string {
	f.lock.Lock()
	defer f.lock.Unlock()
	var out []string
	for _, e := range f.all() {
		if msg := e.shardNotice.Load(); msg != nil {
			out = append(out, fmt.Sprintf("%s: %s", e.id, *msg))
		}
	}
	slices.Sort(out)
	return out
}
