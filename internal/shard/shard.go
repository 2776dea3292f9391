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

// Package shard is the factory's sharding at run time: the shard sources
// (a fixed selector, or the ranges a Lease-based membership assigns and
// moves) and the shard of each informer, which its list and watch follow
// (internal/listwatch: the filter and the handover). The root package's
// shard.go holds the options that choose a source.
package shard

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/meter"
	"github.com/kubeinformers/informers/internal/wake"
	"github.com/kubeinformers/informers/sharding"
)

// Source is a shard in force, static or following a membership.
type Source struct {
	// field is the key of a membership's ranges; empty for a static
	// selector.
	field sharding.Field
	// nsOnly leaves cluster-scoped resources unsharded (a namespace key
	// given by WithShard or WithShardMembership).
	nsOnly bool

	mu     sync.Mutex
	gen    uint64
	sel    apisharding.Selector // nil: owns nothing
	ranges []sharding.Range     // of a membership's selector
	ended  bool                 // the membership has stopped
	// changed wakes the watches on a change of a membership's source; a
	// static one never changes.
	changed wake.Signal

	// replicas is the shard count of WithShard, which the shard metrics
	// report as members; 0 where the factory does not know it.
	replicas int
}

// emptyProbe is how often an informer that a live membership gives no
// range lists one object, so that the factory's health check
// (internal/informer/shardhealth.go) learns when a replica that gave up its share because it
// could not list can list again. Once the membership has ended, nothing is
// sent.
const emptyProbe = time.Second

// Static is the source of a fixed selector, one of replicas (0:
// unknown); nil for a nil or empty selector, which is no sharding.
func Static(sel apisharding.Selector, nsOnly bool, replicas int) *Source {
	if sel == nil || sel.Empty() {
		return nil
	}
	return &Source{sel: sel.DeepCopySelector(), nsOnly: nsOnly, replicas: replicas}
}

// Ranges are the hash ranges a fixed selector covers, for the
// shard metrics; false if a requirement is not a range of the hash space
// (the server refuses such a selector, and Ready says so).
func Ranges(sel apisharding.Selector) ([]sharding.Range, bool) {
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

// Membership is the source that a membership moves. It owns nothing
// until the first assignment.
func Membership(field sharding.Field) *Source {
	return &Source{field: field, nsOnly: field == sharding.FieldNamespace}
}

// Follows reports whether the source is the one a membership moves,
// rather than a fixed selector.
func (s *Source) Follows() bool { return s.field != "" }

// ReportFixed reports a fixed source to the factory's shard metrics (nil:
// none): the share of the hash space its selector covers and, for
// WithShard, the replica count as members.
func (s *Source) ReportFixed(sm *meter.Shard) {
	ranges, ok := Ranges(s.Selector())
	sm.Fixed(ranges, ok, s.replicas)
}

// AppliesTo reports whether the source shards a resource of this scope.
func (s *Source) AppliesTo(namespaced bool) bool {
	return namespaced || !s.nsOnly
}

// Selector returns the selector in force, nil while owning nothing.
func (s *Source) Selector() apisharding.Selector {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sel
}

// Set switches to new ranges (none: own nothing). Every watch of the
// source hands over to them without ending (internal/listwatch/shard.go).
func (s *Source) Set(ranges []sharding.Range) (changed bool) {
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
	s.changed.Broadcast()
	return true
}

// end makes the source own nothing for good, without probing: the
// membership has stopped.
func (s *Source) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.sel, s.ranges, s.ended = nil, nil, true
	s.gen++
	s.changed.Broadcast()
}

// Follow applies the membership's assignments until ctx ends. When the
// membership stops, for whatever reason, the factory owns nothing: a
// membership that no longer renews its Lease cannot keep its ranges
// either, and another member takes them over at the Lease's expiry.
//
// sm, if set, is told each assignment.
func (s *Source) Follow(ctx context.Context, m *sharding.Membership, sm *meter.Shard) {
	ch, cancel := m.Subscribe()
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return
		case ranges, ok := <-ch:
			if !ok {
				s.end()
				sm.Assigned(nil, 0, false)
				return
			}
			changed := s.Set(ranges)
			sm.Assigned(ranges, len(m.Assigned()), changed)
		}
	}
}

// Informer is the shard one informer of the factory follows: the
// factory's (or its resource's) until SetShardSelector replaces it before
// the informer starts. It implements listwatch.Sharder for each of the
// informer's namespaces, and reports once per entry a server that ignores
// the selector.
type Informer struct {
	// id names the informer in errors and logs; notice is where it
	// reports, once, a server that ignores the selector.
	id     string
	notice *atomic.Pointer[string]

	mu      sync.Mutex
	started bool
	source  *Source // nil: not sharded
}

var _ listwatch.Sharder = &Informer{}

// NewInformer returns the shard of the informer id, which starts with src
// (nil: not sharded) and reports a server that ignores its selector to
// notice.
func NewInformer(id string, notice *atomic.Pointer[string], src *Source) *Informer {
	return &Informer{id: id, notice: notice, source: src}
}

func (is *Informer) current() *Source {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.source
}

// Current is the shard in force, for the informer's list and watch
// (listwatch.Sharder).
func (is *Informer) Current() listwatch.Shard {
	src := is.current()
	if src == nil {
		return listwatch.Shard{}
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	sh := listwatch.Shard{Gen: src.gen, Field: src.field, Ranges: src.ranges}
	if src.Follows() {
		sh.Changed = src.changed.Next()
	}
	if src.sel == nil {
		// Owning nothing: a tweak without a keep. Only a live membership
		// probes (emptyProbe).
		sh.Tweak = func(*metav1.ListOptions) {}
		if src.field != "" && !src.ended {
			sh.Probe = emptyProbe
		}
		return sh
	}
	str := src.sel.String()
	sh.Tweak = func(o *metav1.ListOptions) { o.ShardSelector = str }
	sh.Keep = src.sel.Matches
	return sh
}

// Ignored reports, once, that the server sent obj although it is outside
// the shard: it ignored the selector (listwatch.Sharder).
func (is *Informer) Ignored(obj runtime.Object) {
	src := is.current()
	if src == nil {
		return
	}
	sel := src.Selector()
	if sel == nil || is.notice.Load() != nil {
		return // nothing was asked of the server, or it is reported
	}
	name := "<unknown>"
	if m, ok := obj.(metav1.Object); ok {
		name = m.GetNamespace() + "/" + m.GetName()
	}
	msg := fmt.Sprintf("the server ignored the shard selector %s (it sent %s, outside the shard): it lacks the ShardedListAndWatch feature; filtering on the client instead", sel, name)
	if is.notice.CompareAndSwap(nil, &msg) {
		klog.Background().Info("Shard selector ignored by the server; filtering on the client", "informer", is.id, "selector", sel.String(), "object", name)
	}
}

// Following reports whether the informer follows a membership: its shard
// is the factory's membership, not a selector of its own
// (ResourceOptions.ShardSelector or SetShardSelector).
func (is *Informer) Following() bool {
	src := is.current()
	return src != nil && src.field != ""
}

// SetSelector is SetShardSelector: before start, sel replaces the shard
// (nil or empty: none).
func (is *Informer) SetSelector(sel apisharding.Selector) error {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.started {
		return fmt.Errorf("informer %s has already started; set its shard selector before Start", is.id)
	}
	is.source = Static(sel, false, 0)
	return nil
}

// Start marks the informer as started: its shard is fixed from now on.
func (is *Informer) Start() {
	is.mu.Lock()
	is.started = true
	is.mu.Unlock()
}

// Setter is an informer that takes a shard selector: client-go's from
// v0.38 on, and every informer of the factory.
type Setter interface {
	SetShardSelector(selector apisharding.Selector) error
}
