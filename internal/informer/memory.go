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

import "k8s.io/client-go/tools/cache"

// storeSamples is how many objects Memory observes from the store of an
// informer whose objects its meter does not see entering it.
const storeSamples = 16

// Memory returns the objects in informer's cache and the estimate of the
// heap they retain (internal/memsize). The objects of a factory informer
// (fed) were observed as they entered it; those of an informer built by
// InformerFor's newFunc, whose transform is its own, are sampled from its
// store now. It makes no request and allocates a slice of the cache's
// keys.
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
