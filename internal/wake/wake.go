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

// Package wake wakes every goroutine that waits for a change of some
// state. sync.Cond does the same, but its Wait can be neither cancelled
// nor selected beside a context or a timer; a channel closed at each
// change can. Signal is that channel, made, closed and replaced in one
// place.
//
// A waiter takes the channel with Next, then looks at the state: if what
// it waits for is not there yet, it selects on the channel (and its
// context). Whoever changes the state calls Broadcast after the change.
// Taking the channel before looking is what makes the pair safe: a change
// made between the look and the select has closed the channel already.
package wake

import "sync"

// Signal wakes the goroutines waiting for the next change. Its zero value
// is ready to use; it must not be copied after first use. Its methods may
// be called from any goroutine, with or without a lock of the caller's.
type Signal struct {
	mu sync.Mutex
	// ch is closed by the next Broadcast; nil while no one waits, so that
	// a Broadcast then costs a lock and no allocation.
	ch chan struct{}
}

// Next returns the channel that the next Broadcast closes.
func (s *Signal) Next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Broadcast wakes every goroutine waiting on a channel Next returned
// before it.
func (s *Signal) Broadcast() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
