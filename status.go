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

package informers

import (
	"fmt"
	"slices"

	"github.com/kubeinformers/informers/internal/informer"
)

// This file reports on the factory's informers without making a request:
// Ready, SyncStatus and Notices, from the hooks of each informer
// (internal/informer).

// SyncStatus reports, for every informer Start has run, whether it has
// synced (see [Factory.WaitForCacheSyncWithContext] for what that means).
// Unlike WaitForCacheSync's map it tells resources of the same Go type
// apart, such as two custom resources.
func (f *sharedInformerFactory) SyncStatus() map[InformerID]bool {
	started := f.started()
	out := make(map[InformerID]bool, len(started))
	for _, e := range started {
		out[e.id] = e.informer.HasSynced() && !e.hooks.Absent()
	}
	return out
}

// MemoryStatus is what one informer's cache holds, for
// [Factory.MemoryStatus].
type MemoryStatus struct {
	Objects int // objects in the cache
	// Bytes estimates the heap the cache retains: Objects times the bytes
	// per object, sampled as objects enter the cache after every
	// transform, store overhead included (metric kubeinformers_informer_bytes).
	Bytes   int64
	Budget  int64 // the informer's memory budget; 0 means none
	Stopped error // why the informer was stopped, if it was
}

// MemoryStatus reports each started informer's objects and estimated heap.
func (f *sharedInformerFactory) MemoryStatus() map[InformerID]MemoryStatus {
	started := f.started()
	out := make(map[InformerID]MemoryStatus, len(started))
	for _, e := range started {
		n, b := informer.Memory(e.informer, e.hooks, e.base != nil) // internal/informer/memory.go
		out[e.id] = MemoryStatus{Objects: n, Bytes: b, Budget: e.hooks.Budget.Limit(), Stopped: e.hooks.Stopped()}
	}
	return out
}

// Ready returns nil when every informer Start has run has synced and its
// last list or watch succeeded. Otherwise it returns one error that names
// each informer that is not ready with the last error it got, such as
//
//	informers not ready: pods (v1): not synced: pods is forbidden: User "x" cannot list resource "pods" ...
//
// An informer that an invalid option keeps from running is named with the
// option's error; one whose watch-list stream is still sending its
// initial events, with the stream's progress ("watch-list stream: 2
// objects received, no end bookmark for 8 s"; see [ListMode] for a stream
// that stalls). Ready makes no request and takes no lock that an
// informer holds, so it can back a /readyz endpoint; see the example of
// [Factory].
func (f *sharedInformerFactory) Ready() error {
	return informer.Ready(f.startedInformers()) // internal/informer/status.go
}

// Notices returns what an operator should know about the factory's
// informers that does not make them unready, such as a server that ignored
// the shard selector (the informers then filter on the client). Each
// informer reports a condition once.
func (f *sharedInformerFactory) Notices() []string {
	f.lock.Lock()
	defer f.lock.Unlock()
	var out []string
	for _, e := range f.all() {
		for _, msg := range e.hooks.Notices() {
			out = append(out, fmt.Sprintf("%s: %s", e.id, msg))
		}
	}
	out = append(out, f.unservedOptions()...)
	if note := f.memoryPool.Notice(); note != "" {
		out = append(out, note) // WithMemoryBudgetFraction without a limit
	}
	slices.Sort(out)
	return out
}
