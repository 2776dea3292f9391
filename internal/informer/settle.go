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
	"fmt"
	"slices"

	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/settle"
)

// This file is the informer's side of the test kit (package informertest):
// over one of client-go's fake clients, each namespace's informer is
// followed by internal/settle, so that informertest.Settle can wait until
// every event of a test's writes has reached every handler. Over a real
// client nothing here runs.

// follow sets up, for one namespace's list/watch of the informer of spec,
// what informertest.Settle needs when the client is a fake: the watch
// calls of cfg go through a stream that markers can be put into, and the
// function it returns wraps the client-go informer's handlers and
// transform. It returns nil, and changes nothing, over a real client.
func (h *Hooks) follow(spec *Spec, cfg *listwatch.Config, source string) func(cache.SharedIndexInformer) cache.SharedIndexInformer {
	if cfg.Requests == nil || !settle.IsFake(cfg.Client) {
		// Under settleMu: SetNamespaces builds namespaces' informers
		// outside the factory's lock, while Settle reads (SettleTarget).
		h.settleMu.Lock()
		h.client = cfg.Client
		h.settleMu.Unlock()
		return nil
	}
	name := spec.Name
	if source != "" {
		name += " in namespace " + source
	}
	si := settle.New(name, cfg.Namespace, cfg.Example)
	if v := listwatch.FakeWatchList(spec.Semantics); v != nil {
		// informertest.ServeWatchList: the stream listwatch.Semantics
		// promised the reflector.
		si.Stream(v, cfg.Resource)
	}
	h.settleMu.Lock()
	h.settle = append(h.settle, si)
	h.settleMu.Unlock()
	requests := cfg.Requests
	cfg.Requests = func(namespace string) listwatch.Requests {
		r := requests(namespace)
		r.Watch = si.Watch(r.List, r.Watch)
		return r
	}
	return si.Wrap
}

// SettleTarget is the informer named name as informertest.Settle sees it:
// refused is why it must not run, and done is closed once it has stopped
// (nil: not started).
func (h *Hooks) SettleTarget(name string, refused error, done chan struct{}) settle.Target {
	t := settle.Target{Name: name, Refused: refused, Started: done != nil, Done: done}
	h.settleMu.Lock()
	defer h.settleMu.Unlock()
	switch {
	case refused != nil:
	case h.gate == nil:
		t.Why = "it was built by InformerFor's newFunc, whose list and watch the factory does not make"
	case len(h.settle) == 0 && h.client == nil:
		t.Why = "it has no client"
	case len(h.settle) == 0:
		t.Why = fmt.Sprintf("its client %T is not one of client-go's fakes", h.client)
	default:
		t.Informers = slices.Clone(h.settle)
	}
	return t
}
