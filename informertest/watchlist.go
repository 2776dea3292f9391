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

package informertest

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeinformers/informers/internal/settle"
)

// WatchList makes the informers of this module's factories over a fake
// client get their initial state as they do from a server: from a
// watch-list stream (a watch with sendInitialEvents: every object as an
// ADDED event, then a bookmark with the annotation
// "k8s.io/initial-events-end"), which client-go's reflector keeps aside
// until the bookmark and then hands to the informer at once, instead of
// a LIST. client-go's fakes declare that they cannot stream, so without
// it an informer over a fake always lists.
//
// Make it with [ServeWatchList] before the factory makes its informers.
// The stream's start is made of the fake's own LIST (its objects, and the
// bookmark at the list's resource version), then the watch of the fake
// from that resource version goes on, as a server's stream does: the
// fake's Actions record a list and a watch where a server would have got
// one watch. Reactors that make the fake's list or watch fail, such as
// [Faults], fail the stream.
//
// [WatchList.Stall] leaves the bookmark out, as a proxy that drops it
// does: the factory then abandons the stream after its stall timeout
// ([WatchList.SetStallTimeout]) and lists instead, and Ready, SyncStatus
// and Notices say so. An informer streams only where client-go's
// WatchListClient feature gate is on (the default) and its list mode
// allows it (ListModeAuto or ListModeStream).
type WatchList struct {
	s *settle.Streaming
}

// ServeWatchList makes client serve watch-list streams to the informers
// of this module's factories built over it from now on, and returns the
// handle that stalls them. Calling it again for the same client returns
// a handle to the same setting. It fails if client is not a pointer to
// one of client-go's fake clients (every fake of client-go and client-gen
// is one).
//
// It changes nothing for the informers of a factory over another client,
// nor for a process that never calls it. The setting lasts as long as
// client does.
func ServeWatchList(client FakeClient) (*WatchList, error) {
	s, err := settle.ServeWatchList(client)
	if err != nil {
		return nil, err
	}
	return &WatchList{s: s}, nil
}

// Stall makes the watch-list streams of resource opened from now on send
// their objects but never the bookmark that ends them, as a stream
// through a proxy that drops it. The factory abandons such a stream after
// its stall timeout, and the informer lists (a consistent LIST, then a
// WATCH) for the rest of its life; [Settle] waits for that LIST.
func (w *WatchList) Stall(resource schema.GroupVersionResource) {
	w.s.Stall(resource)
}

// SetStallTimeout sets how long a watch-list stream of the client's
// informers may send nothing before the factory abandons it, in place of
// the 10 s a stream from a server gets: a test of a stall then takes
// that long, not 10 s. It applies to streams opened from now on; 0
// restores the default.
func (w *WatchList) SetStallTimeout(d time.Duration) {
	w.s.SetStallTimeout(d)
}

// WaitStreams returns once n watch-list streams of resource have sent all
// their initial events (and, unless stalled, their bookmark) to the
// informers, or with ctx's error. After it, the factory's Ready names a
// stalled stream that has not been abandoned yet.
func (w *WatchList) WaitStreams(ctx context.Context, resource schema.GroupVersionResource, n int) error {
	return w.s.WaitSent(ctx, resource, n)
}
