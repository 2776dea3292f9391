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
	"slices"

	"github.com/kubeinformers/informers/internal/settle"
)

// This file keeps what the hooks hold per namespace in step with the
// factory's SetNamespaces, for an informer whose namespaces follow the
// factory's set (Spec.FollowsSet): Build's composite calls addNamespace
// before it builds a namespace's informer, removingNamespace when its
// removal begins and removeNamespace once that informer has stopped.

// addNamespace makes the sync gate wait for namespace's first watch too,
// if it has not opened yet: an informer that has not synced then syncs
// with every namespace of its current set. A gate that has opened stays
// open, as HasSynced stays true.
func (h *Hooks) addNamespace(namespace string) {
	if h.gate != nil {
		h.gate.add(namespace)
	}
}

// removingNamespace, over a fake client, takes namespace's follower out
// of what informertest.Settle waits for, before the removal drains and
// stops its informer. Done only once the informer had stopped
// (removeNamespace), a Settle that had the follower already would report
// "stopped" as an error, or wait until its context ended for one removed
// before it ever opened a watch; and a Settle started during the drain
// would still look at it. Remove makes the Settles already waiting
// return nil for it; the ones started later no longer get it.
func (h *Hooks) removingNamespace(namespace string) {
	h.settleMu.Lock()
	defer h.settleMu.Unlock()
	h.settle = slices.DeleteFunc(h.settle, func(si *settle.Informer) bool {
		if si.Namespace() != namespace {
			return false
		}
		si.Remove()
		return true
	})
}

// removeNamespace forgets namespace: its first watch (the gate may then
// open), the last error of its list and watch (Ready), its watch-list
// stream, its cache (WaitForResourceVersion) and its objects (the memory
// budget). Its follower
// (informertest.Settle) went when the removal began (removingNamespace).
func (h *Hooks) removeNamespace(namespace string) {
	if h.gate != nil {
		h.gate.remove(namespace)
	}
	h.health.observe(namespace, nil)
	h.Streams.Forget(namespace)
	h.Versions.Remove(namespace)
	h.Budget.Forget(namespace)
}

// NamespaceListed reports whether the informer of namespace has synced
// (its first list is in the cache); while it has not, the last error of
// its list or watch, if any.
func (h *Hooks) NamespaceListed(namespace string) (bool, error) {
	for _, src := range h.Versions.All() {
		if src.Namespace() == namespace && src.Synced() {
			return true, nil
		}
	}
	return false, h.health.of(namespace)
}
