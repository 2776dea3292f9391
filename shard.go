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
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/sharding"
)

// This file holds the factory's sharding: each replica of a controller
// caches only a slice of the objects, chosen by a 64-bit hash of their UID
// (or namespace). The slice is sent to the API server as
// metav1.ListOptions.ShardSelector (KEP-5866, the ShardedListAndWatch
// feature: alpha since Kubernetes 1.36, beta and on by default planned for 1.38), so
// the server filters both LIST and WATCH; and every object received is
// checked again on the client with the same hash, so a server without the
// feature, which ignores the selector, still yields exactly the shard.
//
// One concept, client-go's shard selector (v0.38's WithShardSelector and
// SharedInformer.SetShardSelector), has several ways in:
//
//   - WithShardSelector: any selector, sent as given;
//   - WithShard(field, index, count): the selector of one even shard of the
//     hash of field (sharding.NewShardRangeSelector in apimachinery v0.38);
//   - WithShardMembership(m, field): the ranges of the hash of field that a
//     Lease-based membership assigns, moving as it changes;
//   - ResourceOptions.ShardSelector: one resource's own selector;
//   - SetShardSelector on an informer before it starts: that informer's.
//
// A factory takes at most one of the first three; the last two override
// it, for one resource or one informer. This file holds the options, the
// shard sources and how an informer follows one; the membership's health
// check is shard_health.go.

// WithShardSelector shards every informer of the factory, of every form and
// in every namespace, by shardSelector, as client-go v0.38's option of the
// same name: each list and watch sends shardSelector.String() exactly as
// given, and each informer keeps only the objects the selector matches,
// also when the server ignores it (see [Factory.Notices]).
//
// A nil or empty selector ([apisharding.Everything]) means no sharding.
// Giving it together with [WithShard] or [WithShardMembership] is an
// error from [New]. A selector the server
// rejects (for example one with two keys) leaves the informers unsynced,
// and [Factory.Ready] names each with the server's message.
func WithShardSelector(shardSelector apisharding.Selector) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		option := "WithShardSelector(nil)"
		if shardSelector != nil {
			option = fmt.Sprintf("WithShardSelector(%q)", shardSelector.String())
		}
		factory.setShard(option, staticShard(shardSelector, false, 0), everyInformer)
		return factory
	}
}

// WithShard shards every informer of the factory by a 64-bit hash of
// field: the informers of replica index (0-based) of count cache only the
// objects in that replica's even slice of the hash space. field is
// [sharding.FieldUID] (object.metadata.uid, the even spread) or
// [sharding.FieldNamespace] (all objects of a namespace land on one
// replica), as for [WithShardMembership]. It is [WithShardSelector] with
// the selector of sharding.NewShardRangeSelector(field, index, count) of
// apimachinery v0.38 ([sharding.ForShard] here), byte for byte, except
// that with the namespace hash it leaves cluster-scoped informers
// unsharded: their objects have no namespace, and would all land on one
// replica.
//
// An unknown field, a count below 1, or an index outside [0, count), is an
// error from [New]; under the other constructors no informer it would
// shard runs.
func WithShard(field sharding.Field, index, count int) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		option := fmt.Sprintf("WithShard(%s, %d, %d)", fieldName(field), index, count)
		refuses := shardedInformers(field)
		sel, err := sharding.ForShard(field, index, count)
		if err != nil {
			factory.invalidNarrowing(fmt.Errorf("%s: %w", option, err), refuses)
			return factory
		}
		factory.setShard(option, staticShard(sel.APISelector(), field == sharding.FieldNamespace, count), refuses)
		return factory
	}
}

// WithShardMembership shards every informer of the factory by the ranges a
// Lease-based [sharding.Membership] assigns this replica, on field (the
// UID or the namespace hash). When the membership changes, each informer
// hands over inside its watch, without listing again: it lists only the
// ranges gained, delivered to handlers as adds, and delivers the objects
// of the ranges given up as deletes (cache.DeletedFinalStateUnknown, as a
// relist would); events of the ranges kept keep flowing. Until the first
// assignment, and while the replica owns no range, the informers cache
// nothing and send no request. As with [WithShard], field
// [sharding.FieldNamespace] leaves cluster-scoped informers unsharded.
//
// The caller starts the membership (m.Start) and stops it (m.Stop) around
// the factory's life; the factory follows its assignments from Start on.
// When the membership stops, by Stop or because its context ended, the
// factory owns nothing from then on: its objects leave as deletes and its
// sharded informers send no further request. So the order of shutdown is
// free; m.Stop before the factory's Shutdown is the graceful one (the
// Lease is released and the others take over at once), and after a
// canceled context the others take over at the Lease's expiry.
//
// A replica that cannot serve its share gives it up: the factory registers
// a health check with m ([sharding.Membership.AddHealthCheck]) that fails
// while any informer following the membership is failing (what
// [Factory.Ready] reports: a list or watch that fails, such as a resource
// that is forbidden or does not exist). Once it has failed at every
// renewal for [sharding.MembershipConfig.HealthGrace] (by default the
// lease duration), the replica publishes itself not ready and the others
// take its ranges; it takes a share again at the first renewal at which
// the check passes. If every replica fails, none gives up its share. The
// rule and its bounds are in the Health section of [sharding.Membership].
func WithShardMembership(m *sharding.Membership, field sharding.Field) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		const option = "WithShardMembership"
		refuses := shardedInformers(field)
		if m == nil {
			factory.invalidNarrowing(errors.New("WithShardMembership: the *sharding.Membership is nil"), refuses)
			return factory
		}
		if err := field.Validate(); err != nil {
			factory.invalidNarrowing(fmt.Errorf("%s: %w", option, err), refuses)
			return factory
		}
		src := membershipShard(field)
		if factory.setShard(option, src, refuses) {
			factory.membership = m
			m.AddHealthCheck(factory.shardHealth)
		}
		return factory
	}
}

// setShard makes src (nil: no sharding) the factory-wide shard, given by
// option. A second shard option is an error: combining two would either
// widen or silently narrow what the first asked for.
func (o *factoryOptions) setShard(option string, src *shardSource, refuses func(schema.GroupVersionResource, bool) bool) bool {
	if o.shardOption != "" {
		o.invalidNarrowing(fmt.Errorf("%s: the factory is already sharded by %s; give one of WithShardSelector, WithShard and WithShardMembership", option, o.shardOption), refuses)
		return false
	}
	o.shardOption, o.shard = option, src
	return true
}

// shardedInformers are the informers a shard on field applies to: all of
// them, but only the namespaced ones for the namespace hash.
func shardedInformers(field sharding.Field) func(schema.GroupVersionResource, bool) bool {
	if field == sharding.FieldNamespace {
		return namespacedInformers
	}
	return everyInformer
}

// fieldName names field in errors as a caller writes it.
func fieldName(field sharding.Field) string {
	switch field {
	case sharding.FieldUID:
		return "sharding.FieldUID"
	case sharding.FieldNamespace:
		return "sharding.FieldNamespace"
	}
	return fmt.Sprintf("%q", field)
}

// shardSource is a shard in force, static or following a membership.
type shardSource struct {
	// field is the key of a membership's ranges; empty for a static
	// selector.
	field sharding.Field
	// nsOnly leaves cluster-scoped resources unsharded (a namespace key
	// given by WithShard or WithShardMembership).
	nsOnly bool

	mu      sync.Mutex
	gen     uint64
	sel     apisharding.Selector // nil: owns nothing
	ranges  []sharding.Range     // of a membership's selector
	changed chan struct{}        // closed on a change; nil: never changes
	ended   bool                 // the membership has stopped

	// replicas is the shard count of WithShard, which the shard metrics
	// report as members; 0 where the factory does not know it.
	replicas int
}

// emptyShardProbe is how often an informer that a live membership gives no
// range lists one object, so that the factory's health check
// (shard_health.go) learns when a replica that gave up its share because it
// could not list can list again. Once the membership has ended, nothing is
// sent.
const emptyShardProbe = time.Second

// staticShard is the source of a fixed selector, one of replicas (0:
// unknown); nil for a nil or empty selector, which is no sharding.
func staticShard(sel apisharding.Selector, nsOnly bool, replicas int) *shardSource {
	if sel == nil || sel.Empty() {
		return nil
	}
	return &shardSource{sel: sel.DeepCopySelector(), nsOnly: nsOnly, replicas: replicas}
}

// selectorRanges are the hash ranges a fixed selector covers, for the
// shard metrics; false if a requirement is not a range of the hash space
// (the server refuses such a selector, and Ready says so).
func selectorRanges(sel apisharding.Selector) ([]sharding.Range, bool) {
	if sel == nil {
		return nil, false
	}
	var ranges []sharding.Range
	for _, req := range sel.Requirements() {
		start, err := strconv.ParseUint(strings.TrimPrefix(req.Start, "0x"), 16, 64)
		if err != nil {
			return nil, false
		}
		var end uint64 // 0: the end of the space, as sharding.Range has it
		if req.End != sharding.EndOfSpace {
			if end, err = strconv.ParseUint(strings.TrimPrefix(req.End, "0x"), 16, 64); err != nil {
				return nil, false
			}
		}
		ranges = append(ranges, sharding.Range{Start: start, End: end})
	}
	return ranges, len(ranges) > 0
}

// membershipShard is the source that a membership moves. It owns nothing
// until the first assignment.
func membershipShard(field sharding.Field) *shardSource {
	return &shardSource{field: field, nsOnly: field == sharding.FieldNamespace, changed: make(chan struct{})}
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

// set switches to new ranges (none: own nothing). Every watch of the
// source hands over to them without ending (internal/listwatch/shard.go).
func (s *shardSource) set(ranges []sharding.Range) (changed bool) {
	var sel apisharding.Selector
	if len(ranges) > 0 {
		next, err := sharding.NewSelector(s.field, ranges...)
		if err != nil {
			// Ranges come from Membership, which only hands out valid ones.
			klog.Background().Error(err, "Ignoring an invalid shard assignment", "ranges", ranges)
			return false
		}
		sel, ranges = next.APISelector(), next.Ranges()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || (s.sel == nil) == (sel == nil) && (sel == nil || s.sel.String() == sel.String()) {
		return false
	}
	s.sel, s.ranges = sel, ranges
	s.gen++
	close(s.changed)
	s.changed = make(chan struct{})
	return true
}

// end makes the source own nothing for good, without probing: the
// membership has stopped.
func (s *shardSource) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.sel, s.ranges, s.ended = nil, nil, true
	s.gen++
	close(s.changed)
	s.changed = make(chan struct{})
}

// follow applies the membership's assignments until ctx ends. When the
// membership stops, for whatever reason, the factory owns nothing: a
// membership that no longer renews its Lease cannot keep its ranges
// either, and another member takes them over at the Lease's expiry.
//
// sm, if set, is told each assignment (metrics.go).
func (s *shardSource) follow(ctx context.Context, m *sharding.Membership, sm *shardMetrics) {
	ch, cancel := m.Subscribe()
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return
		case ranges, ok := <-ch:
			if !ok {
				s.end()
				sm.assigned(nil, 0, false)
				return
			}
			changed := s.set(ranges)
			sm.assigned(ranges, len(m.Assigned()), changed)
		}
	}
}

// informerShard is the shard one informer of the factory follows: the
// factory's (or its resource's) until SetShardSelector replaces it before
// the informer starts. It implements listwatch.Sharder for each of the
// informer's namespaces, and reports once per entry a server that ignores
// the selector.
type informerShard struct {
	// id names the informer in errors and logs; notices are where it
	// reports a server that ignores the selector.
	id      InformerID
	notices *notices

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

func (is *informerShard) Current() listwatch.Shard {
	src := is.current()
	if src == nil {
		return listwatch.Shard{}
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	sh := listwatch.Shard{Gen: src.gen, Changed: src.changed, Field: src.field, Ranges: src.ranges}
	if src.sel == nil {
		// Owning nothing: a tweak without a keep. Only a live membership
		// probes (emptyShardProbe).
		sh.Tweak = func(*metav1.ListOptions) {}
		if src.field != "" && !src.ended {
			sh.Probe = emptyShardProbe
		}
		return sh
	}
	str := src.sel.String()
	sh.Tweak = func(o *metav1.ListOptions) { o.ShardSelector = str }
	sh.Keep = src.sel.Matches
	return sh
}

func (is *informerShard) Ignored(obj runtime.Object) {
	src := is.current()
	if src == nil {
		return
	}
	sel := src.selector()
	if sel == nil || is.notices.shard.Load() != nil {
		return // nothing was asked of the server, or it is reported
	}
	name := "<unknown>"
	if m, ok := obj.(metav1.Object); ok {
		name = m.GetNamespace() + "/" + m.GetName()
	}
	msg := fmt.Sprintf("the server ignored the shard selector %s (it sent %s, outside the shard): it lacks the ShardedListAndWatch feature; filtering on the client instead", sel, name)
	if is.notices.shard.CompareAndSwap(nil, &msg) {
		klog.Background().Info("Shard selector ignored by the server; filtering on the client", "informer", is.id, "selector", sel.String(), "object", name)
	}
}

// following reports whether the informer follows a membership: its shard
// is the factory's membership, not a selector of its own
// (ResourceOptions.ShardSelector or SetShardSelector).
func (is *informerShard) following() bool {
	src := is.current()
	return src != nil && src.field != ""
}

// setSelector is SetShardSelector: before start, sel replaces the shard
// (nil or empty: none).
func (is *informerShard) setSelector(sel apisharding.Selector) error {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.started {
		return fmt.Errorf("informer %s has already started; set its shard selector before Start", is.id)
	}
	is.source = staticShard(sel, false, 0)
	return nil
}

// start marks the informer as started: its shard is fixed from now on.
func (is *informerShard) start() {
	is.mu.Lock()
	is.started = true
	is.mu.Unlock()
}

// shardSetter is an informer that takes a shard selector: client-go's from
// v0.38 on, and every informer of this factory.
type shardSetter interface {
	SetShardSelector(selector apisharding.Selector) error
}
