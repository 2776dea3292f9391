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

package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// evt is one handler notification.
type evt struct {
	Type    string // add, update, delete
	Name    string // namespace/name
	RV      string // new (or final) resourceVersion
	OldRV   string // update only
	Unknown bool   // delete delivered as DeletedFinalStateUnknown
}

func (e evt) String() string {
	s := fmt.Sprintf("%s %s rv=%s", e.Type, e.Name, e.RV)
	if e.OldRV != "" {
		s += " old=" + e.OldRV
	}
	if e.Unknown {
		s += " (DeletedFinalStateUnknown)"
	}
	return s
}

// eventLog records handler notifications in delivery order.
type eventLog struct {
	mu   sync.Mutex
	evts []evt
}

func key(obj any) (string, string) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		rv := ""
		if m, err := meta.Accessor(d.Obj); err == nil && d.Obj != nil {
			rv = m.GetResourceVersion()
		}
		return d.Key, rv
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("<%T>", obj), ""
	}
	k := m.GetName()
	if m.GetNamespace() != "" {
		k = m.GetNamespace() + "/" + k
	}
	return k, m.GetResourceVersion()
}

func (l *eventLog) add(e evt) {
	l.mu.Lock()
	l.evts = append(l.evts, e)
	l.mu.Unlock()
}

func (l *eventLog) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			k, rv := key(obj)
			l.add(evt{Type: "add", Name: k, RV: rv})
		},
		UpdateFunc: func(oldObj, newObj any) {
			k, rv := key(newObj)
			_, orv := key(oldObj)
			l.add(evt{Type: "update", Name: k, RV: rv, OldRV: orv})
		},
		DeleteFunc: func(obj any) {
			k, rv := key(obj)
			_, unknown := obj.(cache.DeletedFinalStateUnknown)
			l.add(evt{Type: "delete", Name: k, RV: rv, Unknown: unknown})
		},
	}
}

func (l *eventLog) all() []evt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.evts)
}

func (l *eventLog) forName(name string) []evt {
	var out []evt
	for _, e := range l.all() {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func rvInt(rv string) uint64 {
	n, _ := strconv.ParseUint(rv, 10, 64)
	return n
}
