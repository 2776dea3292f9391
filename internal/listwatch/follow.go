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

package listwatch

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// follower makes the calls of an informer that follows the cluster
// (WithAPIDiscovery): it waits for a resource that is not served
// (absent.go) and retries forbidden calls at a bounded interval
// (forbidden.go), instead of handing either error to the reflector.
type follower struct {
	absence   absence
	forbidden forbidden
}

func newFollower(cfg *Config) *follower {
	return &follower{absence: absence{cfg: cfg}, forbidden: forbidden{cfg: cfg}}
}

// wrap returns r with its calls made as absent.go and forbidden.go say.
func (f *follower) wrap(r Requests) Requests {
	list, watchFn, empty := r.List, r.Watch, r.empty
	r.List = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return follow(ctx, f,
			func() (runtime.Object, error) { return list(ctx, opts) },
			// A later page of a paged list is not retried: the pager
			// fails and the reflector lists again from the start.
			func(err error) bool { return opts.Continue == "" && f.absence.notServed(err) },
			func(error) (runtime.Object, bool, error) {
				// The reflector replaces the cache with nothing: its
				// objects leave with delete events.
				return emptyList(empty)
			})
	}
	r.Watch = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return follow(ctx, f,
			func() (watch.Interface, error) { return watchFn(ctx, opts) },
			f.absence.notServed,
			func(err error) (watch.Interface, bool, error) {
				// The reflector lists, which empties the cache.
				return nil, true, f.absence.notServedError(err)
			})
	}
	return r
}

// emptyList returns an empty list of the client's type, if it is known.
func emptyList(empty func() runtime.Object) (runtime.Object, bool, error) {
	if empty == nil {
		return nil, false, nil
	}
	return empty(), true, nil
}

// follow makes one list or watch call: a forbidden call is made again
// after a bounded wait; a call for a resource that is not served
// (notServed) either returns what leave says, when the cache holds
// objects and leave has an answer, or waits until the resource is served
// and is made again.
func follow[T any](ctx context.Context, f *follower, call func() (T, error), notServed func(error) bool, leave func(error) (T, bool, error)) (T, error) {
	a := &f.absence
	var retry retryForbidden
	var zero T
	for {
		v, err := call()
		switch {
		case isForbidden(err):
			f.forbidden.deny(err)
			if err := retry.wait(ctx); err != nil {
				return zero, err
			}
			continue
		case notServed(err):
			f.forbidden.allow()
			a.set(true)
			if a.cached() {
				if v, ok, err := leave(err); ok {
					return v, err
				}
			}
			if err := a.cfg.Discovery.Wait(ctx, a.cfg.Resource); err != nil {
				return zero, err
			}
			continue
		}
		if err == nil {
			f.forbidden.allow()
			a.set(false)
		}
		return v, err
	}
}
