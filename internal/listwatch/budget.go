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
	"errors"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeinformers/informers/internal/budget"
)

// This file keeps an informer within its memory budget (internal/budget),
// where its objects pass: each page of a LIST once the pretransform made it
// what the cache will hold, each object of a watch-list stream as it
// arrives, and each watch event that adds or deletes an object. The
// informer stops before its estimate would pass the budget:
//   - a LIST returns the error before the reflector has the whole list, so
//     the pages gathered so far become garbage;
//   - a watch (stream or not) ends with an error event, so the reflector
//     drops a stream's objects, and lists;
//   - that list, and every later one, empties the cache, makes no request
//     and waits until the budget is raised or the informer narrowed
//     (Account.Retry); then it lists, counting again.
//
// A budget is checked only when one applies (Account.Limited) as the watch
// starts: a factory without one wraps no watch.

// StatusReasonOverBudget is the reason of the error event that ends the
// watch of an informer stopped over its memory budget.
const StatusReasonOverBudget metav1.StatusReason = "OverMemoryBudget"

// sampleFirst is how many objects of the first pages are measured when the
// informer's meter has measured none yet: a LIST's objects reach the
// informer's transform, where the meter sees them, only once the whole
// list is in.
const sampleFirst = 16

// budgeted is one source's (namespace's) side of its informer's budget.
type budgeted struct {
	cfg *Config
	a   *budget.Account
	// listed counts the objects of the list being gathered; the reflector
	// requests its pages one after the other.
	mu     sync.Mutex
	listed int
}

func newBudgeted(cfg *Config) *budgeted {
	if cfg.Budget == nil {
		return nil
	}
	return &budgeted{cfg: cfg, a: cfg.Budget}
}

// beforeList waits, before the first page of a list, while the informer is
// stopped, having emptied its cache; it reports whether it was stopped.
func (b *budgeted) beforeList(ctx context.Context, opts *metav1.ListOptions) (bool, error) {
	if b == nil || opts.Continue != "" {
		return false, nil
	}
	b.mu.Lock()
	b.listed = 0
	b.mu.Unlock()
	stopped := b.a.Stopped() != nil
	return stopped, b.a.Wait(ctx, b.release)
}

// release empties the source's cache, bypassing handlers: the informer's
// reads say why it has nothing (Account.Stopped).
func (b *budgeted) release() {
	if b.cfg.Store == nil {
		return
	}
	if store := b.cfg.Store(); store != nil {
		n := len(store.ListKeys())
		_ = store.Replace(nil, "") // a store's Replace of nothing does not fail
		if b.cfg.Released != nil {
			b.cfg.Released(n) // no handler saw them go: the metrics must
		}
	}
}

// page counts the objects of one page of a list, as the cache will hold
// them, against the budget.
func (b *budgeted) page(first bool, list runtime.Object) error {
	if b == nil {
		return nil
	}
	n := meta.LenList(list)
	if m := b.a.Meter(); b.final() && m != nil && m.Observed() < sampleFirst && n > 0 {
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			if m.Observed() >= sampleFirst {
				return errSampled
			}
			m.Observe(o)
			return nil
		})
	}
	b.mu.Lock()
	if first {
		b.listed = 0
	}
	b.listed += n
	listed := b.listed
	b.mu.Unlock()
	return b.a.Set(b.cfg.Namespace, listed)
}

// sample measures obj, an object that arrived whole, while the meter has
// measured too few to estimate: a stream's objects reach the informer's
// transform, where the meter sees them, only after this layer.
func (b *budgeted) sample(obj any) {
	if m := b.a.Meter(); m != nil && b.final() && m.Observed() < sampleFirst {
		m.Observe(obj)
	}
}

// errSampled ends the walk of a page once enough objects were measured.
var errSampled = errors.New("sampled")

// final is whether the objects of a list page are as the cache will hold
// them: the pretransform made them so, or there is no factory transform.
// (A transform set later with SetTransform sees them whole: they are then
// measured larger than cached, which stops the informer early, not late.)
func (b *budgeted) final() bool {
	return b.cfg.Pretransform == nil || !b.cfg.Pretransform.stopped.Load()
}

// watch wraps w, the informer's watch (a watch-list stream if stream), to
// count the objects its events add and remove, when a budget applies.
func (b *budgeted) watch(ctx context.Context, w watch.Interface, stream bool) watch.Interface {
	if b == nil || !b.a.Limited() {
		return w
	}
	bw := &budgetWatch{b: b, inner: w, out: make(chan watch.Event), stop: make(chan struct{}), stream: stream}
	go bw.run(ctx, b.a.Done())
	return bw
}

// stoppedWatch is the error of a watch request of a stopped informer: a
// watch-list stream then falls back to the list, which waits.
func (b *budgeted) stoppedWatch() error {
	if b == nil {
		return nil
	}
	return b.a.Stopped()
}

type budgetWatch struct {
	b       *budgeted
	inner   watch.Interface
	out     chan watch.Event
	stop    chan struct{}
	stopped sync.Once
	stream  bool
}

func (w *budgetWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *budgetWatch) Stop() {
	w.stopped.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}

// run forwards events, counting them: during a stream's initial events
// each object is one more of the stream's; after them, or on a plain
// watch, an addition is one more and a deletion one less. An event that
// would pass the budget is not passed on: the watch ends with an error
// event instead, as it does when the informer stops for another source.
func (w *budgetWatch) run(ctx context.Context, stopped <-chan struct{}) {
	defer close(w.out)
	in := w.inner.ResultChan()
	initial := w.stream
	n := 0
	for {
		var ev watch.Event
		var ok bool
		select {
		case ev, ok = <-in:
			if !ok {
				return
			}
		case <-stopped:
			w.end(ctx, w.b.a.Stopped())
			return
		case <-w.stop:
			return
		}
		var err error
		if ev.Type == watch.Added {
			w.b.sample(ev.Object)
		}
		switch {
		case initial && ev.Type == watch.Added:
			n++
			err = w.b.a.Set(w.b.cfg.Namespace, n)
		case initial && ev.Type == watch.Bookmark && isEndBookmark(ev):
			initial = false
		case ev.Type == watch.Added:
			err = w.b.a.Add(w.b.cfg.Namespace, 1)
		case ev.Type == watch.Deleted:
			err = w.b.a.Add(w.b.cfg.Namespace, -1)
		}
		if err != nil {
			w.end(ctx, err)
			return
		}
		select {
		case w.out <- ev:
		case <-w.stop:
			return
		}
	}
}

// end stops the inner watch and sends the error event that makes the
// reflector list.
func (w *budgetWatch) end(ctx context.Context, err error) {
	w.inner.Stop()
	msg := "the informer stopped over its memory budget"
	if err != nil {
		msg = err.Error()
	}
	status := &metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusInsufficientStorage,
		Reason:  StatusReasonOverBudget,
		Message: msg,
	}
	select {
	case w.out <- watch.Event{Type: watch.Error, Object: status}:
	case <-w.stop:
	case <-ctx.Done():
	}
}
