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

package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/sharding"
)

// replica is one member: its Lease, its factory and what it last logged.
type replica struct {
	id     string
	logger klog.Logger
	client kubernetes.Interface
	m      *sharding.Membership
	o      options

	factory  informers.Factory
	informer cache.SharedIndexInformer
	joined   bool             // the first assignment message is out
	members  []string         // as of the last assignment message
	owned    []sharding.Range // as of the last assignment message
	notices  map[string]bool  // already logged
}

// run runs the member until ctx ends, then releases its Lease.
func (r *replica) run(ctx context.Context, newFactory newFactoryFunc) error {
	factory, err := newFactory(informers.WithNamespace(r.o.namespace), informers.WithShardMembership(r.m, sharding.FieldUID))
	if err != nil {
		return err
	}
	gi, err := factory.ForResource(r.o.resource)
	if err != nil {
		return err
	}
	r.factory, r.informer, r.notices = factory, gi.Informer(), map[string]bool{}
	// A real controller adds its event handlers here and feeds a workqueue.

	assignments, unsubscribe := r.m.Subscribe()
	defer unsubscribe()
	if err := r.m.Start(ctx); err != nil {
		return fmt.Errorf("writing Lease %s/%s: %w", r.o.leaseNamespace, r.m.LeaseName(), err)
	}
	defer r.release()
	fctx, cancel := context.WithCancel(ctx)
	factory.Start(fctx.Done())
	defer func() { cancel(); factory.Shutdown() }()

	tick := time.NewTicker(r.o.report)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			r.logger.Info("Stopping; releasing the Lease, so that the others take over at once")
			return nil
		case owned, ok := <-assignments:
			if !ok {
				return nil
			}
			r.assignmentChanged(ctx, "Shard assignment changed", owned)
		case <-tick.C:
			r.report(ctx)
		}
	}
}

// release deletes this member's Lease: a graceful handover.
func (r *replica) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.m.Stop(ctx); err != nil {
		r.logger.Error(err, "Could not release the Lease; the others take over once it expires",
			"lease", r.o.leaseNamespace+"/"+r.m.LeaseName(), "expiresAfter", r.o.leaseDuration.String())
	}
}

// assignmentChanged logs who joined, left or expired since the last
// message, and what this replica owns now.
func (r *replica) assignmentChanged(ctx context.Context, msg string, owned []sharding.Range) {
	members := r.m.Members()
	change := describeChange(r.id, !r.joined, r.members, members, func(id string) string { return r.whyGone(ctx, id) })
	r.joined, r.members, r.owned = true, members, owned
	r.logger.Info(msg, "change", change, "owns", formatRanges(owned), "members", strings.Join(members, ", "))
}

// report logs the cache size, any new notice of the factory, and a change
// of members that left this replica's ranges as they were (one that moved
// them is logged when the new ranges arrive).
func (r *replica) report(ctx context.Context) {
	// Members first: the membership updates both at once, so ranges read
	// after the new members are at least as new.
	if members, owned := r.m.Members(), r.m.Ranges(); !slices.Equal(members, r.members) && slices.Equal(owned, r.owned) {
		r.assignmentChanged(ctx, "Members changed; the ranges of this replica did not", owned)
	}
	ready := "yes"
	if err := r.factory.Ready(); err != nil {
		ready = "no: " + err.Error()
	}
	r.logger.Info("Cache size", "resource", resourceName(r.o.resource), "objects", len(r.informer.GetStore().ListKeys()),
		"owns", formatRanges(r.m.Ranges()), "ready", ready)
	for _, notice := range r.factory.Notices() {
		if !r.notices[notice] {
			r.notices[notice] = true
			r.logger.Info("Notice: the informers work, but an operator should know", "notice", notice)
		}
	}
}

// whyGone says why a member is no longer live: a member that stopped
// gracefully deleted its Lease; one that crashed left it to expire.
func (r *replica) whyGone(ctx context.Context, id string) string {
	name := r.o.controller + "-" + id
	lease, err := r.client.CoordinationV1().Leases(r.o.leaseNamespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return id + " left (released its Lease)"
	case err != nil:
		return fmt.Sprintf("%s left or expired (reading its Lease: %v)", id, err)
	case lease.Spec.RenewTime != nil:
		return fmt.Sprintf("%s expired (its Lease was last renewed %s ago)", id, time.Since(lease.Spec.RenewTime.Time).Round(time.Second))
	}
	return id + " expired"
}

// describeChange says how the members changed from old to now, for the
// replica self; gone explains why a member left. The first message of a
// replica is its own joining.
func describeChange(self string, first bool, old, now []string, gone func(id string) string) string {
	var parts []string
	if first {
		parts = append(parts, "this replica joined")
	}
	for _, id := range now {
		switch {
		case first || slices.Contains(old, id):
		case id == self:
			parts = append(parts, "this replica is live again (it renewed its Lease)")
		default:
			parts = append(parts, id+" joined")
		}
	}
	for _, id := range old {
		switch {
		case slices.Contains(now, id):
		case id == self:
			parts = append(parts, "this replica is not live: it could not renew its Lease, and owns nothing until it does")
		default:
			parts = append(parts, gone(id))
		}
	}
	if len(parts) == 0 {
		return "none in the members; the ranges were recomputed"
	}
	return strings.Join(parts, "; ")
}

// formatRanges writes ranges in the bounds a shard selector sends, and
// their share of the hash space: "[0x0000000000000000,
// 0x8000000000000000), 50% of the hash space".
func formatRanges(ranges []sharding.Range) string {
	if len(ranges) == 0 {
		return "nothing"
	}
	const space = 1 << 64 // as a float constant
	var size float64
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = r.String()
		if r.End == 0 {
			size += space - float64(r.Start)
		} else {
			size += float64(r.End - r.Start)
		}
	}
	share := fmt.Sprintf("%.3g%% of the hash space", 100*size/space)
	if size == space {
		share = "the whole hash space"
	}
	return strings.Join(parts, ", ") + ", " + share
}
