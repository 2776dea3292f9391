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

// Package sharding splits the objects of a resource between the replicas of
// a controller with the API server's sharded list and watch (KEP-5866,
// feature gate ShardedListAndWatch: alpha since Kubernetes 1.36, so off by
// default in 1.36 and 1.37; beta, on by default, is planned for 1.38).
//
// # This package or k8s.io/apimachinery/pkg/sharding
//
// The two share a name. Import apimachinery's for selectors: its Selector
// interface is what the factory's WithShardSelector, ResourceOptions'
// ShardSelector and every informer's SetShardSelector take, as in
// client-go v0.38 (apimachinery v0.38 adds NewShardRangeSelector for the
// selector of one even shard). Import this one for what apimachinery does
// not have: the Lease-based [Membership] and its [Assign]ment, the [Range]
// arithmetic behind it ([Split], [Hash]), and [Selector], a set of ranges
// on one [Field] that [Selector.APISelector] turns into apimachinery's
// form. When a file needs both, import apimachinery's under another name:
//
//	apisharding "k8s.io/apimachinery/pkg/sharding"
//
// # Hash ranges and selectors
//
// The server places each object at the 64-bit FNV-1a hash of one field,
// [FieldUID] (metadata.uid, the default) or [FieldNamespace]
// (metadata.namespace), and filters a LIST or WATCH to the hash ranges of
// [metav1.ListOptions.ShardSelector]. A [Range] is a half-open range
// [Start, End) of that space; [Split] cuts the space into count equal
// ranges for any count; a [Selector] is a set of ranges on one field.
// [Selector.String] is the canonical wire form, byte for byte what
// k8s.io/apimachinery/pkg/sharding writes and what the server echoes in
// [metav1.ListMeta.ShardInfo]:
//
//	shardRange(object.metadata.uid, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')
//
// Bounds are "0x" and exactly 16 lowercase hex digits, and the end of the
// space is '0x10000000000000000'; the server rejects short forms such as
// '0x0' (kube-apiserver v1.37 answers HTTP 500 for an invalid selector,
// v1.38 HTTP 400).
// Several ranges are joined with " || ".
//
// A server without the feature gate ignores the selector and returns every
// object, so a sharded informer must also filter on the client:
// [Selector.Matches] applies the same hash to typed objects,
// unstructured objects, metadata-only objects and
// [cache.DeletedFinalStateUnknown] tombstones.
//
// # Lease-based assignment
//
// A [Membership] makes the replicas agree on who owns which range without
// a leader: each replica holds its own coordination.k8s.io/v1 Lease,
// labeled [LabelController] with the controller's name, and every replica
// computes the same [Assign]ment from the unexpired Leases: the sorted
// identities, member i of n owning Split(i, n). Subscribers get the new
// ranges when members join, leave or expire. The guarantees during a
// handover (how long a range may be owned twice, and never by nobody
// for longer than the lease duration plus one relist) are stated on
// [Membership].
package sharding
