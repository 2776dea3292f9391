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

package informer

import (
	"context"
	"sync"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/meter"
)

// Run is the running of one informer a factory holds. The factory's Start
// starts it, under the factory's lock; each informer runs under a context
// of its own, so that RemoveInformer can stop it alone.
type Run struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// Start runs informer in wg, under a context of its own derived from ctx,
// and calls stopMetrics, if set, once it has returned. A refused informer
// is counted as started, so that WaitForCacheSync and Ready report it,
// but never runs.
func (r *Run) Start(ctx context.Context, wg *sync.WaitGroup, informer cache.SharedIndexInformer, refused bool, stopMetrics func()) {
	ictx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	r.cancel, r.done = cancel, done
	if refused {
		close(done)
		return
	}
	wg.Go(func() {
		defer close(done)
		if stopMetrics != nil {
			defer stopMetrics()
		}
		informer.RunWithContext(ictx)
	})
}

// Done is closed once the informer has returned (at once for a refused
// one); nil until Start.
func (r *Run) Done() chan struct{} { return r.done }

// Remove ends an informer its factory no longer holds: it stops it with
// cause, if it was started, and waits until it has returned; then it drops
// its metrics (h) and empties its store, which releases the memory even if
// someone still holds the informer. name names it in the log.
func (r *Run) Remove(cause error, h *Hooks, informer cache.SharedIndexInformer, name any) {
	if r.cancel != nil {
		r.cancel(cause)
		<-r.done
	}
	h.Metrics.Drop()
	h.Budget.Close()
	if err := informer.GetStore().Replace(nil, ""); err != nil {
		klog.Background().Error(err, "Cannot empty the store of a removed informer", "informer", name)
	}
}

// StartMetrics makes the informer report into m, the metrics its factory's
// provider made for it, and returns the stop function of its event
// counting for Start; nil for a refused informer, which never runs, so
// its synced gauge stays 0. The counting handler goes on the informer
// itself, past the lag wrapping of base, the factory's wrapper (nil for
// one built by InformerFor's newFunc). name names it in the log.
func (h *Hooks) StartMetrics(m *meter.Informer, informer cache.SharedIndexInformer, base *Informer, refused bool, name any) func() {
	h.Metrics.Report(m)
	h.Metrics.OverBudget(h.Stopped() != nil)
	if refused {
		return nil
	}
	target := informer
	if base != nil {
		target = base.SharedIndexInformer
	}
	return h.Metrics.Start(target, informer.HasSyncedChecker().Done(), name)
}

// ShutDown releases, once the informers of a factory that shut down have
// returned, what they hold beyond their goroutines: their metrics series
// and the factory's (m), and their share of a memory budget, which other
// factories may share (crcache builds several from one option).
func ShutDown(hooks []*Hooks, m *meter.Factory) {
	ms := make([]*meter.Hooks, len(hooks))
	for i, h := range hooks {
		ms[i] = h.Metrics
		h.Budget.Close()
	}
	m.Drop(ms)
}
