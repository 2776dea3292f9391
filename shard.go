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

	apisharding "k8s.io/apimachinery/pkg/sharding"

	"github.com/kubeinformers/informers/internal/informer"
	"github.com/kubeinformers/informers/internal/optcheck"
	"github.com/kubeinformers/informers/internal/shard"
	"github.com/kubeinformers/informers/sharding"
)

// This file holds the factory's sharding: each replica of a controller
// caches only a slice of the objects, chosen by a 64-bit hash of their UID
// (or namespace). The slice is sent to the API server as
// metav1.ListOptions.ShardSelector (KEP-5866, the ShardedListAndWatch
// feature of the API server), so
// the server filters both LIST and WATCH; and every object received is
// checked again on the client with the same hash, so a server without the
// feature, which ignores the selector, still yields exactly the shard.
//
// One concept, client-go's shard selector (v0.38's WithShardSelector and
// SharedInformer.SetShardSelector), has several ways in:
//
//   - WithShardSelector: any selector, sent as given;
//   - WithShard(field, index, count): the selector of one even shard of the
//     hash of field (sharding.NewShardRangeSelector in apimachinery v0.38);
//   - WithShardMembership(m, field): the ranges of the hash of field that a
//     Lease-based membership assigns, moving as it changes;
//   - ResourceOptions.ShardSelector: one resource's own selector;
//   - SetShardSelector on an informer before it starts: that informer's.
//
// A factory takes at most one of the first three; the last two override
// it, for one resource or one informer. This file holds the options, the
// shard sources and how an informer follows one; the membership's health
// check is internal/informer/shardhealth.go.

// WithShardSelector shards every informer of the factory, of every form and
// in every namespace, by shardSelector, as client-go v0.38's option of the
// same name: each list and watch sends shardSelector.String() exactly as
// given, and each informer keeps only the objects the selector matches,
// also when the server ignores it (see [Factory.Notices]).
//
// A nil or empty selector ([apisharding.Everything]) means no sharding.
// Giving it together with [WithShard] or [WithShardMembership] is an
// error from [New]. A selector the server
// rejects (for example one with two keys) leaves the informers unsynced,
// and [Factory.Ready] names each with the server's message.
func WithShardSelector(shardSelector apisharding.Selector) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		option := "WithShardSelector(nil)"
		if shardSelector != nil {
			option = fmt.Sprintf("WithShardSelector(%q)", shardSelector.String())
		}
		factory.setShard(option, shard.Static(shardSelector, false, 0), optcheck.Every)
		return factory
	}
}

// WithShard shards every informer of the factory by a 64-bit hash of
// field: the informers of replica index (0-based) of count cache only the
// objects in that replica's even slice of the hash space. field is
// [sharding.FieldUID] (object.metadata.uid, the even spread) or
// [sharding.FieldNamespace] (all objects of a namespace land on one
// replica), as for [WithShardMembership]. It is [WithShardSelector] with
// the selector of sharding.NewShardRangeSelector(field, index, count) of
// apimachinery v0.38 ([sharding.ForShard] here), byte for byte, except
// that with the namespace hash it leaves cluster-scoped informers
// unsharded: their objects have no namespace, and would all land on one
// replica.
//
// An unknown field, a count below 1, or an index outside [0, count), is an
// error from [New]; under the other constructors no informer it would
// shard runs.
func WithShard(field sharding.Field, index, count int) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		option := fmt.Sprintf("WithShard(%s, %d, %d)", optcheck.FieldName(field), index, count)
		refuses := optcheck.Sharded(field)
		sel, err := sharding.ForShard(field, index, count)
		if err != nil {
			factory.invalidNarrowing(fmt.Errorf("%s: %w", option, err), refuses)
			return factory
		}
		factory.setShard(option, shard.Static(sel.APISelector(), field == sharding.FieldNamespace, count), refuses)
		return factory
	}
}

// WithShardMembership shards every informer of the factory by the ranges a
// Lease-based [sharding.Membership] assigns this replica, on field (the
// UID or the namespace hash). When the membership changes, each informer
// hands over inside its watch, without listing again: it lists only the
// ranges gained, delivered to handlers as adds, and delivers the objects
// of the ranges given up as deletes (cache.DeletedFinalStateUnknown, as a
// relist would); events of the ranges kept keep flowing. Until the first
// assignment, and while the replica owns no range, the informers cache
// nothing and send no request. As with [WithShard], field
// [sharding.FieldNamespace] leaves cluster-scoped informers unsharded.
//
// The caller starts the membership (m.Start) and stops it (m.Stop) around
// the factory's life; the factory follows its assignments from Start on.
// When the membership stops, by Stop or because its context ended, the
// factory owns nothing from then on: its objects leave as deletes and its
// sharded informers send no further request. So the order of shutdown is
// free; m.Stop before the factory's Shutdown is the graceful one (the
// Lease is released and the others take over at once), and after a
// canceled context the others take over at the Lease's expiry.
//
// A replica that cannot serve its share gives it up: the factory registers
// a health check with m ([sharding.Membership.AddHealthCheck]) that fails
// while any informer following the membership is failing (what
// [Factory.Ready] reports: a list or watch that fails, such as a resource
// that is forbidden or does not exist). Once it has failed at every
// renewal for [sharding.MembershipConfig.HealthGrace] (by default the
// lease duration), the replica publishes itself not ready and the others
// take its ranges; it takes a share again at the first renewal at which
// the check passes. If every replica fails, none gives up its share. The
// rule and its bounds are in the Health section of [sharding.Membership].
func WithShardMembership(m *sharding.Membership, field sharding.Field) SharedInformerOption {
	return func(factory *sharedInformerFactory) *sharedInformerFactory {
		const option = "WithShardMembership"
		refuses := optcheck.Sharded(field)
		if m == nil {
			factory.invalidNarrowing(errors.New("WithShardMembership: the *sharding.Membership is nil"), refuses)
			return factory
		}
		if err := field.Validate(); err != nil {
			factory.invalidNarrowing(fmt.Errorf("%s: %w", option, err), refuses)
			return factory
		}
		src := shard.Membership(field)
		if factory.setShard(option, src, refuses) {
			factory.membership = m
			m.AddHealthCheck(func() error { return informer.ShardHealth(factory.startedInformers()) }) // internal/informer/shardhealth.go
		}
		return factory
	}
}

// setShard makes src (nil: no sharding) the factory-wide shard, given by
// option. A second shard option is an error: combining two would either
// widen or silently narrow what the first asked for.
func (o *factoryOptions) setShard(option string, src *shard.Source, refuses optcheck.Refuses) bool {
	if o.shardOption != "" {
		o.invalidNarrowing(fmt.Errorf("%s: the factory is already sharded by %s; give one of WithShardSelector, WithShard and WithShardMembership", option, o.shardOption), refuses)
		return false
	}
	o.shardOption, o.shard = option, src
	return true
}
