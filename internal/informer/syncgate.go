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

package informer

import (
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// syncGate opens once the first watch of each of an informer's namespaces
// has returned. A watch after the initial list that fails in a way a retry
// will not fix (forbidden, unauthorized, not found, bad request) is
// recorded, so that WaitForCacheSync reports it instead of waiting for
// ever; a later watch that succeeds still opens the gate. A watch-list
// stream stands in for the initial list: when it fails, client-go falls
// back to a LIST, and an informer that cannot list is waited for, as in
// client-go.
type syncGate struct {
	open chan struct{}

	mu       sync.Mutex
	pending  map[string]bool
	failed   error
	failedCh chan struct{}
}

func newSyncGate(namespaces []string) *syncGate {
	g := &syncGate{open: make(chan struct{}), pending: make(map[string]bool, len(namespaces)), failedCh: make(chan struct{})}
	for _, ns := range namespaces {
		g.pending[ns] = true
	}
	return g
}

// watched returns the listwatch.Config.Watched hook of one namespace.
func (g *syncGate) watched(namespace string) func(error, bool) {
	return func(err error, stream bool) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.pending[namespace] {
			return
		}
		if err != nil {
			if g.failed == nil && !stream && terminal(err) {
				g.failed = err
				close(g.failedCh)
			}
			return
		}
		delete(g.pending, namespace)
		if len(g.pending) == 0 {
			close(g.open)
		}
	}
}

func (g *syncGate) isOpen() bool {
	select {
	case <-g.open:
		return true
	default:
		return false
	}
}

// failure is the terminal error of a first watch while the gate is shut.
func (g *syncGate) failure() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) == 0 {
		return nil
	}
	return g.failed
}

// terminal reports an error that the reflector's retries will not fix
// without someone changing the cluster (RBAC, the resource).
func terminal(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsBadRequest(err) || apierrors.IsInvalid(err)
}

// add makes a gate that has not opened wait for namespace's first watch
// too.
func (g *syncGate) add(namespace string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.isOpen() {
		g.pending[namespace] = true
	}
}

// remove stops waiting for namespace's first watch; the gate opens if it
// was the last one pending.
func (g *syncGate) remove(namespace string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.pending[namespace] {
		return
	}
	delete(g.pending, namespace)
	if len(g.pending) == 0 {
		close(g.open)
	}
}
