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
	"math/big"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

var two64 = new(big.Int).Lsh(big.NewInt(1), 64)

// endBig is r.End as a big integer, with 0 read as 2^64.
func endBig(r Range) *big.Int {
	if r.End == 0 {
		return new(big.Int).Set(two64)
	}
	return new(big.Int).SetUint64(r.End)
}

func TestSplitBoundaries(t *testing.T) {
	cases := []struct {
		index, count int
		start, end   string
	}{
		{0, 1, "0x0000000000000000", "0x10000000000000000"},
		{0, 2, "0x0000000000000000", "0x8000000000000000"},
		{1, 2, "0x8000000000000000", "0x10000000000000000"},
		{0, 3, "0x0000000000000000", "0x5555555555555555"},
		{1, 3, "0x5555555555555555", "0xaaaaaaaaaaaaaaaa"},
		{2, 3, "0xaaaaaaaaaaaaaaaa", "0x10000000000000000"},
		{3, 4, "0xc000000000000000", "0x10000000000000000"},
		{0, 5, "0x0000000000000000", "0x3333333333333333"},
		{4, 5, "0xcccccccccccccccc", "0x10000000000000000"},
		{1, 7, "0x2492492492492492", "0x4924924924924924"},
		{6, 7, "0xdb6db6db6db6db6d", "0x10000000000000000"},
	}
	for _, c := range cases {
		r, err := Split(c.index, c.count)
		if err != nil {
			t.Fatalf("Split(%d, %d): %v", c.index, c.count, err)
		}
		if r.StartHex() != c.start || r.EndHex() != c.end {
			t.Errorf("Split(%d, %d) = %s, want [%s, %s)", c.index, c.count, r, c.start, c.end)
		}
	}
}

// TestSplitCoversSpace checks, with exact big-integer arithmetic, that the
// shards of a count tile [0, 2^64): no gap, no overlap, last ends at 2^64,
// and sizes differ by at most one.
func TestSplitCoversSpace(t *testing.T) {
	for _, count := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 16, 17, 31, 64, 100, 1000, 65537} {
		next := big.NewInt(0)
		var minSize, maxSize *big.Int
		for i := 0; i < count; i++ {
			r, err := Split(i, count)
			if err != nil {
				t.Fatalf("Split(%d, %d): %v", i, count, err)
			}
			if err := r.Validate(); err != nil {
				t.Fatalf("Split(%d, %d): %v", i, count, err)
			}
			if new(big.Int).SetUint64(r.Start).Cmp(next) != 0 {
				t.Fatalf("count %d: shard %d starts at %s, previous ended at %#x", count, i, r.StartHex(), next)
			}
			// floor(i·2^64/count) exactly.
			want := new(big.Int).Div(new(big.Int).Mul(big.NewInt(int64(i)), two64), big.NewInt(int64(count)))
			if want.Cmp(new(big.Int).SetUint64(r.Start)) != 0 {
				t.Fatalf("count %d: shard %d start %s, want %#x", count, i, r.StartHex(), want)
			}
			size := new(big.Int).Sub(endBig(r), new(big.Int).SetUint64(r.Start))
			if minSize == nil || size.Cmp(minSize) < 0 {
				minSize = size
			}
			if maxSize == nil || size.Cmp(maxSize) > 0 {
				maxSize = size
			}
			next = endBig(r)
			if (i == count-1) != (r.End == 0) {
				t.Fatalf("count %d: shard %d End=%#x; only the last shard may end at 2^64", count, i, r.End)
			}
		}
		if next.Cmp(two64) != 0 {
			t.Fatalf("count %d: last shard ends at %#x, want 2^64", count, next)
		}
		if d := new(big.Int).Sub(maxSize, minSize); d.Cmp(big.NewInt(1)) > 0 {
			t.Fatalf("count %d: shard sizes differ by %s", count, d)
		}
	}
}

func TestSplitBadInput(t *testing.T) {
	cases := []struct {
		index, count int
		want         string
	}{
		{0, 0, "count 0"},
		{0, -2, "count -2"},
		{-1, 3, "index -1"},
		{3, 3, "index 3"},
		{7, 3, "index 7"},
	}
	for _, c := range cases {
		_, err := Split(c.index, c.count)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Split(%d, %d) error = %v, want one naming %q", c.index, c.count, err, c.want)
		}
		if _, err := ForShard(FieldUID, c.index, c.count); err == nil {
			t.Errorf("ForShard(%d, %d): no error", c.index, c.count)
		}
	}
}

// TestSelectorStringMatchesApimachinery builds the expected string with
// apimachinery's own formatter and compares byte for byte.
func TestSelectorStringMatchesApimachinery(t *testing.T) {
	for _, field := range []Field{FieldUID, FieldNamespace} {
		for _, count := range []int{1, 2, 3, 5, 7, 8} {
			for i := 0; i < count; i++ {
				s, err := ForShard(field, i, count)
				if err != nil {
					t.Fatal(err)
				}
				r, _ := Split(i, count)
				want := apisharding.NewSelector(apisharding.ShardRangeRequirement{
					Key: string(field), Start: fmt.Sprintf("0x%016x", r.Start), End: r.EndHex(),
				}).String()
				if s.String() != want {
					t.Errorf("ForShard(%s, %d, %d) = %q, want %q", field, i, count, s.String(), want)
				}
			}
		}
	}
	// Literal check of the canonical form, independent of apimachinery.
	s, _ := ForShard(FieldUID, 1, 2)
	if got, want := s.String(), "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	full, _ := ForShard(FieldNamespace, 0, 1)
	if got, want := full.String(), "shardRange(object.metadata.namespace, '0x0000000000000000', '0x10000000000000000')"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSelectorJoinsRanges(t *testing.T) {
	r := func(i, n int) Range { x, _ := Split(i, n); return x }
	cases := []struct {
		name   string
		ranges []Range
		want   []Range
	}{
		{"adjacent joined", []Range{r(0, 4), r(1, 4)}, []Range{{0, 1 << 63}}},
		{"unsorted adjacent to end", []Range{r(3, 4), r(2, 4)}, []Range{{1 << 63, 0}}},
		{"all of 3 make full", []Range{r(2, 3), r(0, 3), r(1, 3)}, []Range{Full}},
		{"gap kept", []Range{r(0, 4), r(2, 4)}, []Range{r(0, 4), r(2, 4)}},
		{"overlap joined", []Range{{10, 100}, {50, 200}, {200, 300}}, []Range{{10, 300}}},
		{"contained dropped", []Range{{10, 0}, {20, 30}}, []Range{{10, 0}}},
		{"duplicates", []Range{r(1, 3), r(1, 3)}, []Range{r(1, 3)}},
	}
	for _, c := range cases {
		s, err := NewSelector(FieldUID, c.ranges...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := s.Ranges()
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: ranges %v, want %v", c.name, got, c.want)
		}
		var reqs []apisharding.ShardRangeRequirement
		for _, w := range c.want {
			reqs = append(reqs, apisharding.ShardRangeRequirement{Key: string(FieldUID), Start: w.StartHex(), End: w.EndHex()})
		}
		if want := apisharding.NewSelector(reqs...).String(); s.String() != want {
			t.Errorf("%s: %q, want %q", c.name, s.String(), want)
		}
	}
	s, _ := NewSelector(FieldUID, r(0, 4), r(2, 4))
	want := "shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') || shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')"
	if s.String() != want {
		t.Errorf("got %q, want %q", s.String(), want)
	}
}

func TestSelectorBadInput(t *testing.T) {
	if _, err := NewSelector(FieldUID); err == nil || !strings.Contains(err.Error(), "at least one range") {
		t.Errorf("no ranges: %v", err)
	}
	if _, err := NewSelector("metadata.uid", Full); err == nil || !strings.Contains(err.Error(), `"metadata.uid"`) {
		t.Errorf("bad field: %v", err)
	}
	if _, err := NewSelector(FieldUID, Range{Start: 5, End: 5}); err == nil || !strings.Contains(err.Error(), "0x0000000000000005") {
		t.Errorf("empty range: %v", err)
	}
	if _, err := NewSelector(FieldUID, Range{Start: 9, End: 5}); err == nil {
		t.Error("inverted range accepted")
	}
	var zero Selector
	if zero.Matches(&corev1.Pod{}) {
		t.Error("zero selector matched")
	}
}

func TestBoundFormat(t *testing.T) {
	for _, r := range []Range{Full, {Start: 1, End: 2}, {Start: 0xabcdef, End: 0}, {Start: 1<<64 - 2, End: 1<<64 - 1}} {
		for _, b := range []string{r.StartHex(), r.EndHex()} {
			if b == EndOfSpace {
				continue
			}
			if len(b) != 18 || !strings.HasPrefix(b, "0x") || strings.ToLower(b) != b {
				t.Errorf("bound %q: want 0x and 16 lowercase hex digits", b)
			}
		}
	}
	if got := (Range{Start: 0xABCDEF}).StartHex(); got != "0x0000000000abcdef" {
		t.Errorf("StartHex = %q", got)
	}
}

func TestHashMatchesApimachinery(t *testing.T) {
	for _, v := range []string{"", "default", "kube-system", "0b5c0d9e-5e66-4c1b-9f5a-3b9c1b1c0e11"} {
		if got, want := fmt.Sprintf("%016x", Hash(v)), apisharding.HashField(v); got != want {
			t.Errorf("Hash(%q) = %s, want %s", v, got, want)
		}
	}
}

// TestMatchesForms checks every object form an informer hands out, against
// the range arithmetic and apimachinery's selector.
func TestMatchesForms(t *testing.T) {
	const count = 3
	sels := make([]Selector, count)
	for i := range sels {
		sels[i], _ = ForShard(FieldUID, i, count)
	}
	nsSel, _ := ForShard(FieldNamespace, 1, count)
	for n := 0; n < 300; n++ {
		uid := types.UID(fmt.Sprintf("uid-%d", n))
		ns := fmt.Sprintf("ns-%d", n%17)
		om := metav1.ObjectMeta{Name: fmt.Sprintf("p%d", n), Namespace: ns, UID: uid}
		pod := &corev1.Pod{ObjectMeta: om}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Pod")
		u.SetName(om.Name)
		u.SetNamespace(ns)
		u.SetUID(uid)
		pom := &metav1.PartialObjectMetadata{ObjectMeta: om}
		forms := []interface{}{pod, u, pom,
			cache.DeletedFinalStateUnknown{Key: ns + "/" + om.Name, Obj: pod},
			&cache.DeletedFinalStateUnknown{Key: ns + "/" + om.Name, Obj: u}}
		owners := 0
		for i, s := range sels {
			want := s.ContainsHash(Hash(string(uid)))
			r, _ := Split(i, count)
			if want != r.Contains(Hash(string(uid))) {
				t.Fatalf("ContainsHash and Range.Contains disagree")
			}
			apiWant, err := apisharding.NewSelector(s.Requirements()...).Matches(pod)
			if err != nil || apiWant != want {
				t.Fatalf("apimachinery says %v (%v), we say %v", apiWant, err, want)
			}
			if want {
				owners++
			}
			for _, f := range forms {
				if got := s.Matches(f); got != want {
					t.Fatalf("shard %d Matches(%T %s) = %v, want %v", i, f, uid, got, want)
				}
			}
		}
		if owners != 1 {
			t.Fatalf("%s owned by %d shards", uid, owners)
		}
		if got, want := nsSel.Matches(pom), nsSel.ContainsHash(Hash(ns)); got != want {
			t.Fatalf("namespace selector: %v, want %v", got, want)
		}
	}
}

func TestMatchesNonObjects(t *testing.T) {
	s, _ := ForShard(FieldUID, 0, 1) // matches every object
	for _, obj := range []interface{}{nil, "ns/name", 42, cache.DeletedFinalStateUnknown{Key: "a/b"}, (*corev1.Pod)(nil), (*cache.DeletedFinalStateUnknown)(nil)} {
		if s.Matches(obj) {
			t.Errorf("Matches(%#v) = true", obj)
		}
		if _, err := s.MatchesErr(obj); err == nil {
			t.Errorf("MatchesErr(%#v): no error", obj)
		}
	}
	if !s.Matches(&corev1.Pod{}) {
		t.Error("full range did not match a pod")
	}
}

func TestTweakListOptions(t *testing.T) {
	s, _ := ForShard(FieldUID, 2, 3)
	opts := metav1.ListOptions{LabelSelector: "a=b"}
	s.TweakListOptions(&opts)
	if opts.ShardSelector != s.String() || opts.LabelSelector != "a=b" {
		t.Errorf("options %+v", opts)
	}
}
