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

// Package readyourwrites is read-your-writes for a controller: [Writes]
// records the writes the controller makes, through any client (typed,
// generated for its own types, dynamic, metadata), and waits before a read
// until a factory's informers reflect them, with
// [informers.Factory.WaitForResourceVersion]. A controller that creates a
// Pod and then lists its Pods through a lister otherwise sees the list
// without it, and creates a second one.
//
// docs/read-your-writes.md in the repository explains when to wait, the
// guarantees and their limits.
package readyourwrites

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/rvwait"
)

// Writes records a controller's writes and waits for a factory's
// informers to reflect them:
//
//	pod, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
//	writes.Wrote(podsResource, pod, err)
//	...
//	if err := writes.Wait(ctx, podsResource, ns); err != nil { ... }
//	pods, err := podLister.Pods(ns).List(selector) // holds every write recorded before Wait
//
// Record every write whose effect a later read of the same resource must
// see: [Writes.Wrote] after a create, update, patch or apply (the object
// returned carries the version), [Writes.Deleted] after a delete (a
// DELETE often returns no version, so the wait is for the object to leave
// the cache, or to be marked for deletion). A controller that tolerates a
// stale read, such as one that only reads what it then writes with an
// optimistic-concurrency update, should not wait: the conflict already
// tells it.
//
// Writes are recorded per resource and namespace; a wait covers every
// write recorded before it, whoever recorded it. A Writes is safe for
// concurrent use; one per controller (or per factory) is enough. Writes
// whose client returned no version (client-go's fakes) record nothing, so
// that code under unit tests with fakes runs as it would without.
type Writes struct {
	factory informers.Factory

	mu        sync.Mutex
	versions  map[writeKey]string
	deletions map[deletionKey]types.UID
}

type writeKey struct {
	resource  schema.GroupVersionResource
	namespace string
}

type deletionKey struct {
	writeKey
	name string
}

// New returns a Writes whose waits are on factory's informers.
func New(factory informers.Factory) *Writes {
	return &Writes{factory: factory, versions: map[writeKey]string{}, deletions: map[deletionKey]types.UID{}}
}

// Wrote records a create, update, patch or apply of resource that returned
// obj and err: the version obj carries, in its namespace. It records
// nothing when err is set or obj has no version, so it can be called
// right after the write, unconditionally.
func (w *Writes) Wrote(resource schema.GroupVersionResource, obj metav1.Object, err error) {
	if err != nil || obj == nil {
		return
	}
	rv := obj.GetResourceVersion()
	if rvwait.Check(rv) != nil {
		return
	}
	k := writeKey{resource: resource, namespace: obj.GetNamespace()}
	w.mu.Lock()
	defer w.mu.Unlock()
	if prev, ok := w.versions[k]; ok {
		if c, err := rvwait.Compare(prev, rv); err == nil && c >= 0 {
			return
		}
	}
	w.versions[k] = rv
}

// Deleted records a delete of obj (its namespace, name and, if set, UID)
// of resource that returned err. A delete that failed records nothing,
// except NotFound: the object is gone, but the cache may still hold it.
// obj may be the object read from a lister, or a &metav1.ObjectMeta with
// only a namespace and a name.
func (w *Writes) Deleted(resource schema.GroupVersionResource, obj metav1.Object, err error) {
	if (err != nil && !apierrors.IsNotFound(err)) || obj == nil || obj.GetName() == "" {
		return
	}
	k := deletionKey{writeKey: writeKey{resource: resource, namespace: obj.GetNamespace()}, name: obj.GetName()}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deletions[k] = obj.GetUID()
}

// deletionWaiter is the factory's wait for a deletion: the module's
// factories have it, beside Factory.
type deletionWaiter interface {
	WaitForDeletion(ctx context.Context, resource schema.GroupVersionResource, namespace, name string, uid types.UID) error
}

// Wait waits until the factory's informers of resource reflect every
// write of it recorded so far in namespace, or in every namespace when
// namespace is "" (each namespace's writes are waited for on its own
// watch, so this is as quick as a wait on one namespace). It returns nil
// at once when there is nothing to wait for, and otherwise the error of
// [informers.Factory.WaitForResourceVersion]. Writes it has seen
// reflected are forgotten.
func (w *Writes) Wait(ctx context.Context, resource schema.GroupVersionResource, namespace string) error {
	w.mu.Lock()
	versions := map[writeKey]string{}
	for k, rv := range w.versions {
		if k.resource == resource && (namespace == "" || k.namespace == namespace) {
			versions[k] = rv
		}
	}
	deletions := map[deletionKey]types.UID{}
	for k, uid := range w.deletions {
		if k.resource == resource && (namespace == "" || k.namespace == namespace) {
			deletions[k] = uid
		}
	}
	w.mu.Unlock()

	for _, k := range slices.SortedFunc(maps.Keys(versions), func(a, b writeKey) int { return strings.Compare(a.namespace, b.namespace) }) {
		if err := w.factory.WaitForResourceVersion(ctx, resource, k.namespace, versions[k]); err != nil {
			return err
		}
		w.forget(func() {
			if w.versions[k] == versions[k] {
				delete(w.versions, k)
			}
		})
	}
	gone, ok := w.factory.(deletionWaiter)
	if !ok && len(deletions) > 0 {
		return fmt.Errorf("informers: waiting for deletions of %s: the factory %T cannot wait for them", resource, w.factory)
	}
	for k, uid := range deletions {
		if err := gone.WaitForDeletion(ctx, resource, k.namespace, k.name, uid); err != nil {
			return err
		}
		w.forget(func() {
			if w.deletions[k] == uid {
				delete(w.deletions, k)
			}
		})
	}
	return nil
}

// forget runs drop under the lock: a record is dropped only if no newer
// write replaced it meanwhile.
func (w *Writes) forget(drop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	drop()
}
