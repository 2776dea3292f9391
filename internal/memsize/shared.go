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

package memsize

import (
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"
)

// This file is the registry of allocations that several cached objects
// share: a lean transform's interned strings and shared sub-structures.
// Counted in full in every object that holds them, they would make the
// estimate of a lean cache several times too large; counted as nothing,
// too small where few objects share them. Each is counted as its share:
// its deep size divided by the number of objects that took it.

// Shared is one registered shared allocation.
type Shared struct {
	size int64
	refs atomic.Int64
	// alive is a weak pointer to the allocation: an address freed and
	// reused by an unrelated allocation is not taken for this one.
	alive weak.Pointer[byte]
}

// Ref counts one more object that holds the allocation.
func (s *Shared) Ref() {
	if s != nil {
		s.refs.Add(1)
	}
}

func (s *Shared) share() float64 {
	refs := s.refs.Load()
	if refs < 1 {
		refs = 1
	}
	return float64(s.size) / float64(refs)
}

// registryOverhead is what the registry itself holds per entry (the map
// slot, the Shared and its weak handle), counted in the entry's size:
// without the estimate, it would not exist.
const registryOverhead = 160

var (
	registry   sync.Map // uintptr → *Shared
	registered atomic.Int64
	sweeps     atomic.Int64
)

// Share registers v, a string, map, slice or pointer that cached objects
// are to share, and returns its entry with one reference (the caller's
// object); sharing an allocation already registered returns its entry
// with one more reference. The entry's size is v's deep size (Of) as of
// the first call. Other values return nil, as does an empty or nil one;
// Ref on nil does nothing.
func Share(v any) *Shared {
	rv := reflect.ValueOf(v)
	p := pointerOf(rv)
	if p == nil {
		return nil
	}
	if s := lookup(p); s != nil {
		s.refs.Add(1)
		return s
	}
	s := &Shared{size: deep(rv) + registryOverhead, alive: weak.Make((*byte)(p))}
	s.refs.Store(1)
	if prev, loaded := registry.LoadOrStore(uintptr(p), s); loaded {
		old := prev.(*Shared)
		if old.alive.Value() == (*byte)(p) {
			old.refs.Add(1)
			return old
		}
		registry.Store(uintptr(p), s) // a freed allocation's entry
		return s
	}
	if registered.Add(1)%4096 == 0 {
		sweep()
	}
	return s
}

// lookup returns the live entry registered at p, or nil.
func lookup(p unsafe.Pointer) *Shared {
	e, ok := registry.Load(uintptr(p))
	if !ok {
		return nil
	}
	s := e.(*Shared)
	if s.alive.Value() != (*byte)(p) {
		return nil
	}
	return s
}

// sweep drops the entries of allocations that were freed.
func sweep() {
	sweeps.Add(1)
	registry.Range(func(k, e any) bool {
		s := e.(*Shared)
		if s.alive.Value() == nil {
			if registry.CompareAndDelete(k, e) {
				registered.Add(-1)
			}
		}
		return true
	})
}

// pointerOf is the address of the allocation v refers to, or nil.
func pointerOf(v reflect.Value) unsafe.Pointer {
	switch v.Kind() {
	case reflect.String:
		if v.Len() == 0 {
			return nil
		}
		return unsafe.Pointer(unsafe.StringData(v.String()))
	case reflect.Map, reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return v.UnsafePointer()
	case reflect.Slice:
		if v.IsNil() || v.Cap() == 0 {
			return nil
		}
		return v.UnsafePointer()
	}
	return nil
}

// deep is the heap bytes of the allocation v refers to and what it
// reaches, v itself being held inline elsewhere.
func deep(v reflect.Value) int64 {
	w := walkers.Get().(*walker)
	defer w.release()
	w.shared = registered.Load() > 0
	n := w.value(v)
	return n + int64(w.share)
}
