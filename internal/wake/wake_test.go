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

package wake

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// closed reports, without waiting, whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestBroadcast: Broadcast closes the channels Next returned before it,
// and only those; with no waiter it does nothing.
func TestBroadcast(t *testing.T) {
	var s Signal
	s.Broadcast() // no waiter: nothing to close
	a, b := s.Next(), s.Next()
	if a != b {
		t.Error("two Next without a Broadcast between them returned two channels")
	}
	if closed(a) {
		t.Fatal("Next's channel is closed before any Broadcast")
	}
	s.Broadcast()
	if !closed(a) {
		t.Fatal("Broadcast left Next's channel open")
	}
	c := s.Next()
	if closed(c) {
		t.Fatal("the channel taken after a Broadcast is already closed")
	}
	s.Broadcast()
	s.Broadcast() // nothing left to close
	if !closed(c) {
		t.Fatal("the second Broadcast left Next's channel open")
	}
}

// TestBroadcastWithoutWaitersAllocatesNothing: a change no one waits for
// costs a lock, which is what a per-event caller (internal/rvwait) needs.
func TestBroadcastWithoutWaitersAllocatesNothing(t *testing.T) {
	var s Signal
	if n := testing.AllocsPerRun(100, s.Broadcast); n != 0 {
		t.Errorf("Broadcast without waiters allocates %v times", n)
	}
}

// TestNoWakeUpLost runs waiters that take the channel, look at a counter
// and wait, against a writer that advances the counter and broadcasts
// after each step: every waiter sees the last value, none sleeps through
// it (the test would time out).
func TestNoWakeUpLost(t *testing.T) {
	const waiters, steps = 8, 2000
	var (
		s Signal
		n atomic.Int64
	)
	var wg sync.WaitGroup
	seen := make([]int64, waiters)
	for i := range waiters {
		wg.Go(func() {
			for {
				ch := s.Next()
				if v := n.Load(); v == steps {
					seen[i] = v
					return
				}
				select {
				case <-ch:
				case <-time.After(30 * time.Second):
					t.Errorf("waiter %d: no wake-up at %d of %d", i, n.Load(), steps)
					return
				}
			}
		})
	}
	for range steps {
		n.Add(1)
		s.Broadcast()
	}
	wg.Wait()
	for i, v := range seen {
		if v != steps && !t.Failed() {
			t.Errorf("waiter %d saw %d, want %d", i, v, steps)
		}
	}
}
