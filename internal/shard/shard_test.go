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

package shard

import (
	"sync/atomic"
	"testing"

	"github.com/kubeinformers/informers/sharding"
)

// TestShardSourceEdges: a membership source ignores an invalid
// assignment, ends once, and an informer of an ended source neither
// filters nor probes.
func TestShardSourceEdges(t *testing.T) {
	src := Membership(sharding.FieldUID)
	src.Set([]sharding.Range{{Start: 5, End: 5}})
	if src.Selector() != nil {
		t.Error("an invalid assignment was taken")
	}
	src.end()
	gen := src.gen
	src.end()
	if src.gen != gen {
		t.Error("a second end changed the source")
	}
	is := NewInformer("pods (v1)", new(atomic.Pointer[string]), src)
	if sh := is.Current(); sh.Probe != 0 || sh.Keep != nil || sh.Tweak == nil {
		t.Errorf("an ended source: probe %v, keep set %v: want no probe, no keep, a tweak", sh.Probe, sh.Keep != nil)
	}
	if !is.Following() {
		t.Error("an informer of a membership source does not follow it")
	}
	is.Start()
	if err := is.SetSelector(nil); err == nil {
		t.Error("SetSelector after start succeeded")
	}
}
