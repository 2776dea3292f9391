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

// Package crcache is controller-runtime's cache, backed by this module's
// informers: a drop-in for sigs.k8s.io/controller-runtime/pkg/cache.New that
// an operator's manager takes in one line,
//
//	mgr, err := manager.New(cfg, manager.Options{NewCache: crcache.New})
//
// [New] takes every field of [cache.Options] and behaves as
// controller-runtime's cache does: the same Get and List (selectors, field
// indexes, Limit, deep copies), the same informers of structured,
// unstructured and metadata-only objects, and the same errors (a read in a
// namespace outside the cache's is controller-runtime's "unknown namespace"
// error at once, before any informer is built). Each
// informer it builds is an informer of a [informers.Factory], so that what
// the factory adds (lean caches, the stalled-stream fallback, readiness that
// says why, metrics) applies to it; [NewCache] takes the factory's options
// for that. A setting that both [cache.Options] and those options make for
// the same resource (namespaces, selectors, transform, resync period) is an
// error from the [cache.NewCacheFunc], naming both.
//
// Metadata-only objects are of their kind from their list and watch on, as
// in controller-runtime, so that every transform sees the kind.
//
// Structured objects of any Go type registered in the scheme, the
// operator's own kubebuilder types included, are decoded once into their Go
// type, as controller-runtime does.
//
// The cache is a [*Cache]: beyond [cache.Cache] it has [Cache.Ready] and
// [Cache.ReadyzCheck] (for a manager's /readyz), [Cache.SyncStatus],
// [Cache.Notices], [Cache.SetNamespaces] (the cache's namespaces changed
// while the manager runs; it returns once the added namespaces have synced,
// and on a failure leaves the namespaces as they were) and
// [Cache.WaitForResourceVersion]. Under
// [informers.WithAPIDiscovery], a kind whose CRD is not installed yet is
// not an error: its informer waits for the kind, reporting synced, so that
// its controller starts and the manager runs; a [cache.ByObject] entry of
// such a kind is accepted, and its settings apply once the kind is served.
//
// [cache.Options].DefaultWatchErrorHandler gets each list and watch error
// after the factory has recorded it, so that [Cache.Ready] still names it;
// a resource not served under WithAPIDiscovery is no error and does not
// reach it. RemoveInformer returns without waiting for the informer to
// stop, so that its own event handlers may call it, and keeps nothing of
// it. Each informer's factory reports this module's metrics under a
// factory label made of the cache's name ([informers.WithInformerName]
// given to NewCache, else "crcache"), the form and the kind, the same on
// every run; that name also names the informers in client-go's metrics,
// and the cache releases it when Start returns. The repository's
// docs/controller-runtime.md says what stays the same, what differs, and
// what goes beyond controller-runtime's cache.
package crcache
