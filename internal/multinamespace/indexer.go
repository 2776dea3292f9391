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

package multinamespace

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
)

// indexer is one [cache.Indexer] over the indexers of the namespaces'
// informers. Namespaces are disjoint, so a concatenation of the
// namespaces' answers is exactly what one indexer holding every object
// would answer; where the key or the namespace index names the namespace,
// only that namespace's indexer is asked, which keeps a lister's
// Pods(ns).List and Get as cheap as on a single informer.
//
// The namespaces are those of the composite's current view, loaded once
// per call: SetNamespaces replaces the view, never changes it.
type indexer struct {
	view  *atomic.Pointer[view]
	owner *Informer
}

var _ cache.Indexer = &indexer{}

// namespaceOfKey returns the namespace part of a "namespace/name" key, ""
// for a cluster-scoped key. It does not allocate.
func namespaceOfKey(key string) string {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return ""
}

// route returns the indexer of obj's namespace, nil if that namespace is
// not in the set, and the object's key for error messages.
func (x *view) route(obj interface{}) (cache.Indexer, string, error) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, "", err
	}
	return x.byNS[namespaceOfKey(key)], key, nil
}

func (x *view) notInSet(key string) error {
	return fmt.Errorf("object %q is not in one of the informer's namespaces %v", key, x.namespaces)
}

// Add adds obj to its namespace's indexer; an object of another namespace
// is an error, since no watch would ever update or delete it.
func (ix *indexer) Add(obj interface{}) error {
	x := ix.view.Load()
	sub, key, err := x.route(obj)
	if err != nil {
		return err
	}
	if sub == nil {
		return x.notInSet(key)
	}
	return sub.Add(obj)
}

// Update updates obj in its namespace's indexer; an object of another
// namespace is an error, as for Add.
func (ix *indexer) Update(obj interface{}) error {
	x := ix.view.Load()
	sub, key, err := x.route(obj)
	if err != nil {
		return err
	}
	if sub == nil {
		return x.notInSet(key)
	}
	return sub.Update(obj)
}

// Delete deletes obj from its namespace's indexer. An object of another
// namespace cannot be stored, so deleting it does nothing, as deleting an
// absent object does on a single store.
func (ix *indexer) Delete(obj interface{}) error {
	x := ix.view.Load()
	sub, _, err := x.route(obj)
	if err != nil || sub == nil {
		return err
	}
	return sub.Delete(obj)
}

// List returns the objects of every namespace.
func (ix *indexer) List() []interface{} {
	x := ix.view.Load()
	if len(x.subs) == 1 {
		return x.subs[0].List()
	}
	parts := make([][]interface{}, len(x.subs))
	n := 0
	for i, s := range x.subs {
		parts[i] = s.List()
		n += len(parts[i])
	}
	out := make([]interface{}, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// ListKeys returns the keys of every namespace's objects.
func (ix *indexer) ListKeys() []string {
	x := ix.view.Load()
	if len(x.subs) == 1 {
		return x.subs[0].ListKeys()
	}
	parts := make([][]string, len(x.subs))
	n := 0
	for i, s := range x.subs {
		parts[i] = s.ListKeys()
		n += len(parts[i])
	}
	out := make([]string, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Get returns the object with obj's key from obj's namespace; an object of
// a namespace outside the set is not found.
func (ix *indexer) Get(obj interface{}) (interface{}, bool, error) {
	x := ix.view.Load()
	sub, _, err := x.route(obj)
	if err != nil || sub == nil {
		return nil, false, err
	}
	return sub.Get(obj)
}

// GetByKey returns the object with key from the key's namespace; a key of
// a namespace outside the set (or a cluster-scoped key) is not found.
func (ix *indexer) GetByKey(key string) (interface{}, bool, error) {
	x := ix.view.Load()
	sub := x.byNS[namespaceOfKey(key)]
	if sub == nil {
		return nil, false, nil
	}
	return sub.GetByKey(key)
}

// Replace replaces the contents of every namespace's indexer with the
// objects of list in that namespace (an empty part empties it), all at
// resourceVersion. An object of another namespace fails the whole call
// before anything changes.
func (ix *indexer) Replace(list []interface{}, resourceVersion string) error {
	x := ix.view.Load()
	parts := make(map[string][]interface{}, len(x.subs))
	for _, obj := range list {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return err
		}
		ns := namespaceOfKey(key)
		if x.byNS[ns] == nil {
			return x.notInSet(key)
		}
		parts[ns] = append(parts[ns], obj)
	}
	var errs []error
	for i, s := range x.subs {
		if err := s.Replace(parts[x.namespaces[i]], resourceVersion); err != nil {
			errs = append(errs, fmt.Errorf("namespace %q: %w", x.namespaces[i], err))
		}
	}
	return errors.Join(errs...)
}

// Resync resyncs every namespace's indexer.
func (ix *indexer) Resync() error {
	x := ix.view.Load()
	var errs []error
	for i, s := range x.subs {
		if err := s.Resync(); err != nil {
			errs = append(errs, fmt.Errorf("namespace %q: %w", x.namespaces[i], err))
		}
	}
	return errors.Join(errs...)
}

// Bookmark records resourceVersion in every namespace's indexer.
func (ix *indexer) Bookmark(resourceVersion string) {
	x := ix.view.Load()
	for _, s := range x.subs {
		s.Bookmark(resourceVersion)
	}
}

// LastStoreSyncResourceVersion returns the lowest of the namespaces'
// values, with the rules of [Informer.LastSyncResourceVersion].
func (ix *indexer) LastStoreSyncResourceVersion() string {
	x := ix.view.Load()
	return lowestResourceVersion(len(x.subs), func(i int) string { return x.subs[i].LastStoreSyncResourceVersion() })
}

// namespaceIndexValue returns the namespace that the namespace index maps
// obj to, if that index exists and gives exactly one value.
func (x *view) namespaceIndexValue(obj interface{}) (string, bool) {
	if len(x.subs) == 0 {
		return "", false
	}
	f, ok := x.subs[0].GetIndexers()[cache.NamespaceIndex]
	if !ok {
		return "", false
	}
	values, err := f(obj)
	if err != nil || len(values) != 1 {
		return "", false
	}
	return values[0], true
}

// hasIndex reports whether the namespaces' indexers have the index name.
func (x *view) hasIndex(name string) bool {
	if len(x.subs) == 0 {
		return false
	}
	_, ok := x.subs[0].GetIndexers()[name]
	return ok
}

func noIndex(name string) error {
	// The wording of client-go's storeIndex, for callers that match it.
	return fmt.Errorf("Index with name %s does not exist", name)
}

// Index returns the objects that share an indexed value with obj. For the
// namespace index (what a lister's Pods(ns).List uses) only obj's
// namespace is asked; otherwise every namespace is.
func (ix *indexer) Index(indexName string, obj interface{}) ([]interface{}, error) {
	x := ix.view.Load()
	if indexName == cache.NamespaceIndex {
		if ns, ok := x.namespaceIndexValue(obj); ok {
			if sub := x.byNS[ns]; sub != nil {
				return sub.Index(indexName, obj)
			}
			return []interface{}{}, nil
		}
	}
	return gather(x, indexName, func(s cache.Indexer) ([]interface{}, error) { return s.Index(indexName, obj) })
}

// ByIndex returns the objects whose indexed values include indexedValue.
// For the namespace index only that namespace is asked.
func (ix *indexer) ByIndex(indexName, indexedValue string) ([]interface{}, error) {
	x := ix.view.Load()
	if indexName == cache.NamespaceIndex && x.hasIndex(indexName) {
		if sub := x.byNS[indexedValue]; sub != nil {
			return sub.ByIndex(indexName, indexedValue)
		}
		return []interface{}{}, nil
	}
	return gather(x, indexName, func(s cache.Indexer) ([]interface{}, error) { return s.ByIndex(indexName, indexedValue) })
}

// IndexKeys returns the keys of the objects whose indexed values include
// indexedValue, sorted as client-go's are.
func (ix *indexer) IndexKeys(indexName, indexedValue string) ([]string, error) {
	x := ix.view.Load()
	if indexName == cache.NamespaceIndex && x.hasIndex(indexName) {
		if sub := x.byNS[indexedValue]; sub != nil {
			return sub.IndexKeys(indexName, indexedValue)
		}
		return []string{}, nil
	}
	out, err := gather(x, indexName, func(s cache.Indexer) ([]string, error) { return s.IndexKeys(indexName, indexedValue) })
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// gather asks every namespace's indexer and joins the answers. Like
// client-go's, an empty answer is an empty slice, not nil; with no namespace
// there is no index at all.
func gather[T any](x *view, indexName string, ask func(cache.Indexer) ([]T, error)) ([]T, error) {
	switch len(x.subs) {
	case 0:
		return nil, noIndex(indexName)
	case 1:
		return ask(x.subs[0])
	}
	out := []T{}
	for _, s := range x.subs {
		part, err := ask(s)
		if err != nil {
			return nil, err
		}
		out = append(out, part...)
	}
	return out, nil
}

// ListIndexFuncValues returns the values of the index in any namespace,
// each once, sorted.
func (ix *indexer) ListIndexFuncValues(indexName string) []string {
	x := ix.view.Load()
	if len(x.subs) == 1 {
		return x.subs[0].ListIndexFuncValues(indexName)
	}
	var out []string
	for _, s := range x.subs {
		out = append(out, s.ListIndexFuncValues(indexName)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// GetIndexers returns the indexers, which are the same in every namespace.
func (ix *indexer) GetIndexers() cache.Indexers {
	x := ix.view.Load()
	if len(x.subs) == 0 {
		return cache.Indexers{}
	}
	return x.subs[0].GetIndexers()
}

// AddIndexers adds indexers in every namespace, and in those added later:
// it is the composite's AddIndexers.
func (ix *indexer) AddIndexers(newIndexers cache.Indexers) error {
	return ix.owner.AddIndexers(newIndexers)
}
