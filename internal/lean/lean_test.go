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

package lean

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestLeanSharingBounded checks that a sharing table never outgrows
// maxShared, however many distinct values pass.
func TestLeanSharingBounded(t *testing.T) {
	l := New(Config{})
	for i := range maxShared + 10 {
		l.stringMap(map[string]string{"k": fmt.Sprint(i)})
	}
	if n := len(l.stringMaps.m); n == 0 || n > maxShared {
		t.Errorf("the labels table holds %d maps; want 1..%d", n, maxShared)
	}
}

// unencodable is an API-like type whose protobuf encoding fails.
type unencodable struct{ name string }

func (*unencodable) Size() int                                { return 4 }
func (*unencodable) MarshalToSizedBuffer([]byte) (int, error) { return 0, fmt.Errorf("cannot encode") }

// TestLeanShareEdges covers the sharing steps a real Pod rarely reaches: a
// value that cannot be encoded is prepared but never shared, a value stored
// by another informer while this one was prepared wins, and a key too large
// for the buffer pool is shared without keeping its buffer.
func TestLeanShareEdges(t *testing.T) {
	l := New(Config{})
	prepared := 0
	prepare := func(_ *Leaner, v []unencodable) []unencodable { prepared++; return v }
	var slices sharedSet[[]unencodable]
	v := []unencodable{{"a"}}
	if got := shareProtoSlice(l, &slices, v, prepare); &got[0] != &v[0] || prepared != 1 || len(slices.m) != 0 {
		t.Errorf("unencodable slice: prepared %d times, table %v; want it prepared once, returned and not stored", prepared, slices.m)
	}
	var ptrs sharedSet[*unencodable]
	p := &unencodable{"b"}
	if got := shareProtoPtr(l, &ptrs, p, func(_ *Leaner, v *unencodable) *unencodable { prepared++; return v }); got != p || prepared != 2 || len(ptrs.m) != 0 {
		t.Errorf("unencodable pointer: prepared %d times in all, table %v; want it prepared, returned and not stored", prepared, ptrs.m)
	}

	var ints sharedSet[*int]
	mine, theirs := new(int), new(int)
	got := ints.get(l, []byte("k"), mine, func(l *Leaner, v *int) *int {
		ints.get(l, []byte("k"), theirs, keep) // another informer, meanwhile
		return v
	})
	if got != theirs {
		t.Error("a value stored while another was prepared lost: two copies are in use")
	}

	huge := strings.Repeat("x", maxPooledBuf)
	m1, m2 := map[string]string{"k": huge}, map[string]string{"k": strings.Clone(huge)}
	if a, b := l.stringMap(m1), l.stringMap(m2); reflect.ValueOf(a).UnsafePointer() != reflect.ValueOf(b).UnsafePointer() {
		t.Error("maps with a huge value are not shared")
	}
	if b := l.bufs.Get().(*[]byte); cap(*b) > maxPooledBuf {
		t.Errorf("the pool kept a %d-byte buffer; at most %d", cap(*b), maxPooledBuf)
	}
}
