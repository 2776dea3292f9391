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
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestSelectorAccessors: Field, Equal and APISelector say what the selector
// was built from, and the zero Selector is no selector at all.
func TestSelectorAccessors(t *testing.T) {
	first, _ := ForShard(FieldUID, 0, 2)
	second, _ := ForShard(FieldUID, 1, 2)
	byNamespace, _ := ForShard(FieldNamespace, 0, 2)
	r0, _ := Split(0, 4)
	r1, _ := Split(1, 4)
	joined, _ := NewSelector(FieldUID, r1, r0) // [0, 1/2) from two quarters

	if first.Field() != FieldUID || byNamespace.Field() != FieldNamespace {
		t.Errorf("Field: %s and %s, want %s and %s", first.Field(), byNamespace.Field(), FieldUID, FieldNamespace)
	}
	for _, tc := range []struct {
		name string
		a, b Selector
		want bool
	}{
		{"same shard, built twice", first, joined, true},
		{"other shard", first, second, false},
		{"other field", first, byNamespace, false},
		{"zero and zero", Selector{}, Selector{}, true},
		{"zero and a shard", Selector{}, first, false},
	} {
		if got := tc.a.Equal(tc.b); got != tc.want {
			t.Errorf("%s: Equal = %v, want %v", tc.name, got, tc.want)
		}
	}

	api := first.APISelector()
	if api == nil || api.String() != first.String() {
		t.Fatalf("APISelector %v, want one whose String is %q", api, first.String())
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID("uid-1")}}
	if got, err := api.Matches(pod); err != nil || got != first.Matches(pod) {
		t.Errorf("APISelector().Matches = %v, %v; Selector.Matches = %v", got, err, first.Matches(pod))
	}
	// Each call is a copy: a caller cannot change the selector through it.
	if again := first.APISelector(); again == api || again.String() != api.String() {
		t.Errorf("two APISelector calls: %p %q and %p %q; want two equal copies", again, again, api, api)
	}
	if (Selector{}).APISelector() != nil {
		t.Error("the zero Selector's APISelector is not nil")
	}
}

// TestMatchesObjectWithoutMetadata: a runtime.Object that has no object
// metadata (a Status, say) cannot be placed in a shard.
func TestMatchesObjectWithoutMetadata(t *testing.T) {
	s, _ := ForShard(FieldUID, 0, 1) // every hash
	status := &metav1.Status{Status: metav1.StatusFailure}
	if s.Matches(status) {
		t.Error("a Status matched")
	}
}
