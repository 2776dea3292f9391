//go:build kubeinformers_next

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

package sharding_test

import (
	"testing"

	apisharding "k8s.io/apimachinery/pkg/sharding"

	"github.com/kubeinformers/informers/sharding"
)

// This file needs apimachinery v0.38 or later (NewShardRangeSelector): the
// next lane (hack/next.sh) runs it with -tags kubeinformers_next.

// TestForShardIsNewShardRangeSelector: the selector of WithShard(field, i, n),
// sharding.ForShard, is byte for byte the one of
// apimachinery's NewShardRangeSelector, ranges and string, for every shard
// of every count up to 64 and a few large ones, on both keys.
func TestForShardIsNewShardRangeSelector(t *testing.T) {
	counts := []int{}
	for n := 1; n <= 64; n++ {
		counts = append(counts, n)
	}
	counts = append(counts, 100, 1000, 1<<20)
	for _, field := range []sharding.Field{sharding.FieldUID, sharding.FieldNamespace} {
		for _, n := range counts {
			for _, i := range []int{0, 1, n / 2, n - 2, n - 1} {
				if i < 0 || i >= n {
					continue
				}
				ours, err := sharding.ForShard(field, i, n)
				if err != nil {
					t.Fatalf("ForShard(%s, %d, %d): %v", field, i, n, err)
				}
				up, err := apisharding.NewShardRangeSelector(string(field), i, n)
				if err != nil {
					t.Fatalf("NewShardRangeSelector(%s, %d, %d): %v", field, i, n, err)
				}
				if ours.String() != up.String() {
					t.Errorf("shard %d of %d on %s: ours %q, apimachinery %q", i, n, field, ours.String(), up.String())
				}
				if got := ours.APISelector().String(); got != up.String() {
					t.Errorf("shard %d of %d on %s: APISelector %q, apimachinery %q", i, n, field, got, up.String())
				}
				gr, wr := ours.APISelector().Requirements(), up.Requirements()
				if len(gr) != 1 || len(wr) != 1 || gr[0] != wr[0] {
					t.Errorf("shard %d of %d on %s: requirements %+v, apimachinery %+v", i, n, field, gr, wr)
				}
			}
		}
	}
}
