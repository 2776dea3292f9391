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
	"github.com/kubeinformers/informers/internal/informer"
)

// This file hands internal/informer (resolve.go) what decides one informer:
// the factory's option values, resolved once into its settings when the
// options have run; the resource's own options (ResourceOptions); and what
// the creation path asks for (a recipe). internal/informer resolves them
// into the informer's spec, which is all the build step reads.

// recipe is what a creation path (create.go's adapters) asks for: which
// informer (id), and where its objects come from.
type recipe struct {
	id InformerID
	informer.Request
}

// resolveSettings resolves the factory's option values once, when every
// option has run (newFactory).
func (f *sharedInformerFactory) resolveSettings() {
	f.settings = informer.Settings{
		Namespace: f.namespace, Namespaces: f.namespaces, Changeable: f.namespacesChangeable() == nil,
		Tweak: f.tweakListOptions, Resync: f.defaultResync, CustomResync: f.customResync,
		Transform: f.transform, Lean: f.leanTransform, LeanStrip: f.leanStrip, Mode: listModes[f.listMode],
		InformerName: f.informerName, Shard: f.shard, ShardOption: f.shardOption, Protobuf: f.protobuf,
		Discovery: f.discovery, MemoryPool: f.memoryPool, Refusal: f.optionErrs.Refusal,
	}
}

// resolveSpec resolves req's spec; the caller holds f.lock.
func (f *sharedInformerFactory) resolveSpec(req recipe) *informer.Spec {
	r, ro := req.Request, f.resourceOptions[req.id.Resource].settings()
	r.Name, r.Resource, r.Type = req.id.String(), req.id.Resource, req.id.Type
	r.TypedForm, r.Metadata, r.BuiltIn = req.id.Form == FormTyped, req.id.Form == FormMetadata, isBuiltIn(req.id.Resource)
	r.Current = f.currentNamespaces // namespaces.go
	if b, ok := f.memoryBudgets[req.id.Resource]; ok {
		ro.MemoryBudget = b // SetResourceMemoryBudget's
	}
	return informer.Resolve(&r, &f.settings, &ro)
}
