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
)

// Meter estimates the heap one informer's cache retains, from the objects
// it observes as they enter the informer (after every transform). It is
// safe for concurrent use; its zero value is not ready, use NewMeter.
type Meter struct {
	// item is the store's bytes per object beside the object itself,
	// without its key (items map slot and index set slots).
	item int64

	observed atomic.Uint64
	per      atomic.Int64

	mu      sync.Mutex
	samples int64
	mean    float64
}

// Sampling: every object of the first sampleAll, then one in sampleEvery,
// so that the walk costs a small fraction of decoding an object. The mean
// over samples is cumulative up to window samples, then moving (a new
// sample weighs 1/window), so that it follows a cache whose objects
// change.
const (
	sampleAll   = 64
	sampleEvery = 32
	window      = 1024
)

// NewMeter returns the meter of an informer whose store has indexes
// indexers (the namespace index included).
func NewMeter(indexes int) *Meter {
	return &Meter{item: itemSlot + int64(indexes)*setSlot}
}

// The store's bytes per object of a large cache: its slot in the items
// map (map[string]any) and in one index's set (map[string]struct{}).
var (
	itemSlot = perEntry(reflect.TypeFor[string](), reflect.TypeFor[any]())
	setSlot  = perEntry(reflect.TypeFor[string](), reflect.TypeFor[struct{}]())
)

func perEntry(key, elem reflect.Type) int64 {
	const n = 1 << 16
	return MapBytes(n, key, elem) / n
}

// Observe takes obj, an object entering the informer's cache, as a
// sample when its turn comes. A nil obj is not counted; a nil Meter does
// nothing.
func (m *Meter) Observe(obj any) {
	if m == nil || obj == nil {
		return
	}
	i := m.observed.Add(1)
	if i > sampleAll && i%sampleEvery != 0 {
		return
	}
	b := float64(Of(obj) + m.item + key(obj))
	m.mu.Lock()
	m.samples++
	w := float64(m.samples)
	if w > window {
		w = window
	}
	m.mean += (b - m.mean) / w
	m.per.Store(int64(m.mean + 0.5))
	m.mu.Unlock()
}

// key is the heap bytes of obj's key in the store: "namespace/name" is
// built for a namespaced object; a cluster-scoped one's key is its name.
func key(obj any) int64 {
	o, ok := obj.(interface {
		GetNamespace() string
		GetName() string
	})
	if !ok {
		return 0
	}
	ns := o.GetNamespace()
	if ns == "" {
		return 0
	}
	return Alloc(uintptr(len(ns)+1+len(o.GetName())), true)
}

// Observed returns the number of objects observed so far.
func (m *Meter) Observed() uint64 {
	if m == nil {
		return 0
	}
	return m.observed.Load()
}

// PerObject returns the estimated heap bytes per cached object, the
// store's overhead included; 0 before the first observation, and for a
// nil Meter.
func (m *Meter) PerObject() int64 {
	if m == nil {
		return 0
	}
	return m.per.Load()
}

// Bytes returns the estimate for a cache of n objects: n × PerObject.
func (m *Meter) Bytes(n int) int64 { return int64(n) * m.PerObject() }

// Transform returns transform (nil: none) followed by Observe: the last
// step of an informer's transform, so that each object is observed as
// the cache will hold it.
func (m *Meter) Transform(transform func(any) (any, error)) func(any) (any, error) {
	return func(obj any) (any, error) {
		if transform != nil {
			var err error
			if obj, err = transform(obj); err != nil {
				return obj, err
			}
		}
		m.Observe(obj)
		return obj, nil
	}
}
