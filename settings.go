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
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeinformers/informers/internalinterfaces"
)

// This file decides each informer's settings from the options: the
// precedence of ResourceOptions over the factory-wide options, the checks
// only the whole set of options can make, and which informers an invalid
// option refuses (fail closed).

// checkFactoryOptions checks what only the whole set of options can tell;
// newFactory calls it once every option has run.
func (f *sharedInformerFactory) checkFactoryOptions() {
	if len(f.namespaces) > 0 && f.namespaceSet {
		f.invalidNarrowing(fmt.Errorf("WithNamespace(%q) and WithNamespaces(%q) both given: use one", f.namespace, f.namespaces), namespacedInformers)
	}
	// Options for a resource that is not built in are not checked against
	// the clients here: a typed binding (Bind, after New) may serve it.
	// Notices names those that nothing serves (unservedOptions).
}

func compareResources(a, b schema.GroupVersionResource) int {
	return strings.Compare(a.String(), b.String())
}

// settings are the effective options of one informer, after precedence.
type settings struct {
	// namespaces to list and watch: one "" for all namespaces (or a
	// cluster-scoped resource), several for a composite informer.
	namespaces []string
	tweak      func(*metav1.ListOptions)
	resync     time.Duration
	transform  cache.TransformFunc
	indexers   cache.Indexers
	shard      *shardSource // nil: not sharded
	listMode   ListMode
	// refused, if set, is why the informer must not run: an invalid
	// option that was meant to narrow what it lists (optionError).
	refused error
}

// settingsFor applies the precedence rules of [ResourceOptions] for one
// informer. namespace and tweak are the base ones: for a typed informer
// those its group was built with, the factory's for the other forms.
// namespaced is whether the resource lives in namespaces (true when not
// known, as for a custom resource).
func (f *sharedInformerFactory) settingsFor(id InformerID, namespaced bool, namespace string, tweak internalinterfaces.TweakListOptionsFunc) settings {
	ro := f.resourceOptions[id.Resource]
	s := settings{namespaces: []string{metav1.NamespaceAll}, resync: f.defaultResync, transform: f.transform, refused: f.refusal(id.Resource, namespaced)}
	if period, ok := f.customResync[id.Type]; ok && id.Form == FormTyped {
		s.resync = period
	}
	if ro.ResyncPeriod > 0 {
		s.resync = ro.ResyncPeriod
	}
	if ro.Transform != nil {
		s.transform = ro.Transform
	}
	s.listMode = f.listMode
	if ro.ListMode != ListModeAuto {
		s.listMode = ro.ListMode
	}
	switch {
	case !namespaced:
	case len(ro.Namespaces) > 0:
		s.namespaces = slices.Clone(ro.Namespaces)
	case len(f.namespaces) > 0 && namespace == metav1.NamespaceAll:
		s.namespaces = slices.Clone(f.namespaces)
	default:
		s.namespaces = []string{namespace}
	}
	switch own := ro.shardSelector(); {
	case own != nil:
		s.shard = staticShard(own, false) // nil for an empty one: unsharded
	case f.shard != nil && f.shard.appliesTo(namespaced):
		s.shard = f.shard
	}
	s.indexers = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	maps.Copy(s.indexers, ro.Indexers)
	label, field, own := ro.LabelSelector, ro.FieldSelector, ro.TweakListOptions
	if tweak == nil && label == "" && field == "" && own == nil {
		return s
	}
	s.tweak = func(opts *metav1.ListOptions) {
		if tweak != nil {
			tweak(opts)
		}
		opts.LabelSelector = andSelectors(opts.LabelSelector, label)
		opts.FieldSelector = andSelectors(opts.FieldSelector, field)
		if own != nil {
			own(opts)
		}
	}
	return s
}

// andSelectors joins two selectors in the syntax of metav1.ListOptions,
// where a comma means AND.
func andSelectors(a, b string) string {
	switch {
	case b == "":
		return a
	case a == "":
		return b
	}
	return a + "," + b
}

// refusal joins the errors of the invalid narrowing options meant for the
// informers of resource, or returns nil.
func (f *sharedInformerFactory) refusal(resource schema.GroupVersionResource, namespaced bool) error {
	var errs []error
	for _, e := range f.optionErrs {
		if e.refuses != nil && e.refuses(resource, namespaced) {
			errs = append(errs, e.err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("not started: an invalid option would have widened what it lists: %w", errors.Join(errs...))
}
