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

package crcache

import (
	"strings"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// multiInformer is the informer of an entry with several slots
// (namespaces with settings of their own): every call goes to each slot's
// informer.
type multiInformer struct {
	entry *entry
	done  <-chan struct{} // closed when the cache stops

	checkerOnce sync.Once
	checker     *allDone
}

var _ cache.Informer = &multiInformer{}

func (m *multiInformer) each(f func(toolscache.SharedIndexInformer) (toolscache.ResourceEventHandlerRegistration, error)) (toolscache.ResourceEventHandlerRegistration, error) {
	r := &multiRegistration{done: m.done}
	for _, si := range m.entry.slots {
		h, err := f(si.informer)
		if err != nil {
			return nil, err
		}
		r.handles = append(r.handles, h)
		r.informers = append(r.informers, si.informer)
	}
	return r, nil
}

func (m *multiInformer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.each(func(i toolscache.SharedIndexInformer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandler(handler)
	})
}

func (m *multiInformer) AddEventHandlerWithResyncPeriod(handler toolscache.ResourceEventHandler, resyncPeriod time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.each(func(i toolscache.SharedIndexInformer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithResyncPeriod(handler, resyncPeriod)
	})
}

func (m *multiInformer) AddEventHandlerWithOptions(handler toolscache.ResourceEventHandler, options toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.each(func(i toolscache.SharedIndexInformer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithOptions(handler, options)
	})
}

func (m *multiInformer) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*multiRegistration)
	if !ok {
		return errNotOurs(handle)
	}
	for i, h := range r.handles {
		if err := r.informers[i].RemoveEventHandler(h); err != nil {
			return err
		}
	}
	return nil
}

func (m *multiInformer) AddIndexers(indexers toolscache.Indexers) error {
	for _, si := range m.entry.slots {
		if err := si.informer.AddIndexers(indexers); err != nil {
			return err
		}
	}
	return nil
}

func (m *multiInformer) HasSynced() bool {
	for _, si := range m.entry.slots {
		if !si.informer.HasSynced() {
			return false
		}
	}
	return true
}

func (m *multiInformer) HasSyncedChecker() toolscache.DoneChecker {
	m.checkerOnce.Do(func() {
		checkers := make([]toolscache.DoneChecker, len(m.entry.slots))
		for i, si := range m.entry.slots {
			checkers[i] = si.informer.HasSyncedChecker()
		}
		m.checker = newAllDone(checkers, m.done)
	})
	return m.checker
}

func (m *multiInformer) IsStopped() bool {
	for _, si := range m.entry.slots {
		if !si.informer.IsStopped() {
			return false
		}
	}
	return true
}

// multiRegistration is a handler's registration with each slot's informer.
type multiRegistration struct {
	handles   []toolscache.ResourceEventHandlerRegistration
	informers []toolscache.SharedIndexInformer
	done      <-chan struct{}

	checkerOnce sync.Once
	checker     *allDone
}

func (r *multiRegistration) HasSynced() bool {
	for _, h := range r.handles {
		if !h.HasSynced() {
			return false
		}
	}
	return true
}

func (r *multiRegistration) HasSyncedChecker() toolscache.DoneChecker {
	r.checkerOnce.Do(func() {
		checkers := make([]toolscache.DoneChecker, len(r.handles))
		for i, h := range r.handles {
			checkers[i] = h.HasSyncedChecker()
		}
		r.checker = newAllDone(checkers, r.done)
	})
	return r.checker
}

// allDone is done when every checker is: at once if they are, else its
// goroutine closes it then, or ends when the cache stops.
type allDone struct {
	checkers []toolscache.DoneChecker
	ch       chan struct{}
}

func newAllDone(checkers []toolscache.DoneChecker, stop <-chan struct{}) *allDone {
	d := &allDone{checkers: checkers, ch: make(chan struct{})}
	if allClosed(checkers) {
		close(d.ch)
		return d
	}
	go func() {
		for _, c := range checkers {
			select {
			case <-c.Done():
			case <-stop:
				return
			}
		}
		close(d.ch)
	}()
	return d
}

func allClosed(checkers []toolscache.DoneChecker) bool {
	for _, c := range checkers {
		select {
		case <-c.Done():
		default:
			return false
		}
	}
	return true
}

func (d *allDone) Done() <-chan struct{} { return d.ch }

func (d *allDone) Name() string {
	names := make([]string, len(d.checkers))
	for i, c := range d.checkers {
		names[i] = c.Name()
	}
	return strings.Join(names, ", ")
}
