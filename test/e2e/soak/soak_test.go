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

package main

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"weak"
)

// TestReplaceOldestLetsTheDepartedGo: after a membership change the
// replica that left is unreachable, and the others keep their order. The
// replicas are appended one by one as the soak starts them, so the slice
// has room for one more: reslicing it would keep the departed one in its
// array.
func TestReplaceOldestLetsTheDepartedGo(t *testing.T) {
	var replicas []*replica
	for _, id := range []string{"replica-1", "replica-2", "replica-3"} {
		replicas = append(replicas, &replica{id: id})
	}
	for i, next := range []string{"replica-4", "replica-5", "replica-6"} {
		departed := weak.Make(replicas[0])
		replicas = replaceOldest(replicas, &replica{id: next})
		runtime.GC()
		if departed.Value() != nil {
			t.Errorf("change %d: the departed replica is still reachable", i+1)
		}
		var ids []string
		for _, r := range replicas {
			ids = append(ids, r.id)
		}
		if want := []string{fmt.Sprintf("replica-%d", i+2), fmt.Sprintf("replica-%d", i+3), next}; !slices.Equal(ids, want) {
			t.Errorf("change %d: replicas %v, want %v", i+1, ids, want)
		}
	}
}
