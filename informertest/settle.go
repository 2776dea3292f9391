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

package informertest

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubeinformers/informers/gensupport"
	"github.com/kubeinformers/informers/internal/settle"
)

// Factory is any factory of this module, as a test has it: the Factory
// of [github.com/kubeinformers/informers.New] and NewForConfig, the
// SharedInformerFactory of the client-go compatible constructors, the
// factories of the dynamicinformer and metadatainformer packages, and the
// factories kubeinformers-gen generates for a user's own types. Each has
// these methods; Settle finds the rest itself.
type Factory interface {
	Start(stopCh <-chan struct{})
	Shutdown()
}

// ErrNotFake is wrapped by the error of [Settle] for an informer it cannot
// follow: one whose client is not one of client-go's fakes, or one built
// by InformerFor's newFunc.
var ErrNotFake = errors.New("informertest: Settle follows informers over client-go's fake clients only")

// Settle returns nil once every event caused by the writes made through
// the factory's fake clients before the call has been delivered to every
// event handler of every informer of the factory, and every handler has
// returned from it; the informers' caches have been updated by then too.
// A test can assert right after it, exactly. It also waits for informers
// that have not synced yet (it implies WaitForCacheSync).
//
// Handlers are those added to the factory's informers before the call, in
// any way (AddEventHandler, AddEventHandlerWithResyncPeriod,
// AddEventHandlerWithOptions, through a composite of several namespaces);
// one removed meanwhile is not waited for. Settle does not wait for
// resyncs, which no write causes, nor for the writes that handlers make
// while it waits: call it again to settle those.
//
// It neither sleeps nor polls: it puts a marker into each informer's watch
// stream behind the events sent so far and waits for it to reach every
// handler. So it must not be called from a handler, which would wait for
// itself.
//
// It returns an error, at once, for an informer of the factory that has
// not been started, that never runs (an invalid option), or that it cannot
// follow (wrapping [ErrNotFake]): one over a real client, or one built by
// InformerFor's newFunc (a type this module's factory does not bind: its
// list and watch are the newFunc's own). When ctx ends first, the error
// names each informer still busy and what it waits for (a watch that is
// not running, or a handler that has not returned), and wraps ctx's
// cause.
func Settle(ctx context.Context, factory Factory) error {
	src := source(factory)
	if src == nil {
		return fmt.Errorf("informertest: Settle: %T is not a factory of github.com/kubeinformers/informers", factory)
	}
	targets := src.SettleTargets()
	var errs []error
	for _, t := range targets {
		switch {
		case t.Refused != nil && t.Started:
			errs = append(errs, fmt.Errorf("informertest: %s never runs: %w", t.Name, t.Refused))
		case t.Refused != nil:
		case t.Why != "":
			errs = append(errs, fmt.Errorf("%w: cannot settle %s: %s", ErrNotFake, t.Name, t.Why))
		case !t.Started:
			errs = append(errs, fmt.Errorf("informertest: %s has not been started: call the factory's Start after requesting it", t.Name))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, t := range targets {
		for _, in := range t.Informers {
			if err := in.Settle(ctx); err != nil {
				errs = append(errs, fmt.Errorf("informertest: Settle: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// source returns what Settle reads from factory, or nil.
func source(factory Factory) settle.Source {
	switch f := factory.(type) {
	case settle.Source:
		return f
	case interface{ Binding() *gensupport.Binding }:
		// A factory kubeinformers-gen generated: a view of a factory of
		// this module.
		if b := f.Binding(); b != nil {
			if src, ok := b.Factory().(settle.Source); ok {
				return src
			}
		}
	}
	return nil
}
