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
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/sharding"
)

// This file holds the factory's sharding: each replica of a controller
// caches only a slice of the objects, chosen by a 64-bit hash of their UID
// (or namespace). The slice is sent to the API server as
// metav1.ListOptions.ShardSelector (KEP-5866, the ShardedListAndWatch
// feature: alpha in Kubernetes 1.37, beta and on by default in 1.38), so
// the server filters both LIST and WATCH; and every object received is
// checked again on the client with the same hash, so a server without the
// feature, which ignores the selector, still yields exactly the shard.
//
// One concept, client-go's shard selector (v0.38's WithShardSelector and
// SharedInformer.SetShardSelector), has several ways in:
//
//   - WithShardSelector: any selector, sent as given;
//   - WithShard and WithNamespaceShard: shorthands for the selector of one
//     even shard (sharding.NewShardRangeSelector in apimachinery v0.38);
//   - WithShardMembership: a selector that a Lease-based membership moves;
//   - ResourceOptions.ShardSelector: one resource's own selector;
//   - SetShardSelector on an informer before it starts: that informer's.
//
// A factory takes at most one of the first three; the last two override
// it, for one resource or one informer.

// WithShardSelector shards every informer of the factory, of every form and
// in every namespace, by shardSelector, as client-go v0.38's option of the
// same name: each list and watch sends shardSelector.String() exactly as
// given, and each informer keeps only the objects the selector matches,
// also when the server ignores it (see [Factory.Notices]).
//
// A nil or empty selector ([apisharding.Everything]) means no sharding.
// Giving it together with [WithShard], [WithNamespaceShard] or
// [WithShardMembership] is an error from [New]. A selector the server
// rejects (for example one with two keys) leaves the informers unsynced,
// and [Factory.Ready] names each with the server's message.
func WithShardSelector(shardSelector apisharding.Selector) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		option := "WithShardSelector(nil)"
		if shardSelector != nil {
			option = fmt.Sprintf("WithShardSelector(%q)", shardSelector.String())
		}
		factory.setShard(option, staticShard(shardSelector, false))
		return factory
	}
}

// WithShard shards every informer of the factory by the hash of
// object.metadata.uid: the informers of replica index (0-based) of count
// cache only the objects in that replica's even slice of the hash space.
// It is [WithShardSelector] with the selector of
// sharding.NewShardRangeSelector("object.metadata.uid", index, count) of
// apimachinery v0.38 ([sharding.ForShard] here), byte for byte. A count
// below 1, or an index outside [0, count), is an error from [New].
func WithShard(index, count int) SharedInformerOption {
	return withStaticShard("WithShard", sharding.FieldUID, index, count)
}

// WithNamespaceShard is [WithShard] by the hash of the object's namespace,
// so that all objects of a namespace land on one replica. Unlike
// [WithShardSelector] with the same selector, it leaves cluster-scoped
// informers unsharded: their objects have no namespace, and would all land
// on one replica.
func WithNamespaceShard(index, count int) SharedInformerOption {
	return withStaticShard("WithNamespaceShard", sharding.FieldNamespace, index, count)
}

func withStaticShard(option string, field sharding.Field, index, count int) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		option := fmt.Sprintf("%s(%d, %d)", option, index, count)
		sel, err := sharding.ForShard(field, index, count)
		if err != nil {
			factory.optionErrs = append(factory.optionErrs, fmt.Errorf("%s: %w", option, err))
			return factory
		}
		factory.setShard(option, staticShard(sel.APISelector(), field == sharding.FieldNamespace))
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
// no range, the informers cache nothing. As with [WithNamespaceShard],
// field [sharding.FieldNamespace] leaves cluster-scoped informers unsharded.
//
// The caller starts the membership (m.Start) and stops it (m.Stop) around
// the factory's life; the factory follows its assignments from Start on.
func WithShardMembership(m *sharding.Membership, field sharding.Field) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		const option = "WithShardMembership"
		if m == nil {
			factory.optionErrs = append(factory.optionErrs, errors.New("WithShardMembership: the *sharding.Membership is nil"))
			return factory
		}
		if err := field.Validate(); err != nil {
			factory.optionErrs = append(factory.optionErrs, fmt.Errorf("%s: %w", option, err))
			return factory
		}
		if factory.setShard(option, &shardSource{field: field, nsOnly: field == sharding.FieldNamespace, watches: make(map[watch.Interface]struct{})}) {
			factory.membership = m
		}
		return factory
	}
}

// setShard makes src (nil: no sharding) the factory-wide shard, given by
// option. A second shard option is an error: combining two would either
// widen or silently narrow what the first asked for.
func (f *sharedInformerFactory) setShard(option string, src *shardSource) bool {
	if f.shardOption != "" {
		f.optionErrs = append(f.optionErrs, fmt.Errorf("%s: the factory is already sharded by %s; give one of WithShardSelector, WithShard, WithNamespaceShard and WithShardMembership", option, f.shardOption))
		return false
	}
	f.shardOption, f.shard = option, src
	return true
}

// shardSource is a shard in force, static or following a membership, and
// the watches running under it.
type shardSource struct {
	// field is the key of a membership's ranges; empty for a static
	// selector.
	field sharding.Field
	// nsOnly leaves cluster-scoped resources unsharded (a namespace key
	// given by WithNamespaceShard or a membership).
	nsOnly bool

	mu      sync.Mutex
	gen     uint64
	sel     apisharding.Selector // nil: owns nothing
	watches map[watch.Interface]struct{}
}

// staticShard is the source of a fixed selector; nil for a nil or empty
// one, which is no sharding.
func staticShard(sel apisharding.Selector, nsOnly bool) *shardSource {
	if sel == nil || sel.Empty() {
		return nil
	}
	return &shardSource{sel: sel.DeepCopySelector(), nsOnly: nsOnly, watches: make(map[watch.Interface]struct{})}
}

// appliesTo reports whether the source shards a resource of this scope.
func (s *shardSource) appliesTo(namespaced bool) bool {
	return namespaced || !s.nsOnly
}

// selector returns the selector in force, nil while owning nothing.
func (s *shardSource) selector() apisharding.Selector {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sel
}

// set switches to new ranges and stops every running watch, so that each
// informer lists again under the new shard.
func (s *shardSource) set(ranges []sharding.Range) {
	var sel apisharding.Selector
	if len(ranges) > 0 {
		next, err := sharding.NewSelector(s.field, ranges...)
		if err != nil {
			// Ranges come from Membership, which only hands out valid ones.
			klog.Background().Error(err, "Ignoring an invalid shard assignment", "ranges", ranges)
			return
		}
		sel = next.APISelector()
	}
	s.mu.Lock()
	if (s.sel == nil) == (sel == nil) && (sel == nil || s.sel.String() == sel.String()) {
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

// informerShard is the shard one informer of the factory follows: the
// factory's (or its resource's) until SetShardSelector replaces it before
// the informer starts. It implements listwatch.Sharder for each of the
// informer's namespaces, and reports once per entry a server that ignores
// the selector.
type informerShard struct {
	e *entry

	mu      sync.Mutex
	started bool
	source  *shardSource // nil: not sharded
}

var _ listwatch.Sharder = &informerShard{}

func (is *informerShard) current() *shardSource {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.source
}

func (is *informerShard) Current() (uint64, func(*metav1.ListOptions), func(runtime.Object) (bool, error)) {
	src := is.current()
	if src == nil {
		return 0, nil, nil
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	sel := src.sel
	if sel == nil {
		// Owning nothing: ask for everything, keep nothing (a nil keep),
		// report nothing. An empty shard selector would select every
		// object, not none.
		return src.gen, func(*metav1.ListOptions) {}, nil
	}
	str := sel.String()
	return src.gen, func(o *metav1.ListOptions) { o.ShardSelector = str }, sel.Matches
}

func (is *informerShard) Track(w watch.Interface) func() {
	src := is.current()
	if src == nil {
		return func() {} // unsharded watches are not wrapped; defensive
	}
	src.mu.Lock()
	src.watches[w] = struct{}{}
	src.mu.Unlock()
	return func() {
		src.mu.Lock()
		delete(src.watches, w)
		src.mu.Unlock()
	}
}

func (is *informerShard) Ignored(obj runtime.Object) {
	src := is.current()
	if src == nil {
		return
	}
	sel := src.selector()
	if sel == nil || is.e.shardNotice.Load() != nil {
		return // nothing was asked of the server, or it is reported
	}
	name := "<unknown>"
	if m, ok := obj.(metav1.Object); ok {
		name = m.GetNamespace() + "/" + m.GetName()
	}
	msg := fmt.Sprintf("the server ignored the shard selector %s (it sent %s, outside the shard): it lacks the ShardedListAndWatch feature; filtering on the client instead", sel, name)
	if is.e.shardNotice.CompareAndSwap(nil, &msg) {
		klog.Background().Info("Shard selector ignored by the server; filtering on the client", "informer", is.e.id, "selector", sel.String(), "object", name)
	}
}

// setSelector is SetShardSelector: before start, sel replaces the shard
// (nil or empty: none).
func (is *informerShard) setSelector(sel apisharding.Selector) error {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.started {
		return fmt.Errorf("informer %s has already started; set its shard selector before Start", is.e.id)
	}
	is.source = staticShard(sel, false)
	return nil
}

// start marks the informer as started: its shard is fixed from now on.
func (is *informerShard) start() {
	is.mu.Lock()
	is.started = true
	is.mu.Unlock()
}

// shardable is how the factory hands out every informer it builds: the
// informer itself, with SetShardSelector. client-go's SharedInformer has
// that method from v0.38 on; on older client-go it is this module's
// addition. Either way it acts on the factory's own list/watch, so that
// the selector is sent as given, filtered on the client when the server
// ignores it, and reported in Notices.
type shardable struct {
	cache.SharedIndexInformer
	shard *informerShard
}

// SetShardSelector limits the informer to the objects selector matches,
// in every namespace it lists, replacing the factory's shard for this
// informer; a nil or empty selector means no sharding. It must be called
// before the informer starts; afterwards it returns an error and changes
// nothing.
func (s *shardable) SetShardSelector(selector apisharding.Selector) error {
	return s.shard.setSelector(selector)
}

// Run marks the shard fixed, then runs the informer.
func (s *shardable) Run(stopCh <-chan struct{}) {
	s.shard.start()
	s.SharedIndexInformer.Run(stopCh)
}

// RunWithContext marks the shard fixed, then runs the informer.
func (s *shardable) RunWithContext(ctx context.Context) {
	s.shard.start()
	s.SharedIndexInformer.RunWithContext(ctx)
}

// shardSetter is an informer that takes a shard selector: client-go's from
// v0.38 on, and every informer of this factory.
type shardSetter interface {
	SetShardSelector(selector apisharding.Selector) error
}

var _ shardSetter = &shardable{}

// applyShard gives an informer built by InformerFor's newFunc, which the
// factory's list/watch does not serve, the factory's shard through its own
// SetShardSelector. Without that method (client-go before v0.38), or under
// a membership, which a fixed selector cannot follow, it returns an error:
// the informer must not run unsharded.
func applyShard(informer cache.SharedIndexInformer, src *shardSource, option string) error {
	setter, ok := informer.(shardSetter)
	switch {
	case src.field != "":
		return fmt.Errorf("%s: an informer built by InformerFor's newFunc cannot follow a shard membership; use the generated accessors or ForResource", option)
	case !ok:
		return fmt.Errorf("%s: the informer %T built by InformerFor's newFunc has no SetShardSelector (client-go before v0.38), so it cannot be sharded", option, informer)
	}
	return setter.SetShardSelector(src.selector())
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
