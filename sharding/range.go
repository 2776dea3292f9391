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

package sharding

import (
	"fmt"
	"math/bits"
	"reflect"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/tools/cache"
)

// Field is the object field whose 64-bit FNV-1a hash places an object in the
// hash space. The values are the CEL-style paths the API server accepts in
// [metav1.ListOptions.ShardSelector].
type Field string

const (
	// FieldUID shards by metadata.uid: objects spread evenly over the shards
	// whatever their namespace. It is the default.
	FieldUID Field = "object.metadata.uid"
	// FieldNamespace shards by metadata.namespace: all objects of one namespace
	// land in the same shard, so a shard can reconcile a namespace as a whole.
	// The split is only as even as the namespaces are; cluster-scoped objects
	// all hash the empty string and so land in one shard.
	FieldNamespace Field = "object.metadata.namespace"
)

// Validate reports whether the API server accepts f in a shard selector.
func (f Field) Validate() error {
	switch f {
	case FieldUID, FieldNamespace:
		return nil
	}
	return fmt.Errorf("sharding: unsupported field %q (want %q or %q)", string(f), FieldUID, FieldNamespace)
}

// EndOfSpace is the exclusive end of the hash space, 2^64, as the API server
// writes it. It is the only bound with 17 hex digits, and the End of the
// last range of every selector that reaches the end of the space, so code
// that writes apimachinery's ShardRangeRequirement by hand needs it.
const EndOfSpace = "0x10000000000000000"

// Range is the half-open range [Start, End) of the 64-bit hash space.
//
// 2^64, the end of the space, does not fit in a uint64, so End == 0 stands
// for 2^64. The zero Range is therefore the whole space, and
// Range{Start: 1 << 63} is its upper half. A Range with End != 0 must have
// Start < End: a Range is never empty.
type Range struct {
	Start uint64
	End   uint64
}

// Full is the whole hash space [0, 2^64).
var Full = Range{}

// Validate reports an empty or inverted range.
func (r Range) Validate() error {
	if r.End != 0 && r.Start >= r.End {
		return fmt.Errorf("sharding: empty range %s: start must be less than end (an End of 0 means 2^64)", r)
	}
	return nil
}

// Contains reports whether hash h lies in r.
func (r Range) Contains(h uint64) bool {
	return h >= r.Start && (r.End == 0 || h < r.End)
}

// StartHex is the inclusive bound as the API server wants it: "0x" and
// exactly 16 lowercase hex digits.
func (r Range) StartHex() string { return formatBound(r.Start) }

// EndHex is the exclusive bound: "0x" and 16 lowercase hex digits, or
// [EndOfSpace] when the range runs to the end of the space.
func (r Range) EndHex() string {
	if r.End == 0 {
		return EndOfSpace
	}
	return formatBound(r.End)
}

// String formats r as "[start, end)" with the selector's bounds.
func (r Range) String() string { return "[" + r.StartHex() + ", " + r.EndHex() + ")" }

// formatBound writes the 16-digit form. The server rejects the short form
// ("0x0"), and a first kube-state-metrics attempt sent exactly that.
func formatBound(v uint64) string { return fmt.Sprintf("0x%016x", v) }

// Split returns shard index of count equal shards of the hash space.
//
// Shard i is [floor(i·2^64/count), floor((i+1)·2^64/count)); the last shard
// ends at 2^64. So the shards of one count have no gaps and no overlaps for
// any count, not only powers of two, and their sizes differ by at most one.
func Split(index, count int) (Range, error) {
	if count < 1 {
		return Range{}, fmt.Errorf("sharding: shard count %d must be at least 1", count)
	}
	if index < 0 || index >= count {
		return Range{}, fmt.Errorf("sharding: shard index %d out of range [0, %d)", index, count)
	}
	return Range{Start: boundary(index, count), End: boundary(index+1, count)}, nil
}

// boundary is floor(i·2^64/count) for 0 <= i <= count, with 2^64 (i == count)
// written as 0 like Range.End. The 128-bit division is exact: i·2^64 is the
// 128-bit value with high word i and low word 0.
func boundary(i, count int) uint64 {
	if i == count {
		return 0
	}
	q, _ := bits.Div64(uint64(i), 0, uint64(count))
	return q
}

// Hash is the position of value in the hash space: the 64-bit FNV-1a hash the
// API server computes, taken from [apisharding.HashField] so that client and
// server can never disagree.
func Hash(value string) uint64 {
	h, err := strconv.ParseUint(apisharding.HashField(value), 16, 64)
	if err != nil {
		// HashField always writes 16 hex digits; this is unreachable.
		panic(fmt.Sprintf("sharding: unexpected hash %q: %v", apisharding.HashField(value), err))
	}
	return h
}

// Selector is a set of ranges of the hash space on one field: the shard an
// informer lists, watches and keeps. Build it with [NewSelector] or
// [ForShard]. A Selector always selects at least one range; its zero value
// is not usable.
type Selector struct {
	field  Field
	ranges []Range // sorted, disjoint, non-adjacent
	api    apisharding.Selector
	str    string
}

// ForShard is the selector of shard index of count equal shards (see
// [Split]) on field. It is what a static WithShard option sends.
func ForShard(field Field, index, count int) (Selector, error) {
	r, err := Split(index, count)
	if err != nil {
		return Selector{}, err
	}
	return NewSelector(field, r)
}

// NewSelector is the selector of the union of ranges on field. The ranges
// are sorted, and overlapping or adjacent ranges are joined, so one set of
// hashes always yields one selector string. At least one range is required:
// an empty shard selector would select every object, not none; a member that
// owns nothing must stop its informers instead.
func NewSelector(field Field, ranges ...Range) (Selector, error) {
	if err := field.Validate(); err != nil {
		return Selector{}, err
	}
	if len(ranges) == 0 {
		return Selector{}, fmt.Errorf("sharding: a selector on %s needs at least one range (an empty shard selector selects every object)", field)
	}
	for _, r := range ranges {
		if err := r.Validate(); err != nil {
			return Selector{}, err
		}
	}
	merged := normalize(ranges)
	reqs := make([]apisharding.ShardRangeRequirement, 0, len(merged))
	for _, r := range merged {
		reqs = append(reqs, apisharding.ShardRangeRequirement{Key: string(field), Start: r.StartHex(), End: r.EndHex()})
	}
	// apimachinery's own formatter writes the canonical form, the one the
	// server echoes in ListMeta.ShardInfo.
	api := apisharding.NewSelector(reqs...)
	return Selector{field: field, ranges: merged, api: api, str: api.String()}, nil
}

// Normalize sorts ranges and joins overlapping and adjacent ones. Invalid
// (empty) ranges are dropped.
//
// Deprecated: [NewSelector] normalizes its ranges, and [Selector.Ranges]
// returns them; only this package's tests used Normalize. It goes in the
// next release.
func Normalize(ranges []Range) []Range { return normalize(ranges) }

func normalize(ranges []Range) []Range {
	rs := make([]Range, 0, len(ranges))
	for _, r := range ranges {
		if r.Validate() == nil {
			rs = append(rs, r)
		}
	}
	slices.SortFunc(rs, func(a, b Range) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.End == 0 {
				continue // last already runs to 2^64 and covers r
			}
			if r.Start <= last.End {
				if r.End == 0 || r.End > last.End {
					last.End = r.End
				}
				continue
			}
		}
		out = append(out, r)
	}
	return slices.Clip(out)
}

// Field is the field the selector hashes.
func (s Selector) Field() Field { return s.field }

// Ranges is a copy of the sorted, joined ranges.
func (s Selector) Ranges() []Range { return slices.Clone(s.ranges) }

// String is the canonical selector for [metav1.ListOptions.ShardSelector],
// byte for byte what [apisharding.NewSelector] writes, for example
//
//	shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
//
// with ranges joined by " || ".
func (s Selector) String() string { return s.str }

// APISelector is s as apimachinery's [apisharding.Selector], the type that
// client-go's SetShardSelector and the factory's WithShardSelector take.
// Its String is s.String(). It is nil for the zero Selector.
func (s Selector) APISelector() apisharding.Selector {
	if s.api == nil {
		return nil
	}
	return s.api.DeepCopySelector()
}

// Requirements are the ranges in apimachinery's form.
//
// Deprecated: use s.APISelector().Requirements(). Requirements exposes
// apimachinery's alpha type on this package's own selector, and only this
// package's tests used it; it goes in the next release.
func (s Selector) Requirements() []apisharding.ShardRangeRequirement {
	if s.api == nil {
		return nil
	}
	return s.api.Requirements()
}

// TweakListOptions sets options.ShardSelector. It has the shape of a
// TweakListOptionsFunc, so it can be chained with other tweaks; a label or
// field selector in options combines with the shard selector by AND.
func (s Selector) TweakListOptions(options *metav1.ListOptions) {
	options.ShardSelector = s.str
}

// Equal reports whether s and o select the same hashes of the same field.
func (s Selector) Equal(o Selector) bool { return s.str == o.str }

// ContainsHash reports whether hash h is in one of the ranges.
//
// Deprecated: use [Selector.Matches] on the object, or [Range.Contains]
// on each of [Selector.Ranges]; only this package's tests used
// ContainsHash. It goes in the next release.
func (s Selector) ContainsHash(h uint64) bool {
	for _, r := range s.ranges {
		if r.Contains(h) {
			return true
		}
	}
	return false
}

// Matches is the client-side filter: whether obj is in the shard, by the
// same hash the server uses. obj may be a typed object, an
// *unstructured.Unstructured, a *metav1.PartialObjectMetadata or a
// [cache.DeletedFinalStateUnknown] wrapping one of these. Anything without
// object metadata does not match; [Selector.MatchesErr] says why.
func (s Selector) Matches(obj interface{}) bool {
	ok, err := s.matches(obj)
	return ok && err == nil
}

// MatchesErr is [Selector.Matches] with the reason an object cannot be placed.
//
// Deprecated: use s.APISelector().Matches, apimachinery's form, for
// runtime.Objects; only this package's tests used MatchesErr. It goes in
// the next release.
func (s Selector) MatchesErr(obj interface{}) (bool, error) {
	return s.matches(obj)
}

func (s Selector) matches(obj interface{}) (bool, error) {
	if s.api == nil {
		return false, fmt.Errorf("sharding: zero Selector; build one with NewSelector or ForShard")
	}
	switch t := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		obj = t.Obj
	case *cache.DeletedFinalStateUnknown:
		if t == nil {
			return false, fmt.Errorf("sharding: nil tombstone")
		}
		obj = t.Obj
	}
	ro, ok := obj.(runtime.Object)
	if !ok || ro == nil {
		return false, fmt.Errorf("sharding: %T is not a runtime.Object", obj)
	}
	if v := reflect.ValueOf(ro); v.Kind() == reflect.Pointer && v.IsNil() {
		return false, fmt.Errorf("sharding: nil %T", obj)
	}
	if _, err := meta.Accessor(ro); err != nil {
		return false, fmt.Errorf("sharding: %T has no object metadata: %w", obj, err)
	}
	return s.api.Matches(ro)
}
