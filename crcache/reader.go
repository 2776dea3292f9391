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

package crcache

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Get reads the object of key into out from the cache, building and
// starting the informer of out's kind first unless
// ReaderFailOnMissingInformer. It waits for that informer to sync. A key
// in a namespace outside the cache's is an error at once, as in
// controller-runtime, before any informer is built or waited for.
func (c *Cache) Get(ctx context.Context, key client.ObjectKey, out client.Object, opts ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(out, c.config.scheme)
	if err != nil {
		return err
	}
	if unknown, err := c.outside(ctx, entryKey{form: formOf(out), gvk: gvk}, key.Namespace); err != nil || unknown {
		if err == nil {
			err = unknownNamespaceGet(key)
		}
		return err
	}
	e, started, err := c.getEntry(ctx, gvk, out, c.config.readerFailOnMissingInformer, true)
	if err != nil {
		return err
	}
	if !started {
		return &cache.ErrCacheNotStarted{}
	}
	c.mu.RLock()
	pending := len(e.slots) == 0
	if !e.namespaced {
		key.Namespace = ""
	}
	si := e.slotOf(key.Namespace)
	c.mu.RUnlock()
	if pending {
		// A kind not served yet has no objects (WithAPIDiscovery).
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
	if si == nil {
		return unknownNamespaceGet(key)
	}
	var getOpts client.GetOptions
	getOpts.ApplyOptions(opts)
	storeKey := key.Name
	if key.Namespace != "" {
		storeKey = key.Namespace + "/" + key.Name
	}
	item, exists, err := si.informer.GetIndexer().GetByKey(storeKey)
	if err != nil {
		return err
	}
	if !exists {
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
	obj, ok := item.(runtime.Object)
	if !ok {
		return fmt.Errorf("cache contained %T, which is not an Object", item)
	}
	copied := !si.config.unsafeDisableDeepCopy && !derefTrue(getOpts.UnsafeDisableDeepCopy)
	if copied {
		obj = obj.DeepCopyObject()
	}
	outVal, objVal := reflect.ValueOf(out), reflect.ValueOf(obj)
	if !objVal.Type().AssignableTo(outVal.Type()) {
		return fmt.Errorf("cache had type %s, but %s was asked for", objVal.Type(), outVal.Type())
	}
	reflect.Indirect(outVal).Set(reflect.Indirect(objVal))
	if copied {
		out.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return nil
}

// List reads the objects of list's kind that match opts into list, as Get
// reads one. A field selector must be exact matches on fields indexed with
// IndexField; a continue token is an error; Limit caps the items. A
// namespace outside the cache's is an error at once, as for Get; for a
// cluster-scoped kind, a namespace selects the objects of that namespace,
// none, as in controller-runtime.
func (c *Cache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	var listOpts client.ListOptions
	listOpts.ApplyOptions(opts)
	if listOpts.Continue != "" {
		return errors.New("continue list option is not supported by the cache")
	}
	gvk, err := apiutil.GVKForObject(list, c.config.scheme)
	if err != nil {
		return err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	var obj runtime.Object
	switch list.(type) {
	case runtime.Unstructured:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		obj = u
	case *metav1.PartialObjectMetadataList:
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		obj = m
	default:
		if obj, err = c.config.scheme.New(gvk); err != nil {
			return err
		}
	}
	if listOpts.Namespace != "" {
		if unknown, err := c.outside(ctx, entryKey{form: formOf(obj), gvk: gvk}, listOpts.Namespace); err != nil || unknown {
			if err == nil {
				err = unknownNamespaceList(listOpts.Namespace)
			}
			return err
		}
	}
	e, started, err := c.getEntry(ctx, gvk, obj, c.config.readerFailOnMissingInformer, true)
	if err != nil {
		return err
	}
	if !started {
		return &cache.ErrCacheNotStarted{}
	}
	// A kind not served yet (WithAPIDiscovery) has no slots: no objects.
	// Each slot is read with the namespaces reads are routed to now: a
	// slot that follows SetNamespaces may hold a namespace being added
	// or removed, which reads do not see yet, or any more.
	type read struct {
		si     *slotInformer
		routed []string
	}
	c.mu.RLock()
	var reads []read
	switch {
	case listOpts.Namespace != "" && e.namespaced && len(e.slots) > 0:
		si := e.slotOf(listOpts.Namespace)
		if si == nil {
			c.mu.RUnlock()
			return unknownNamespaceList(listOpts.Namespace)
		}
		reads = []read{{si: si}}
	default:
		for _, si := range e.slots {
			r := read{si: si}
			if si.follows && e.namespaced && listOpts.Namespace == "" {
				r.routed = si.namespaces
			}
			reads = append(reads, r)
		}
	}
	c.mu.RUnlock()
	var items []runtime.Object
	for _, r := range reads {
		more, err := r.si.list(gvk, &listOpts, r.routed, int64(len(items)))
		if err != nil {
			return err
		}
		items = append(items, more...)
	}
	if err := meta.SetList(list, items); err != nil {
		return err
	}
	list.SetContinue("continue-not-supported")
	return nil
}

// slotOf is the slot that holds namespace's objects: the slot of that
// namespace, else the one of every namespace (not configured otherwise),
// else none. The caller holds c.mu for reading.
func (e *entry) slotOf(namespace string) *slotInformer {
	var all *slotInformer
	for _, si := range e.slots {
		switch {
		case si.namespaces == nil:
			all = si
		case slices.Contains(si.namespaces, namespace):
			return si
		}
	}
	return all
}

// outside is unknownNamespace, but a namespace that SetNamespaces is
// adding is waited for, until that call has made it the cache's (reads
// then see its objects) or failed: the informers hand its objects to the
// handlers before, and a handler's read must not fail on them.
func (c *Cache) outside(ctx context.Context, key entryKey, namespace string) (bool, error) {
	unknown, err := c.unknownNamespace(key, namespace)
	if err != nil || !unknown {
		return unknown, err
	}
	c.mu.RLock()
	change := c.adding
	c.mu.RUnlock()
	if change == nil || !slices.Contains(change.added, namespace) {
		return true, nil
	}
	select {
	case <-change.done:
	case <-ctx.Done():
		return false, apierrors.NewTimeoutError(fmt.Sprintf("failed waiting for namespace %s, which SetNamespaces is adding, to sync", namespace), 0)
	}
	return c.unknownNamespace(key, namespace)
}

// unknownNamespace reports whether namespace is outside the namespaces
// the cache holds key's objects in: the kind is namespaced, and neither a
// slot of that namespace nor one of every namespace holds them. It builds
// no informer and waits for none; it asks the mapper for the kind's scope
// only for a namespace no slot holds, as controller-runtime's
// multi-namespace cache does. A kind the mapper does not know yet under
// WithAPIDiscovery is left to getEntry, which waits for it.
func (c *Cache) unknownNamespace(key entryKey, namespace string) (bool, error) {
	c.mu.RLock()
	e := c.entries[key]
	if e != nil && len(e.slots) > 0 {
		unknown := e.namespaced && e.slotOf(namespace) == nil
		c.mu.RUnlock()
		return unknown, nil
	}
	routed := c.config.plan(key.gvk).routes(namespace)
	c.mu.RUnlock()
	if routed {
		return false, nil
	}
	namespaced, err := apiutil.IsGVKNamespaced(key.gvk, c.config.mapper)
	if err != nil {
		if c.config.settings.APIDiscovery && meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, err
	}
	return namespaced, nil
}

// unknownNamespaceGet and unknownNamespaceList are controller-runtime's
// errors for a read outside the cache's namespaces, word for word.
func unknownNamespaceGet(key client.ObjectKey) error {
	return fmt.Errorf("unable to get: %v because of unknown namespace for the cache", key)
}

func unknownNamespaceList(namespace string) error {
	return fmt.Errorf("unable to list: %v because of unknown namespace for the cache", namespace)
}

// list returns the slot's objects that match opts, at most opts.Limit
// less have (when Limit is set); only those of the routed namespaces when
// routed is not nil.
func (si *slotInformer) list(gvk schema.GroupVersionKind, opts *client.ListOptions, routed []string, have int64) ([]runtime.Object, error) {
	indexer := si.informer.GetIndexer()
	var objs []any
	var err error
	switch {
	case opts.FieldSelector != nil:
		if !exactMatches(opts.FieldSelector) {
			return nil, errors.New("non-exact field matches are not supported by the cache")
		}
		objs, err = byIndexes(indexer, opts.FieldSelector.Requirements(), opts.Namespace)
	case opts.Namespace != "":
		objs, err = indexer.ByIndex(toolscache.NamespaceIndex, opts.Namespace)
	default:
		objs = indexer.List()
	}
	if err != nil {
		return nil, err
	}
	copied := !si.config.unsafeDisableDeepCopy && !derefTrue(opts.UnsafeDisableDeepCopy)
	out := make([]runtime.Object, 0, len(objs))
	for _, item := range objs {
		if opts.Limit > 0 && have+int64(len(out)) >= opts.Limit {
			break
		}
		obj, ok := item.(runtime.Object)
		if !ok {
			return nil, fmt.Errorf("cache contained %T, which is not an Object", item)
		}
		if opts.LabelSelector != nil || routed != nil {
			m, err := meta.Accessor(obj)
			if err != nil {
				return nil, err
			}
			if routed != nil && !slices.Contains(routed, m.GetNamespace()) {
				continue
			}
			if opts.LabelSelector != nil && !opts.LabelSelector.Matches(labels.Set(m.GetLabels())) {
				continue
			}
		}
		if copied {
			obj = obj.DeepCopyObject()
			obj.GetObjectKind().SetGroupVersionKind(gvk)
		}
		out = append(out, obj)
	}
	return out, nil
}

// exactMatches is whether sel is one or more field equalities, the only
// selectors an index answers.
func exactMatches(sel fields.Selector) bool {
	reqs := sel.Requirements()
	if len(reqs) == 0 {
		return false
	}
	for _, r := range reqs {
		if r.Operator != selection.Equals && r.Operator != selection.DoubleEquals {
			return false
		}
	}
	return true
}

// byIndexes returns the objects whose indexes of IndexField match every
// requirement, in namespace ("" for all).
func byIndexes(indexer toolscache.Indexer, reqs fields.Requirements, namespace string) ([]any, error) {
	objs, err := indexer.ByIndex(fieldIndexName(reqs[0].Field), indexKey(namespace, reqs[0].Value))
	if err != nil || len(objs) == 0 {
		return nil, err
	}
	indexers := indexer.GetIndexers()
	for _, r := range reqs[1:] {
		name, want := fieldIndexName(r.Field), indexKey(namespace, r.Value)
		index, ok := indexers[name]
		if !ok {
			return nil, fmt.Errorf("index with name %s does not exist", name)
		}
		kept := objs[:0:0]
		for _, obj := range objs {
			values, err := index(obj)
			if err != nil {
				return nil, err
			}
			if slices.Contains(values, want) {
				kept = append(kept, obj)
			}
		}
		if len(kept) == 0 {
			return nil, nil
		}
		objs = kept
	}
	return objs, nil
}

// IndexField indexes obj's kind by field, with the values extractValue
// returns, so that List can select on field; it builds the informer, but
// does not wait for it to sync.
func (c *Cache) IndexField(ctx context.Context, obj client.Object, field string, extractValue client.IndexerFunc) error {
	informer, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	return informer.AddIndexers(toolscache.Indexers{fieldIndexName(field): func(raw any) ([]string, error) {
		obj, ok := raw.(client.Object)
		if !ok {
			return nil, fmt.Errorf("object of type %T is not an Object", raw)
		}
		// Every value is indexed in the object's namespace and across all
		// namespaces, so that a List in one namespace and a List of all
		// both find it.
		ns := obj.GetNamespace()
		values := extractValue(obj)
		keys := make([]string, 0, 2*len(values))
		for _, v := range values {
			keys = append(keys, indexKey(ns, v))
		}
		if ns != "" {
			for _, v := range values {
				keys = append(keys, indexKey("", v))
			}
		}
		return keys, nil
	}})
}

// fieldIndexName is the name of IndexField's index of field, as
// controller-runtime names it.
func fieldIndexName(field string) string { return "field:" + field }

// indexKey is the key of value in namespace's part of a field index; ""
// is every namespace's.
func indexKey(namespace, value string) string {
	if namespace == "" {
		namespace = "__all_namespaces"
	}
	return namespace + "/" + value
}

func derefTrue(b *bool) bool { return b != nil && *b }
