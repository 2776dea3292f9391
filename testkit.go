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
	"github.com/kubeinformers/informers/internal/settle"
)

// This file is the factory's side of the test kit (package informertest):
// it hands informertest.Settle the factory's informers, each followed over
// a fake client by internal/settle (internal/informer/settle.go).

// SettleTargets returns the factory's informers as informertest.Settle
// sees them (settle.Source). It is not part of the API: its result type
// is internal.
func (f *sharedInformerFactory) SettleTargets() []settle.Target {
	f.lock.Lock()
	defer f.lock.Unlock()
	all := f.all()
	out := make([]settle.Target, 0, len(all)+1)
	for _, e := range all {
		out = append(out, e.hooks.SettleTarget(e.id.String(), e.refused, e.run.Done()))
	}
	if len(all) == 0 {
		// No informer yet: a factory over a real client is still an error.
		out = append(out, settle.RealClient(f.client, f.dynamicClient, f.metadataClient)...)
	}
	return out
}
