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

package multinamespace

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// This file drains the informer of a namespace being removed. client-go's
// informer, when it stops, drops the notifications still queued for each
// handler, while its store already reflects them: a deletion dropped so
// leaves the handler with an object that the store, and so the tombstones
// SetNamespaces sends, no longer has. The drain makes the namespace's
// watch stop passing events on and send one marker, a deletion of an
// object that no store holds (so the cache does not change), which each
// handler receives after every event before it; once every handler has
// seen it, stopping drops nothing that reached the store.

// drainName is the name of the marker: '~' is not valid in an object
// name, so no real object shares it.
const drainName = "kubeinformers~drain~"

// isDrainMarker reports whether obj is a drain marker.
func isDrainMarker(obj interface{}) bool {
	m, ok := obj.(metav1.Object)
	return ok && m.GetName() == drainName
}

// Drain is the drain of one namespace's informer; see NewDrain.
type Drain struct {
	marker runtime.Object
	once   sync.Once
	wake   chan struct{} // closed by request
}

// NewDrain makes lw's watches drainable, in place, and returns their
// drain; example is an object of the informer's type and namespace its
// namespace. It returns nil, changing nothing, when example has no object
// metadata to make a marker of.
func NewDrain(lw *cache.ListWatch, example runtime.Object, namespace string) *Drain {
	if example == nil {
		return nil
	}
	marker := example.DeepCopyObject()
	m, err := meta.Accessor(marker)
	if err != nil {
		return nil
	}
	m.SetNamespace(namespace)
	m.SetName(drainName)
	d := &Drain{marker: marker, wake: make(chan struct{})}
	orig := *lw // its watch, as it was
	lw.WatchFuncWithContext = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		if d.requested() {
			// No request: the stream is the marker alone.
			return d.stream(ctx, nil, opts), nil
		}
		w, err := orig.WatchWithContext(ctx, opts)
		if err != nil {
			return nil, err
		}
		return d.stream(ctx, w, opts), nil
	}
	return d
}

func (d *Drain) request() { d.once.Do(func() { close(d.wake) }) }

func (d *Drain) requested() bool {
	select {
	case <-d.wake:
		return true
	default:
		return false
	}
}

// stream passes on inner's events until the drain is requested, then
// sends the marker and nothing more until it is stopped. A watch-list
// stream's initial events are passed on through their end first: the
// reflector holds them until then, and a marker among them would never
// reach a handler.
func (d *Drain) stream(ctx context.Context, inner watch.Interface, opts metav1.ListOptions) watch.Interface {
	w := &drainWatch{out: make(chan watch.Event), stop: make(chan struct{})}
	initial := opts.SendInitialEvents != nil && *opts.SendInitialEvents
	go func() {
		defer close(w.out)
		var in <-chan watch.Event
		if inner != nil {
			defer inner.Stop()
			in = inner.ResultChan()
		}
		rv := opts.ResourceVersion
		for {
			wake := d.wake
			if initial {
				wake = nil
			}
			select {
			case ev, ok := <-in:
				if !ok {
					return // the reflector watches again
				}
				if m, err := meta.Accessor(ev.Object); err == nil {
					rv = m.GetResourceVersion()
					if ev.Type == watch.Bookmark && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
						initial = false
					}
				}
				select {
				case w.out <- ev:
				case <-w.stop:
					return
				case <-ctx.Done():
					return
				}
			case <-wake:
				marker := d.marker.DeepCopyObject()
				if m, err := meta.Accessor(marker); err == nil {
					m.SetResourceVersion(rv)
				}
				select {
				case w.out <- watch.Event{Type: watch.Deleted, Object: marker}:
				case <-w.stop:
					return
				case <-ctx.Done():
					return
				}
				select {
				case <-w.stop:
				case <-ctx.Done():
				}
				return
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return w
}

// drainWatch is a watch of a drainable namespace.
type drainWatch struct {
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func (w *drainWatch) Stop()                          { w.once.Do(func() { close(w.stop) }) }
func (w *drainWatch) ResultChan() <-chan watch.Event { return w.out }
