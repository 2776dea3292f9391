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

package informers

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeinformers/informers/internal/bridge"
)

// This file answers what the controller-runtime bridge (the crcache
// module) asks of a factory beyond its public API (internal/bridge).

var _ bridge.Factory = &sharedInformerFactory{}

// BridgeSettings implements bridge.Factory.
func (f *sharedInformerFactory) BridgeSettings() bridge.Settings {
	s := bridge.Settings{
		Tweak:        f.tweakListOptions,
		Transform:    f.transform,
		CustomResync: slices.Collect(maps.Keys(f.customResync)),
		APIDiscovery: f.apiDiscovery,
		InformerName: f.informerName,
		MemoryPool:   f.memoryPool,
		Resources:    make(map[schema.GroupVersionResource]bridge.ResourceSettings, len(f.resourceOptions)),
	}
	switch {
	case len(f.namespaces) > 0:
		s.Namespaces = slices.Clone(f.namespaces)
	case f.namespaceSet && f.namespace != "":
		s.Namespaces = []string{f.namespace}
	}
	for resource, o := range f.resourceOptions {
		s.Resources[resource] = bridge.ResourceSettings{
			Namespaces: len(o.Namespaces) > 0,
			Selectors:  o.LabelSelector != "" || o.FieldSelector != "",
			Tweak:      o.TweakListOptions != nil,
			Transform:  o.Transform != nil,
			Resync:     o.ResyncPeriod > 0,
		}
	}
	return s
}

// BorrowName implements bridge.Factory.
func (f *sharedInformerFactory) BorrowName(label string) {
	f.lock.Lock()
	defer f.lock.Unlock()
	f.metrics.Label, f.nameBorrowed = label, true
}

// Informers implements bridge.Factory.
func (f *sharedInformerFactory) Informers(resource schema.GroupVersionResource) []bridge.Informer {
	f.lock.Lock()
	defer f.lock.Unlock()
	var out []bridge.Informer
	for _, e := range f.all() {
		if e.id.Resource == resource && e.hooks != nil {
			out = append(out, bridge.Informer{Name: e.id.String(), Hooks: e.hooks, FollowsSet: e.namespaces != nil})
		}
	}
	return out
}
