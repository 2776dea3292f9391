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
	"math/rand/v2"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// This file makes an informer whose requests are forbidden (403: a grant
// not given yet, or revoked) retry them itself, at a bounded interval,
// instead of returning the error to client-go's reflector (WithAPIDiscovery).
//
// The reflector would log every failure and back off up to 30 s, with a
// jitter that makes it up to 60 s: a grant would take up to a minute to be
// noticed, and the log would grow by a line a minute per informer for as
// long as the grant is missing. Here a source that is forbidden reports it
// once (Config.Forbidden, which the informer logs and Ready names), retries
// after 1 s, doubling to at most ForbiddenMaxInterval, and reports once
// when a request succeeds again.
//
// The bound: RBAC decisions change as soon as the server's RBAC caches see
// the grant (well under a second), so the time to recover is the time to
// the next retry. 10 s keeps it well under a minute, and costs one request
// every 10 s per forbidden source, which the server rejects in its
// authorizer before any storage work; client-go's reflector, at its own
// bound, makes one every 30 to 60 s.

// ForbiddenMaxInterval is the longest wait between two requests of a source
// whose requests are forbidden; each wait adds up to a tenth at random, so
// that many informers forbidden at once do not retry in step.
const ForbiddenMaxInterval = 10 * time.Second

// forbiddenFirstInterval is the first wait.
const forbiddenFirstInterval = time.Second

// forbidden is one source's view of whether its requests are forbidden.
type forbidden struct {
	cfg *Config
	on  atomic.Bool
}

// deny records err, a 403, and tells Config.Forbidden and Observe, once
// each time the source becomes forbidden.
func (f *forbidden) deny(err error) {
	if f.on.CompareAndSwap(false, true) && f.cfg.Forbidden != nil {
		f.cfg.Forbidden(err)
	}
	if f.cfg.Observe != nil {
		f.cfg.Observe(err)
	}
}

// allow records a request that was not forbidden.
func (f *forbidden) allow() {
	if f.on.CompareAndSwap(true, false) && f.cfg.Forbidden != nil {
		f.cfg.Forbidden(nil)
	}
}

// retryForbidden is the wait before each retry of one forbidden call.
type retryForbidden struct{ next time.Duration }

// wait waits before the next retry, or returns ctx's error.
func (r *retryForbidden) wait(ctx context.Context) error {
	if r.next == 0 {
		r.next = forbiddenFirstInterval
	}
	d := r.next + rand.N(r.next/10+1)
	r.next = min(2*r.next, ForbiddenMaxInterval)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// isForbidden reports a 403.
func isForbidden(err error) bool { return err != nil && apierrors.IsForbidden(err) }
