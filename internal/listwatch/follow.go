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
	a := &f.absence
	list, watchFn, empty := r.List, r.Watch, r.empty
	r.List = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		var retry retryForbidden
		for {
			obj, err := list(ctx, opts)
			switch {
			case isForbidden(err):
				f.forbidden.deny(err)
				if err := retry.wait(ctx); err != nil {
					return nil, err
				}
				continue
			// A later page of a paged list is not retried: the pager
			// fails and the reflector lists again from the start.
			case opts.Continue == "" && a.notServed(err):
				f.forbidden.allow()
				a.set(true)
				if a.cached() && empty != nil {
					// The reflector replaces the cache with nothing:
					// its objects leave with delete events.
					return empty(), nil
				}
				if err := a.cfg.Discovery.Wait(ctx, a.cfg.Resource); err != nil {
					return nil, err
				}
				continue
			}
			if err == nil {
				f.forbidden.allow()
				a.set(false)
			}
			return obj, err
		}
	}
	r.Watch = func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		var retry retryForbidden
		for {
			w, err := watchFn(ctx, opts)
			switch {
			case isForbidden(err):
				f.forbidden.deny(err)
				if err := retry.wait(ctx); err != nil {
					return nil, err
				}
				continue
			case a.notServed(err):
				f.forbidden.allow()
				a.set(true)
				if a.cached() {
					// The reflector lists, which empties the cache.
					return nil, a.notServedError(err)
				}
				if err := a.cfg.Discovery.Wait(ctx, a.cfg.Resource); err != nil {
					return nil, err
				}
				continue
			}
			if err == nil {
				f.forbidden.allow()
				a.set(false)
			}
			return w, err
		}
	}
	return r
}
