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

// Package memsize estimates the heap an informer's cache retains: Of
// walks one object graph and counts its allocations as the Go allocator
// holds them, and a Meter turns samples of an informer's objects into
// bytes per cached object, store overhead included.
//
// The estimate is meant to match the live heap after a garbage
// collection, within a few percent for the forms an informer caches
// (typed, lean, projected, metadata-only, unstructured): each allocation
// is rounded up to its size class, small allocations without pointers are
// counted as the tiny allocator packs them, a map is counted as its
// Swiss-table groups, a slice as its capacity, and an allocation shared
// by several objects (a lean transform's interned strings and shared
// sub-structures, registered with Share) as its share.
//
// It never imports the root package.
package memsize

import (
	"math"
	"reflect"
	"sync"
	"time"
	"unsafe"
)

// Of returns the heap bytes obj's object graph retains: the allocation
// obj points to (if obj is a pointer, map or slice) and everything
// reachable from it, each allocation counted once. An allocation
// registered with Share is counted as its share (its size divided by the
// objects that hold it) and not walked. Pointers to time.Location (a
// process-wide value) count nothing.
func Of(obj any) int64 {
	if obj == nil {
		return 0
	}
	w := walkers.Get().(*walker)
	defer w.release()
	w.shared = registered.Load() > 0
	// obj itself sits in an interface: count what the interface's word
	// points to as an allocation.
	n := w.boxed(reflect.ValueOf(obj))
	return n + int64(w.share)
}

var walkers = sync.Pool{New: func() any { return &walker{seen: map[uintptr]struct{}{}} }}

// walker is one walk of an object graph; seen holds the allocations
// counted so far, so that one reached twice is counted once.
type walker struct {
	seen   map[uintptr]struct{}
	shared bool    // the registry of shared allocations is not empty
	share  float64 // the shares of the shared allocations reached
}

func (w *walker) release() {
	clear(w.seen)
	w.share = 0
	walkers.Put(w)
}

// first reports whether the allocation at p has not been counted in this
// walk yet, and records it.
func (w *walker) first(p unsafe.Pointer) bool {
	k := uintptr(p)
	if _, ok := w.seen[k]; ok {
		return false
	}
	w.seen[k] = struct{}{}
	return true
}

// sharedShare reports whether p is a registered shared allocation and, if
// so, adds its share.
func (w *walker) sharedShare(p unsafe.Pointer) bool {
	if !w.shared {
		return false
	}
	s := lookup(p)
	if s == nil {
		return false
	}
	if w.first(p) {
		w.share += s.share()
	}
	return true
}

var locationType = reflect.TypeFor[time.Location]()

// boxed counts v as the value of an interface: the box holding it, if the
// runtime allocates one, and what it points to.
func (w *walker) boxed(v reflect.Value) int64 {
	t := v.Type()
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		// Pointer-shaped: the interface holds the pointer itself.
		return w.value(v)
	case reflect.Bool, reflect.Int8, reflect.Uint8:
		return 0 // the runtime's static values
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Uintptr, reflect.Float64, reflect.Int32, reflect.Uint32, reflect.Int16, reflect.Uint16, reflect.Float32:
		if small(v) {
			return 0 // convT64 and friends use static values below 256
		}
		return Alloc(t.Size(), true)
	case reflect.String:
		if v.Len() == 0 {
			return w.value(v)
		}
	case reflect.Slice:
		if v.IsNil() {
			return 0
		}
	}
	if t.Size() == 0 {
		return 0
	}
	return Alloc(t.Size(), !hasPointers(t)) + w.value(v)
}

// small reports whether a number's bits, read as a uint64, are below 256:
// the runtime boxes those without allocating.
func small(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Int16:
		n := v.Int()
		if v.Type().Size() < 8 {
			n = int64(uint64(n) & (1<<(8*v.Type().Size()) - 1))
		}
		return uint64(n) < 256
	case reflect.Uint, reflect.Uint64, reflect.Uintptr, reflect.Uint32, reflect.Uint16:
		return v.Uint() < 256
	case reflect.Float64:
		return math.Float64bits(v.Float()) < 256
	}
	return false
}

// value counts the allocations v reaches; v itself is held inline by
// whatever contains it.
func (w *walker) value(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.String:
		n := v.Len()
		if n == 0 {
			return 0
		}
		p := unsafe.Pointer(unsafe.StringData(v.String()))
		if w.sharedShare(p) || !w.first(p) {
			return 0
		}
		return Alloc(uintptr(n), true)
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		et := v.Type().Elem()
		if et == locationType {
			return 0
		}
		p := v.UnsafePointer()
		if w.sharedShare(p) || !w.first(p) {
			return 0
		}
		return Alloc(et.Size(), !hasPointers(et)) + w.value(v.Elem())
	case reflect.Slice:
		if v.IsNil() || v.Cap() == 0 {
			return 0
		}
		p := v.UnsafePointer()
		if w.sharedShare(p) || !w.first(p) {
			return 0
		}
		et := v.Type().Elem()
		n := Alloc(uintptr(v.Cap())*et.Size(), !hasPointers(et))
		if hasPointers(et) {
			for i := range v.Len() {
				n += w.value(v.Index(i))
			}
		}
		return n
	case reflect.Array:
		if !hasPointers(v.Type()) {
			return 0
		}
		var n int64
		for i := range v.Len() {
			n += w.value(v.Index(i))
		}
		return n
	case reflect.Struct:
		var n int64
		for _, i := range pointerFields(v.Type()) {
			n += w.value(v.Field(i))
		}
		return n
	case reflect.Interface:
		if v.IsNil() {
			return 0
		}
		return w.boxed(v.Elem())
	case reflect.Map:
		return w.mapValue(v)
	}
	return 0
}

// mapValue counts a map: its Swiss table (mapBytes) and its keys' and
// values' allocations.
func (w *walker) mapValue(v reflect.Value) int64 {
	if v.IsNil() {
		return 0
	}
	p := v.UnsafePointer()
	if w.sharedShare(p) || !w.first(p) {
		return 0
	}
	t := v.Type()
	n := MapBytes(v.Len(), t.Key(), t.Elem())
	// The maps objects hold most often, walked without reflection.
	switch m := v.Interface().(type) {
	case map[string]string:
		for k, e := range m {
			n += w.str(k) + w.str(e)
		}
		return n
	case map[string]any:
		for k, e := range m {
			n += w.str(k)
			if e != nil {
				n += w.boxed(reflect.ValueOf(e))
			}
		}
		return n
	}
	kp, ep := hasPointers(t.Key()), hasPointers(t.Elem())
	if !kp && !ep {
		return n
	}
	key, elem := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
	it := v.MapRange()
	for it.Next() {
		if kp {
			key.SetIterKey(it)
			n += w.value(key)
		}
		if ep {
			elem.SetIterValue(it)
			n += w.value(elem)
		}
	}
	return n
}

func (w *walker) str(s string) int64 {
	if len(s) == 0 {
		return 0
	}
	p := unsafe.Pointer(unsafe.StringData(s))
	if w.sharedShare(p) || !w.first(p) {
		return 0
	}
	return Alloc(uintptr(len(s)), true)
}

// typeInfo caches what the walk needs of a type.
type typeInfo struct {
	pointers bool
	fields   []int // struct fields that hold pointers
}

var types sync.Map // reflect.Type → *typeInfo

func info(t reflect.Type) *typeInfo {
	if ti, ok := types.Load(t); ok {
		return ti.(*typeInfo)
	}
	ti := &typeInfo{}
	switch t.Kind() {
	case reflect.String, reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		ti.pointers = true
	case reflect.Array:
		ti.pointers = t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				ti.fields = append(ti.fields, i)
			}
		}
		ti.pointers = len(ti.fields) > 0
	}
	actual, _ := types.LoadOrStore(t, ti)
	return actual.(*typeInfo)
}

func hasPointers(t reflect.Type) bool    { return info(t).pointers }
func pointerFields(t reflect.Type) []int { return info(t).fields }
