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
	"fmt"

	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/settle"
)

// This file is the factory's side of the test kit (package informertest):
// over one of client-go's fake clients, each informer is followed by
// internal/settle, so that informertest.Settle can wait until every event
// of a test's writes has reached every handler. Over a real client nothing
// here runs.

// follow sets up, for one namespace's list/watch of the informer of spec,
// what informertest.Settle needs when the client is a fake: the watch
// calls of cfg go through a stream that markers can be put into, and the
// function it returns wraps the client-go informer's handlers and
// transform. It returns nil, and changes nothing, over a real client.
func (h *hooks) follow(spec *informerSpec, cfg *listwatch.Config, source string) func(cache.SharedIndexInformer) cache.SharedIndexInformer {
	if cfg.Requests == nil || !settle.IsFake(spec.client) {
		return nil
	}
	name := spec.id.String()
	if source != "" {
		name += " in namespace " + source
	}
	si := settle.New(name, cfg.Namespace, spec.example)
	h.settle = append(h.settle, si)
	requests := cfg.Requests
	cfg.Requests = func(namespace string) listwatch.Requests {
		r := requests(namespace)
		r.Watch = si.Watch(r.Watch)
		return r
	}
	return si.Wrap
}

// SettleTargets returns the factory's informers as informertest.Settle
// sees them (settle.Source). It is not part of the API: its result type
// is internal.
func (f *sharedInformerFactory) SettleTargets() []settle.Target {
	f.lock.Lock()
	defer f.lock.Unlock()
	all := f.all()
	out := make([]settle.Target, 0, len(all)+1)
	for _, e := range all {
		t := settle.Target{Name: e.id.String(), Refused: e.refused, Started: e.done != nil, Done: e.done}
		switch {
		case e.refused != nil:
		case e.hooks.gate == nil:
			t.Why = "it was built by InformerFor's newFunc, whose list and watch the factory does not make"
		case len(e.hooks.settle) == 0:
			t.Why = fmt.Sprintf("its client %s is not one of client-go's fakes", f.clientOf(e.id.Form))
		default:
			t.Informers = e.hooks.settle
		}
		out = append(out, t)
	}
	if len(all) == 0 {
		// No informer yet: a factory over a real client is still an error.
		for _, c := range []any{f.client, f.dynamicClient, f.metadataClient} {
			if c != nil && !settle.IsFake(c) {
				out = append(out, settle.Target{Name: "the factory", Why: fmt.Sprintf("its client %T is not one of client-go's fakes", c)})
				break
			}
		}
	}
	return out
}

// clientOf names the factory's client of form, for SettleTargets.
func (f *sharedInformerFactory) clientOf(form Form) string {
	var c any
	switch form {
	case FormDynamic:
		c = f.dynamicClient
	case FormMetadata:
		c = f.metadataClient
	default:
		c = f.client
	}
	if c == nil {
		return "(a bound clientset)"
	}
	return fmt.Sprintf("%T", c)
}
