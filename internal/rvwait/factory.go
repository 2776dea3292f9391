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

package rvwait

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// This file is the factory's side of a wait: which of its informers of a
// resource to wait on, one after the other, and the errors that name
// them. The root package fills a Request from its registry.

// Entry is one informer of a factory, as a wait sees it.
type Entry struct {
	// Name names the informer in errors.
	Name string
	// Started is whether the factory has started it; Refused, if set, is
	// why it never will.
	Started bool
	Refused error
	// Done is closed once the informer has stopped; nil before Start.
	Done <-chan struct{}
	// Removed reports whether the informer was removed from its factory.
	Removed func() bool
	// Sources are its caches, one per namespace; Informer stands for all
	// of them when the factory added none (InformerFor's newFunc).
	Sources  *Sources
	Informer cache.SharedIndexInformer
	// Observe, if set, reports a wait that reached the informer.
	Observe func(start time.Time, failed bool)

	removedErr error // the Request's Removed
}

// Request is a wait on every informer of Resource in a factory.
type Request struct {
	Resource  schema.GroupVersionResource
	Namespace string
	// Entries are the factory's informers of Resource, in any order.
	Entries []Entry
	// Unknown is wrapped when there are no entries; Removed when an
	// informer is removed from its factory while it is waited on.
	Unknown, Removed error
}

// ErrStopped ends a wait on an informer that stopped while it waited.
var ErrStopped = errors.New("the informer stopped")

// ResourceVersion waits until every started informer of the request that
// covers its namespace reflects it at rv or later.
func (r Request) ResourceVersion(ctx context.Context, rv string) error {
	if err := Check(rv); err != nil {
		return fmt.Errorf("informers: waiting for %s at resource version %q: %w", r.Resource, rv, err)
	}
	return r.each(ctx, "at resource version "+rv, func(ctx context.Context, src *Source) error {
		_, err := src.Reached(ctx, rv)
		return err
	})
}

// Gone waits until every started informer of the request that covers its
// namespace no longer holds the object name (with uid, if set), or holds
// it marked for deletion.
func (r Request) Gone(ctx context.Context, name string, uid types.UID) error {
	key := name
	if r.Namespace != "" {
		key = r.Namespace + "/" + name
	}
	return r.each(ctx, "for the deletion of "+key, func(ctx context.Context, src *Source) error {
		return src.Gone(ctx, key, uid)
	})
}

// each runs wait on every source of every started informer that covers
// the namespace, one after the other (the call takes as long as the
// slowest), and reports each informer's wait.
func (r Request) each(ctx context.Context, what string, wait func(context.Context, *Source) error) error {
	start := time.Now()
	entries, err := r.waitable()
	if err != nil {
		return err
	}
	for _, e := range entries {
		for _, src := range e.Sources.All() {
			if !src.Covers(r.Namespace) {
				continue
			}
			if err := e.wait(ctx, src, wait); err != nil {
				e.observe(start, true)
				where := ""
				if src.Namespace() != "" {
					where = " in namespace " + src.Namespace()
				}
				return fmt.Errorf("informers: waiting for %s%s %s: %w", e.Name, where, what, err)
			}
		}
	}
	for _, e := range entries {
		e.observe(start, false)
	}
	return nil
}

func (e *Entry) observe(start time.Time, failed bool) {
	if e.Observe != nil {
		e.Observe(start, failed)
	}
}

// wait waits on one source of e, and ends the wait with an error if e
// stops meanwhile.
func (e *Entry) wait(ctx context.Context, src *Source, wait func(context.Context, *Source) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-e.Done:
			cancel(ErrStopped)
		case <-done:
		}
	}()
	err := wait(ctx, src)
	if err != nil && e.Removed != nil && e.Removed() {
		return fmt.Errorf("%w: %w", e.removedErr, err)
	}
	return err
}

// waitable returns the started informers that watch the namespace, or
// why there are none to wait on.
func (r Request) waitable() ([]*Entry, error) {
	if len(r.Entries) == 0 {
		return nil, fmt.Errorf("informers: waiting for %s: %w for it in this factory (ask for its informer and Start the factory first)", r.Resource, r.Unknown)
	}
	all := make([]*Entry, len(r.Entries))
	for i := range r.Entries {
		all[i] = &r.Entries[i]
		all[i].removedErr = r.Removed
	}
	slices.SortFunc(all, func(a, b *Entry) int { return strings.Compare(a.Name, b.Name) })
	var (
		started    []*Entry
		notStarted []string
		watched    = map[string]bool{}
	)
	for _, e := range all {
		if !e.Started {
			reason := "not started"
			if e.Refused != nil {
				reason = e.Refused.Error()
			}
			notStarted = append(notStarted, fmt.Sprintf("%s: %s", e.Name, reason))
			continue
		}
		select {
		case <-e.Done:
			return nil, fmt.Errorf("informers: waiting for %s: %w", e.Name, ErrStopped)
		default:
		}
		// An informer built by InformerFor's newFunc has no sources from
		// the build: the factory does not know its namespaces, and its
		// own cache stands for all of them.
		covered := false
		for _, src := range e.Sources.AllOr(e.Informer) {
			watched[src.Namespace()] = true
			covered = covered || src.Covers(r.Namespace)
		}
		if covered {
			started = append(started, e)
		}
	}
	switch {
	case len(started) > 0:
		return started, nil
	case len(watched) > 0:
		return nil, fmt.Errorf("informers: waiting for %s in namespace %q: no informer of it watches that namespace (they watch %s)", r.Resource, r.Namespace, strings.Join(slices.Sorted(maps.Keys(watched)), ", "))
	default:
		return nil, fmt.Errorf("informers: waiting for %s: no informer of it has been started: %s", r.Resource, strings.Join(notStarted, "; "))
	}
}
