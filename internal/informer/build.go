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

// Package informer builds the factory's informers, of every form, from
// their specs: Build, the wrapper every factory informer is (Informer),
// and the hooks each reports to (Hooks). The root package resolves each
// spec from its options and registers what Build returns; this package
// never imports it.
package informer

import (
	"fmt"
	"maps"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/listwatch"
	"github.com/kubeinformers/informers/internal/multinamespace"
	"github.com/kubeinformers/informers/internal/shard"
)

// This file builds an informer, of every form, from its spec (spec.go) and
// the hooks it reports to (hooks.go). It reads nothing else: no factory
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

// Built is what Build makes: the informer the factory hands out, the
// factory's own wrapper under its typed form (nil for an informer built by
// InformerFor's newFunc), the shard it follows (nil likewise), and why it
// must not run, if the build found a reason the spec could not.
type Built struct {
	Informer cache.SharedIndexInformer
	Base     *Informer
	Shard    *shard.Informer
	Refused  error
	// Namespaces is the composite whose namespaces follow the factory's
	// set (Spec.FollowsSet); nil otherwise.
	Namespaces *multinamespace.Informer
}

// Build makes the informer of spec, top to bottom.
//
// An informer built by InformerFor's newFunc is not served by the
// factory's list and watch: only the watch errors, the transform and a
// static shard, through the informer's own SetShardSelector, reach it.
// Every other informer is one informer per namespace, each with its
// list/watch, hooks and transform; a composite over them when there are
// several; the factory's wrapper (SetShardSelector and a sync that waits
// for the first watch); and its typed form.
func Build(spec *Spec, h *Hooks) Built {
	if spec.NewInformer != nil {
		informer := spec.NewInformer(spec.Resync)
		h.watchErrors(spec.Name, informer, "")
		h.measure(spec.Name, informer) // memory.go
		if spec.Transform != nil {
			if err := informer.SetTransform(spec.Transform); err != nil {
				// SetTransform only fails on a running informer, which
				// a fresh one never is; say so instead of dropping it.
				klog.Background().Error(err, "Cannot set the factory transform", "informer", spec.Name)
			}
		}
		if spec.Shard == nil || spec.Refused != nil {
			return Built{Informer: informer}
		}
		setter, ok := informer.(shard.Setter)
		if !ok {
			// Fail closed: an informer that cannot be sharded does not
			// run, rather than list everything.
			return Built{Informer: informer, Refused: fmt.Errorf("not started: %s: the informer %T built by InformerFor's newFunc has no SetShardSelector (client-go before v0.38), so it cannot be sharded", spec.ShardOption, informer)}
		}
		if err := setter.SetShardSelector(spec.Selector); err != nil {
			return Built{Informer: informer, Refused: fmt.Errorf("not started: %w", err)}
		}
		return Built{Informer: informer}
	}

	// One shard for all the informer's namespaces, which SetShardSelector
	// may replace until the informer starts.
	sh := shard.NewInformer(spec.Name, &h.notices.shard, spec.Shard)
	var drains map[string]*multinamespace.Drain
	newOne := func(namespace string) cache.SharedIndexInformer {
		// Errors name the namespace only where there are several, or
		// may be.
		source := ""
		if len(spec.Namespaces) > 1 || spec.FollowsSet {
			source = namespace
		}
		// A shard handover reads the informer's cache (internal/listwatch).
		var informer cache.SharedIndexInformer
		cfg := listwatch.Config{
			Options:   spec.ListWatch,
			Namespace: namespace,
			Shard:     sh,
			Store:     func() cache.Store { return informer.GetStore() },
		}
		h.wire(&cfg, source)
		follow := h.follow(spec, &cfg, source) // settle.go: over a fake client only
		lw := listwatch.New(cfg)
		if spec.FollowsSet {
			// A namespace removed later is drained first (multinamespace).
			drains[namespace] = multinamespace.NewDrain(lw, spec.ListWatch.Example, namespace)
		}
		informer = cache.NewSharedIndexInformerWithOptions(
			cache.ToListWatcherWithWatchListSemantics(lw, spec.Semantics),
			spec.ListWatch.Example,
			cache.SharedIndexInformerOptions{
				ResyncPeriod:      spec.Resync,
				Indexers:          maps.Clone(spec.Indexers),
				ObjectDescription: spec.Resource.String(),
				Identifier:        spec.Identifier,
			})
		if follow != nil {
			informer = follow(informer)
		}
		h.watchErrors(spec.Name, informer, source)
		h.Versions.Add(namespace, informer)
		if spec.InformerTransform != nil {
			if err := informer.SetTransform(spec.InformerTransform); err != nil {
				klog.Background().Error(err, "Cannot set the factory transform", "informer", spec.Name)
			}
		}
		return informer
	}
	var informer cache.SharedIndexInformer
	var changeable *multinamespace.Informer
	switch {
	case spec.FollowsSet:
		// Built even for one namespace, so that SetNamespaces can add
		// others; Build and the builder run under the composite's lock,
		// one at a time.
		drains = map[string]*multinamespace.Drain{}
		changeable = multinamespace.NewChangeable(spec.Namespaces, multinamespace.Builder{
			Add: func(namespace string) multinamespace.Member {
				h.addNamespace(namespace)
				inf := newOne(namespace)
				d := drains[namespace]
				delete(drains, namespace)
				return multinamespace.Member{Informer: inf, Drain: d}
			},
			Removing: h.removingNamespace,
			Removed:  h.removeNamespace,
		})
		informer = changeable
	case len(spec.Namespaces) == 1:
		informer = newOne(spec.Namespaces[0])
	default:
		perNamespace := make(map[string]cache.SharedIndexInformer, len(spec.Namespaces))
		for _, ns := range spec.Namespaces {
			perNamespace[ns] = newOne(ns)
		}
		informer = multinamespace.New(perNamespace)
	}
	fi := wrap(informer, sh, h, spec)
	informer = fi
	if spec.Typed != nil {
		informer = spec.Typed(informer)
	}
	return Built{Informer: informer, Base: fi, Shard: sh, Namespaces: changeable}
}
