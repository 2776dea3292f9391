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
	"fmt"
	"reflect"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
)

// FakeClient is what the helpers of this package need of a fake client:
// client-go's testing.Fake (embedded in every fake clientset, the dynamic
// and the metadata fake) and the object tracker behind it. The fakes of
// k8s.io/client-go/kubernetes/fake, dynamic/fake, metadata/fake and those
// client-gen generates all are.
type FakeClient interface {
	PrependReactor(verb, resource string, reaction clienttesting.ReactionFunc)
	PrependWatchReactor(resource string, reaction clienttesting.WatchReactionFunc)
	Tracker() clienttesting.ObjectTracker
}

// StampResourceVersions makes client give every object it creates,
// updates or patches the next resource version of its resource, as a
// server does: the number its object tracker gives the write (what its
// lists report and its watches resume from), in metadata.resourceVersion.
// An update that names a resource version other than the stored object's
// fails with 409 Conflict, as on a server; one that names none is
// applied.
//
// client-go's fakes leave resource versions as the test wrote them,
// usually empty. A shared informer takes an update that keeps the
// resource version for a resync: once it has a resync period, only the
// handlers whose resync is due get it. With this, updates are updates,
// an informer's resource versions can be compared (read-your-writes),
// and a watch resumes where it ended, as on a server.
//
// Call it right after building the client, before adding reactors of your
// own: it prepends a reactor for every verb, which comes before those
// added earlier. Writes made directly through client.Tracker() and
// server-side apply patches are not stamped.
func StampResourceVersions(client FakeClient) {
	t := &stamping{ObjectTracker: client.Tracker(), next: make(map[schema.GroupVersionResource]int64)}
	client.PrependReactor("*", "*", clienttesting.ObjectReaction(t))
}

// stamping is an object tracker that stamps resource versions.
type stamping struct {
	clienttesting.ObjectTracker
	mu   sync.Mutex
	next map[schema.GroupVersionResource]int64
}

// nothing is a namespace no object has: listing it reads the tracker's
// resource version of a resource without copying its objects.
const nothing = "~"

// stamp sets obj's resource version to the one the tracker is about to
// give it; the client's lock orders the writes made through it.
func (t *stamping) stamp(gvr schema.GroupVersionResource, obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	rv := t.next[gvr]
	if cur, ok := t.current(gvr, obj); ok {
		rv = cur
	} else if rv == 0 {
		rv = 1 // an empty tracker's
	}
	rv++
	t.next[gvr] = rv
	m.SetResourceVersion(strconv.FormatInt(rv, 10))
	return nil
}

// current returns the tracker's resource version of gvr, if it can list
// obj's kind.
func (t *stamping) current(gvr schema.GroupVersionResource, obj runtime.Object) (int64, bool) {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		v := reflect.ValueOf(obj)
		if v.Kind() == reflect.Pointer {
			kind = v.Elem().Type().Name()
		}
	}
	list, err := t.List(gvr, gvr.GroupVersion().WithKind(kind), nothing)
	if err != nil {
		return 0, false
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return 0, false
	}
	rv, err := strconv.ParseInt(lm.GetResourceVersion(), 10, 64)
	return rv, err == nil
}

func (t *stamping) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	if err := t.stamp(gvr, obj); err != nil {
		return err
	}
	return t.ObjectTracker.Create(gvr, obj, ns, opts...)
}

func (t *stamping) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if want := m.GetResourceVersion(); want != "" {
		if stored, err := t.Get(gvr, ns, m.GetName()); err == nil {
			if sm, err := meta.Accessor(stored); err == nil && sm.GetResourceVersion() != want {
				return apierrors.NewConflict(gvr.GroupResource(), m.GetName(),
					fmt.Errorf("the object has been modified: resource version %s, the update was made to %s", sm.GetResourceVersion(), want))
			}
		}
	}
	if err := t.stamp(gvr, obj); err != nil {
		return err
	}
	return t.ObjectTracker.Update(gvr, obj, ns, opts...)
}

func (t *stamping) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	if err := t.stamp(gvr, obj); err != nil {
		return err
	}
	return t.ObjectTracker.Patch(gvr, obj, ns, opts...)
}
