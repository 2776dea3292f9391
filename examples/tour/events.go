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
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// event is one call of an event handler.
type event struct {
	kind, verb, key, detail string
}

func (e event) String() string {
	return strings.TrimRight(fmt.Sprintf("%-9s %-8s %-30s %s", e.kind, e.verb, e.key, e.detail), " ")
}

// kindOrder is the order events are printed in. Each informer delivers
// its own events in order, but two informers race each other, so events
// are grouped by kind for a stable output.
var kindOrder = []string{"pod", "configmap"}

// recorder collects what the event handlers are called with. Handlers run
// on the informers' goroutines, so it locks.
type recorder struct {
	mu      sync.Mutex
	live    bool
	initial map[string]int // adds per kind before goLive
	events  []event        // events after goLive
	changed chan struct{}  // signalled after every recorded event
}

func newRecorder() *recorder {
	return &recorder{initial: map[string]int{}, changed: make(chan struct{}, 1)}
}

func (r *recorder) add(kind, verb, key, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.live {
		if verb == "added" {
			r.initial[kind]++
		}
		return
	}
	r.events = append(r.events, event{kind, verb, key, detail})
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// goLive ends the initial list: from now on events are recorded one by
// one. It returns the number of adds each kind has had so far.
func (r *recorder) goLive() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live = true
	return maps.Clone(r.initial)
}

// waitFor waits until n events have been recorded, or timeout, and returns
// the events grouped by kind.
func (r *recorder) waitFor(ctx context.Context, n int, timeout time.Duration) ([]event, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		r.mu.Lock()
		events := slices.Clone(r.events)
		r.mu.Unlock()
		slices.SortStableFunc(events, func(a, b event) int {
			return slices.Index(kindOrder, a.kind) - slices.Index(kindOrder, b.kind)
		})
		if len(events) >= n {
			return events, nil
		}
		select {
		case <-r.changed:
		case <-timer.C:
			return events, fmt.Errorf("got %d of %d events within %v", len(events), n, timeout)
		case <-ctx.Done():
			return events, context.Cause(ctx)
		}
	}
}
