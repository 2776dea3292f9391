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
	"maps"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/multinamespace"
)

// This file builds an informer, of every form, from its spec (spec.go) and
// the hooks it reports to (status.go). It reads nothing else: no factory
// field, no option. The list and watch calls themselves come from
// internal/listwatch, the same code the standalone New…Informer functions
// use.
//
// Dynamic and metadata informers are built here rather than with client-go's
// dynamicinformer and metadatainformer: those hide their ListWatch, and the
// factory needs its own hooks in it (Ready's error record, per-resource
// selectors, shard filters, the list modes). What they do is otherwise the
// same, request for request; test/conformance's differential test checks
// that.

// build makes the informer of spec, top to bottom, and returns it, the
// shard it follows (nil for an informer built by InformerFor's newFunc),
// and why it must not run, if the build found a reason the spec could not.
//
// An informer built by InformerFor's newFunc is not served by the
// factory's list and watch: only the watch errors, the transform and a
// static shard, through the informer's own SetShardSelector, reach it.
// Every other informer is one informer per namespace, each with its
// list/watch, hooks and transform; a composite over them when there are
// several; the factory's wrapper (SetShardSelector and a sync that waits
// for the first watch); and its typed form.
func build(spec *informerSpec, h *hooks) (cache.SharedIndexInformer, *informerShard, error) {
	if spec.newInformer != nil {
		informer := spec.newInformer(spec.resync)
		h.watchErrors(spec.id, informer, "")
		if spec.transform != nil {
			if err := informer.SetTransform(spec.transform); err != nil {
				// SetTransform only fails on a running informer, which
				// a fresh one never is; say so instead of dropping it.
				klog.Background().Error(err, "Cannot set the factory transform", "informer", spec.id)
			}
		}
		if spec.shard == nil || spec.refused != nil {
			return informer, nil, nil
		}
		setter, ok := informer.(shardSetter)
		if !ok {
			// Fail closed: an informer that cannot be sharded does not
			// run, rather than list everything.
			return informer, nil, fmt.Errorf("not started: %s: the informer %T built by InformerFor's newFunc has no SetShardSelector (client-go before v0.38), so it cannot be sharded", spec.shardOption, informer)
		}
		if err := setter.SetShardSelector(spec.selector); err != nil {
			return informer, nil, fmt.Errorf("not started: %w", err)
		}
		return informer, nil, nil
	}

	// One shard for all the informer's namespaces, which SetShardSelector
	// may replace until the informer starts.
	shard := &informerShard{id: spec.id, notices: &h.notices, source: spec.shard}
	newOne := func(namespace string) cache.SharedIndexInformer {
		// Errors name the namespace only where there are several.
		source := ""
		if len(spec.namespaces) > 1 {
			source = namespace
		}
		// A shard handover reads the informer's cache (internal/listwatch).
		var informer cache.SharedIndexInformer
		cfg := listwatch.Config{
			Resource:     spec.id.Resource,
			Namespace:    namespace,
			Requests:     spec.requests,
			Missing:      spec.missing,
			Tweak:        spec.tweak,
			Shard:        shard,
			Mode:         spec.listMode,
			Client:       spec.client,
			Pretransform: spec.pretransform,
			Store:        func() cache.Store { return informer.GetStore() },
			Example:      spec.example,
			Departures:   spec.departures,

			PagedFallback: spec.pagedFallback,
			Protobuf:      spec.protobuf,
			Strip:         spec.strip,
		}
		h.wire(&cfg, source)
		follow := h.follow(spec, &cfg, source) // testkit.go: over a fake client only
		informer = cache.NewSharedIndexInformerWithOptions(
			cache.ToListWatcherWithWatchListSemantics(listwatch.New(cfg), spec.semantics),
			spec.example,
			cache.SharedIndexInformerOptions{
				ResyncPeriod:      spec.resync,
				Indexers:          maps.Clone(spec.indexers),
				ObjectDescription: spec.id.Resource.String(),
				Identifier:        spec.identifier,
			})
		if follow != nil {
			informer = follow(informer)
		}
		h.watchErrors(spec.id, informer, source)
		if spec.informerTransform != nil {
			if err := informer.SetTransform(spec.informerTransform); err != nil {
				klog.Background().Error(err, "Cannot set the factory transform", "informer", spec.id)
			}
		}
		return informer
	}
	var informer cache.SharedIndexInformer
	if len(spec.namespaces) == 1 {
		informer = newOne(spec.namespaces[0])
	} else {
		perNamespace := make(map[string]cache.SharedIndexInformer, len(spec.namespaces))
		for _, ns := range spec.namespaces {
			perNamespace[ns] = newOne(ns)
		}
		informer = multinamespace.New(perNamespace)
	}
	fi := newFactoryInformer(informer, shard, h.gate, spec.departures, spec.pretransform)
	fi.transform, fi.metrics, h.metrics.base = spec.informerTransform, &h.metrics, fi // metrics.go
	informer = fi
	if spec.typed != nil {
		informer = spec.typed(informer)
	}
	return informer, shard, nil
}
