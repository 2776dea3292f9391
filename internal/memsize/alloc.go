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

import "reflect"

// This file is the Go allocator's arithmetic (Go 1.24 and later): size
// classes, the tiny allocator, malloc headers, and Swiss-table maps.

// sizeClasses are the runtime's small object size classes
// (internal/runtime/gc/sizeclasses.go).
var sizeClasses = [...]uint16{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

const (
	maxSmallSize = 32768
	tinySize     = 16
	pageSize     = 8192
	// mallocHeader is the header a pointerful object larger than
	// minSizeForMallocHeader carries inside its allocation.
	mallocHeader           = 8
	minSizeForMallocHeader = 512
)

// Alloc returns the bytes the heap holds for an allocation of size bytes;
// noscan is whether the allocated type holds no pointers.
func Alloc(size uintptr, noscan bool) int64 {
	switch {
	case size == 0:
		return 0
	case noscan && size < tinySize:
		return tiny(size)
	}
	if !noscan && size > minSizeForMallocHeader {
		size += mallocHeader
	}
	if size > maxSmallSize {
		return int64((size + pageSize - 1) / pageSize * pageSize)
	}
	lo, hi := 0, len(sizeClasses)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if uintptr(sizeClasses[mid]) >= size {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return int64(sizeClasses[lo])
}

// tiny is what an allocation below 16 bytes without pointers costs in the
// tiny allocator, which packs such allocations into 16-byte blocks, each
// aligned to its size's alignment. A block lives as long as any
// allocation in it does; those of a cached object share blocks with the
// garbage of its decoding, so a cached tiny allocation holds its aligned
// size plus, on average, part of the rest of its block (tinySlack, measured
// by the package's tests).
func tiny(size uintptr) int64 {
	align := uintptr(1)
	switch {
	case size&7 == 0:
		align = 8
	case size&3 == 0:
		align = 4
	case size&1 == 0:
		align = 2
	}
	aligned := (size + align - 1) / align * align
	return int64(aligned) + int64(float64(tinySize-aligned)*tinySlack)
}

// tinySlack is the share of the rest of a tiny block that a cached tiny
// allocation holds on average.
const tinySlack = 0.15

// Swiss-table geometry (internal/runtime/maps): 8 slots and a control
// word per group; a small map (at most 8 entries, ever) is one group; a
// larger one is a directory of tables of at most 1024 slots, each grown
// at 7/8 load by doubling, and split in two past 1024.
const (
	groupSlots       = 8
	maxTableCapacity = 1024
	mapHeader        = 48 // internal/runtime/maps.Map
	tableHeader      = 32 // internal/runtime/maps.table
	maxIndirect      = 128
	// splitLoad is the mean load of the tables of a map past one full
	// table: tables split at 7/8 and start again at 7/16.
	splitLoad = 0.656
)

// MapBytes returns the heap bytes of a map of n entries of key and elem
// types, grown by insertion, without what its keys and values point to.
func MapBytes(n int, key, elem reflect.Type) int64 {
	ks, es := key.Size(), elem.Size()
	var indirect int64
	if ks > maxIndirect {
		indirect += int64(n) * Alloc(ks, !hasPointers(key))
		ks = 8
	}
	if es > maxIndirect {
		indirect += int64(n) * Alloc(es, !hasPointers(elem))
		es = 8
	}
	slot := slotSize(ks, es, key, elem)
	group := 8 + groupSlots*slot
	noscan := !hasPointers(key) && !hasPointers(elem)
	b := int64(Alloc(mapHeader, false)) + indirect
	switch {
	case n == 0:
		return b
	case n <= groupSlots:
		return b + Alloc(group, noscan)
	}
	capacity := uintptr(2 * groupSlots)
	for capacity < maxTableCapacity && uintptr(n) > capacity*7/8 {
		capacity *= 2
	}
	if uintptr(n) <= capacity*7/8 {
		return b + Alloc(8, false) + Alloc(tableHeader, false) + Alloc(capacity/groupSlots*group, noscan)
	}
	// Past one full table: on average splitLoad of each table's slots
	// are used.
	tables := float64(n) / (maxTableCapacity * splitLoad)
	perTable := Alloc(tableHeader, false) + Alloc(maxTableCapacity/groupSlots*group, noscan)
	return b + Alloc(uintptr(8*nextPow2(int(tables+1))), false) + int64(tables*float64(perTable))
}

// slotSize is the size of one key/elem slot, with the elem aligned.
func slotSize(ks, es uintptr, key, elem reflect.Type) uintptr {
	align := uintptr(elem.Align())
	if es == 8 && elem.Size() > maxIndirect {
		align = 8
	}
	off := (ks + align - 1) / align * align
	size := off + es
	a := uintptr(key.Align())
	if align > a {
		a = align
	}
	return (size + a - 1) / a * a
}

func nextPow2(n int) int {
	p := 1
	for p < n {
		p *= 2
	}
	return p
}
