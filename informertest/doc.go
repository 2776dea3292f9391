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

// Package informertest is a test kit for controllers whose informers come
// from this module's factories and run over client-go's fake clients: no
// sleeps, no polling, no flakes.
//
//   - [Settle] returns once every event of the writes a test made through
//     the fake clients has been delivered to every event handler of every
//     informer of the factory, and every handler has returned: the test
//     asserts right after it, exactly.
//   - [StampResourceVersions] makes a fake client give objects increasing
//     resource versions, as a server does, so that an update is not
//     taken for a resync and read-your-writes has something to compare.
//   - [Faults] makes a resource's watch end or expire (410 Gone), and
//     forbids a resource (403) and allows it again, so that a test reaches
//     the code paths production reaches: relists, Ready, SyncStatus.
//   - [ServeWatchList] makes the factory's informers over a fake get
//     their initial state from a watch-list stream and its end bookmark,
//     as from a server, instead of a LIST; [WatchList.Stall] drops the
//     bookmark, to reach the stalled-stream fallback.
//
// It works with the fakes users already build: fake.NewClientset and
// NewSimpleClientset of k8s.io/client-go/kubernetes/fake, the dynamic and
// metadata fakes, and the fake clientsets client-gen generates for a
// user's own types, unmodified. See docs/testing-controllers.md.
package informertest
