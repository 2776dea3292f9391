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
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubeinformers/informers/internal/settle"
)

// Faults makes a fake client's list and watch requests fail the way a
// server's do, so that a test reaches the code paths production reaches:
// a watch that ends and is resumed, a watch that expires (410 Gone) and
// makes the informer list again, a resource the client may not read (403
// Forbidden) and then may again. The factory's Ready and SyncStatus report
// them as they would on a cluster.
//
// Make it with [NewFaults] right after the client, before the factory
// starts and before adding watch reactors of your own: it serves every
// watch of the client itself (from the client's object tracker, as the
// fake's own reactor does), so that it can end them.
type Faults struct {
	client FakeClient

	mu        sync.Mutex
	watches   map[schema.GroupVersionResource][]watch.Interface
	forbidden map[schema.GroupVersionResource]bool
	// refused counts the requests refused, by resource.
	refused settle.Counts
}

// NewFaults returns the faults of client, none of them active yet.
func NewFaults(client FakeClient) *Faults {
	f := &Faults{
		client:    client,
		watches:   make(map[schema.GroupVersionResource][]watch.Interface),
		forbidden: make(map[schema.GroupVersionResource]bool),
	}
	client.PrependReactor("*", "*", f.react)
	client.PrependWatchReactor("*", f.watch)
	return f
}

// refuse returns the 403 of a request for a forbidden resource, if it is
// forbidden; the caller holds f.mu.
func (f *Faults) refuse(action clienttesting.Action) error {
	gvr := action.GetResource()
	if !f.forbidden[gvr] {
		return nil
	}
	f.refused.Add(gvr)
	return apierrors.NewForbidden(gvr.GroupResource(), "", errors.New("informertest: Faults.Forbid"))
}

func (f *Faults) react(action clienttesting.Action) (bool, runtime.Object, error) {
	if action.GetVerb() != "list" {
		return false, nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refuse(action); err != nil {
		return true, nil, err
	}
	return false, nil, nil
}

func (f *Faults) watch(action clienttesting.Action) (bool, watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refuse(action); err != nil {
		return true, nil, err
	}
	var opts metav1.ListOptions
	if w, ok := action.(clienttesting.WatchActionImpl); ok {
		opts = w.ListOptions
	}
	gvr := action.GetResource()
	w, err := f.client.Tracker().Watch(gvr, action.GetNamespace(), opts)
	if err != nil {
		return true, nil, err
	}
	f.watches[gvr] = append(f.watches[gvr], w)
	return true, w, nil
}

// take returns the open watches of resource and forgets them.
func (f *Faults) take(resource schema.GroupVersionResource) []watch.Interface {
	f.mu.Lock()
	defer f.mu.Unlock()
	ws := f.watches[resource]
	delete(f.watches, resource)
	return ws
}

// errorer is the fake watchers' way to send an error event.
type errorer interface{ Error(runtime.Object) }

// EndWatches ends every open watch of resource, as a server ends a watch
// at its timeout: the informer watches again from the last resource
// version it saw, without listing. It returns how many it ended.
func (f *Faults) EndWatches(resource schema.GroupVersionResource) int {
	ws := f.take(resource)
	for _, w := range ws {
		w.Stop()
	}
	return len(ws)
}

// ExpireWatches sends 410 Gone (Expired) on every open watch of resource,
// as a server does when the watch's resource version was compacted: the
// informer lists again and then watches. It returns how many it expired.
func (f *Faults) ExpireWatches(resource schema.GroupVersionResource) int {
	status := apierrors.NewResourceExpired(fmt.Sprintf("informertest: Faults.ExpireWatches(%v)", resource)).ErrStatus
	return f.fail(resource, &status)
}

// fail sends status as an error event on every open watch of resource.
func (f *Faults) fail(resource schema.GroupVersionResource, status *metav1.Status) int {
	ws := f.take(resource)
	for _, w := range ws {
		if e, ok := w.(errorer); ok {
			e.Error(status)
		} else {
			w.Stop()
		}
	}
	return len(ws)
}

// Forbid makes the list and watch requests for resource fail with 403
// Forbidden until [Faults.Allow], and ends its open watches with that
// error, as a server does once the client may no longer read the
// resource. Writes still succeed, so that a test can change what the
// informer will find when it is allowed again. The informer retries with
// client-go's backoff; [github.com/kubeinformers/informers.Factory.Ready] names the error.
func (f *Faults) Forbid(resource schema.GroupVersionResource) {
	f.mu.Lock()
	f.forbidden[resource] = true
	f.mu.Unlock()
	status := apierrors.NewForbidden(resource.GroupResource(), "", errors.New("informertest: Faults.Forbid")).ErrStatus
	f.fail(resource, &status)
}

// Allow lets the requests for resource through again. The informer's next
// retry succeeds; [Settle] waits for it.
func (f *Faults) Allow(resource schema.GroupVersionResource) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.forbidden, resource)
}

// WaitRefused returns once n list or watch requests for resource have
// been refused by [Faults.Forbid] in all, or with ctx's error. An
// informer makes a request after it has handled the refusal of the one
// before (recorded it for Ready, and backed off), so after the second
// refusal the first is in [github.com/kubeinformers/informers.Factory.Ready].
func (f *Faults) WaitRefused(ctx context.Context, resource schema.GroupVersionResource, n int) error {
	if got, err := f.refused.Wait(ctx, resource, n); err != nil {
		return fmt.Errorf("informertest: %d of %d requests for %v refused: %w", got, n, resource, err)
	}
	return nil
}
