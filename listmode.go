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

	"github.com/kubeinformers/informers/internal/listwatch"
)

// ListMode is how an informer gets its initial state, and its state again
// after a watch ends for good: through a watch-list stream, or a LIST.
// Set it factory-wide with [WithListMode], per resource with
// [ResourceOptions].ListMode; it applies to every form (typed, dynamic,
// metadata), with selectors, sharding and several namespaces (one request
// per namespace, each in the mode).
//
// The trade-off, measured in BENCHMARKS.md: the stream is the gentlest on
// the API server (it sends objects from its watch cache one by one instead
// of building a whole response); a LIST syncs with the least CPU. With a
// lean transform ([WithLeanMemory]), [ListModeConsistentList] has the
// lowest peak memory (each page is made lean as it arrives), the stream
// comes next (each object is, but the garbage collector lets the heap grow
// to twice the lean cache while it fills), and [ListModeList] gains
// nothing at the peak (the whole response is decoded at once). On
// consistency: the stream and
// [ListModeConsistentList] are consistent reads, as if served from etcd
// at the moment of the request; [ListModeList] asks for
// resourceVersion=0, which the API server may answer from its watch cache
// slightly stale. Either way the informer then watches from the state it
// got, so it catches up.
//
// client-go decides between stream and LIST per process, with its
// WatchListClient feature gate (on by default in v0.37; the environment
// variable KUBE_FEATURE_WatchListClient=false turns it off). A list mode
// can turn the stream off for one informer, but cannot turn it on where
// the gate is off: [ListModeStream] then lists, as client-go does, and
// [Factory.Notices] says so once for the informer. So does a stream the
// server refuses (an older server), after which client-go lists too.
//
// A stream that stalls falls back too: one that sends neither an object
// nor its end bookmark (the "k8s.io/initial-events-end" bookmark, which
// some proxies drop) for 10 s is abandoned, where client-go would wait
// for the server to time it out, minutes later. The informer then lists
// with a consistent LIST, watches, and lists for every later initial sync
// of its life (a new informer, after [Factory.RemoveInformer], tries the
// stream again). [Factory.Notices] and one log line name the resource;
// while the informer waits, [Factory.Ready] names the stream, e.g.
// "pods (v1): not synced: watch-list stream: 2 objects received, no end
// bookmark for 8 s". docs/reliability.md says why 10 s.
//
// Transforms ([WithTransform], [ResourceOptions].Transform, then
// [WithLeanMemory]'s) run exactly once on each object, in every mode: in a
// LIST each page is transformed as it arrives, so that its full objects
// are garbage before the next page is decoded, and the informer passes
// those objects on; in a stream, client-go v0.37 transforms each initial
// object into a temporary store and again when it hands them to its FIFO,
// and the second time is skipped. (client-go alone requires a transform
// to be idempotent for that reason.) A transform that fails, or that
// returns another type than the list's items, runs again in the informer.
//
// Informers built by InformerFor's own newFunc do not go through this
// module's list/watch and keep client-go's choice. Calling SetTransform
// on a factory's informer replaces the factory's transform, for a LIST's
// pages too: they then reach the new transform whole.
type ListMode string

const (
	// ListModeAuto is the default: client-go's choice, the watch-list
	// stream when the WatchListClient gate is on (the default), else
	// ListModeList. An informer whose cache is lean ([WithLeanMemory])
	// or metadata-only ([Factory.ForMetadata]) falls back to
	// ListModeConsistentList instead when it cannot stream (the gate
	// off, a server or client without the stream), so that its peak
	// memory follows its transformed pages, not one whole
	// resourceVersion=0 response; [Factory.Notices] says so once for
	// the informer.
	ListModeAuto ListMode = ""
	// ListModeStream asks for the watch-list stream (a watch with
	// sendInitialEvents), falling back to ListModeList where the gate is
	// off or the server refuses it, with a notice.
	ListModeStream ListMode = "Stream"
	// ListModeList is client-go's LIST: a first request with
	// resourceVersion=0 and a limit of 500, which the API server may
	// serve from its watch cache, possibly slightly stale, and then in one
	// page (it ignores the limit with resourceVersion=0). The cheapest in
	// CPU; its peak memory holds the whole response, transformed or not.
	ListModeList ListMode = "List"
	// ListModeConsistentList is a paged LIST (500 objects a page) whose
	// first request has no resourceVersion: a consistent read. With a
	// transform (WithTransform, WithLeanMemory), each page is transformed
	// as it arrives, so the peak follows the transformed objects: the mode
	// for a lean informer that lists.
	ListModeConsistentList ListMode = "ConsistentList"
)

// listModes maps each known mode to the list/watch's.
var listModes = map[ListMode]listwatch.Mode{
	ListModeAuto:           listwatch.ModeAuto,
	ListModeStream:         listwatch.ModeStream,
	ListModeList:           listwatch.ModeList,
	ListModeConsistentList: listwatch.ModeConsistentList,
}

// checkListMode says what is wrong with a mode, or returns nil.
func checkListMode(mode ListMode) error {
	if _, ok := listModes[mode]; !ok {
		return fmt.Errorf("unknown list mode %q (known: %q, %q, %q, %q)", mode, ListModeAuto, ListModeStream, ListModeList, ListModeConsistentList)
	}
	return nil
}

// WithListMode sets how every informer of the factory gets its initial
// state; [ResourceOptions].ListMode overrides it per resource. An unknown
// mode, or WithListMode given twice with different modes, is an error
// from [New] that names both; under the client-go compatible
// constructors it is logged and the informers keep client-go's choice.
func WithListMode(mode ListMode) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		if err := checkListMode(mode); err != nil {
			factory.invalid(fmt.Errorf("WithListMode(%q): %w", mode, err))
			return factory
		}
		if factory.listModeSet && factory.listMode != mode {
			factory.invalid(fmt.Errorf("WithListMode(%q) and WithListMode(%q) both given: use one", factory.listMode, mode))
			return factory
		}
		factory.listMode, factory.listModeSet = mode, true
		return factory
	}
}
