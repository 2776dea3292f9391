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
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// storeSamples is how many objects Memory observes from the store of an
// informer whose objects its meter does not see entering it.
const storeSamples = 16

// Memory returns the objects in informer's cache and the estimate of the
// heap they retain (internal/memsize). The objects of a factory informer
// (fed) were observed as they entered it; those of an informer built by
// InformerFor's newFunc, whose transform is its own, are observed by its
// measuring handler (measured), which runs behind its cache: until it has
// observed storeSamples of them, they are sampled from its store now. It
// makes no request and allocates a slice of the cache's keys.
func Memory(informer cache.SharedIndexInformer, h *Hooks, fed bool) (objects int, bytes int64) {
	store := informer.GetStore()
	if !fed && h.Memory.Observed() < storeSamples {
		items := store.List()
		for i := 0; i < len(items) && i < storeSamples; i++ {
			h.Memory.Observe(items[i*len(items)/storeSamples%len(items)])
		}
		return len(items), h.Memory.Bytes(len(items))
	}
	objects = len(store.ListKeys())
	return objects, h.Memory.Bytes(objects)
}

// measured is the handler that measures the objects of an informer built
// by InformerFor's newFunc as they enter its cache, after its own
// transform (a factory informer's transform does that for its objects),
// for its bytes gauge and MemoryStatus; and charges their estimate to its
// memory budget, which cannot stop it (budget.Account.Charge).
type measured struct{ h *Hooks }

// measure adds informer's measuring handler; name names it in the log.
func (h *Hooks) measure(name string, informer cache.SharedIndexInformer) {
	if _, err := informer.AddEventHandler(measured{h}); err != nil {
		klog.Background().Error(err, "Cannot measure the objects of an informer", "informer", name)
	}
}

func (m measured) OnAdd(obj any, _ bool) {
	m.h.Memory.Observe(obj)
	m.changed(1)
}

func (m measured) OnUpdate(_, newObj any) {
	m.h.Memory.Observe(newObj)
	m.changed(0)
}

func (m measured) OnDelete(any) { m.changed(-1) }

func (m measured) changed(d int) {
	m.h.Budget.Charge(d)
	m.h.Metrics.Refresh()
}
