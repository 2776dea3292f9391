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

package meter

import (
	"strconv"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Factory is one factory's part in the metrics beside its informers': the
// name it reports under and its shard metrics. The factory calls Name and
// StartShard under its own lock; its informers' hooks read Shard.
type Factory struct {
	// Shard is the factory's shard metrics while it reports them; the
	// hooks of each of its informers (NewHooks) point to it, for
	// handover durations.
	Shard atomic.Pointer[Shard]
	// defaultName is the name reserved for a factory without
	// WithInformerName, once its metrics start.
	defaultName *cache.InformerName
	// Label, if set, is the name the factory reports under, in place of
	// either (the controller-runtime bridge sets one per informer).
	Label string
}

// factoryCount numbers the factories of the process, for default names.
var factoryCount atomic.Uint64

// Name is the factory label: Label if set, else named's name
// (WithInformerName), else a
// default ("kubeinformers-factory-1", ...) reserved with client-go's name
// registry, so that a factory named later cannot take it.
func (f *Factory) Name(named *cache.InformerName) string {
	if f.Label != "" {
		return f.Label
	}
	if named != nil {
		return named.Name()
	}
	if f.defaultName == nil {
		for {
			n, err := cache.NewInformerName("kubeinformers-factory-" + strconv.FormatUint(factoryCount.Add(1), 10))
			if err == nil {
				f.defaultName = n
				break
			}
		}
	}
	return f.defaultName.Name()
}

// StartShard makes the factory report its shard into s, from 0.
func (f *Factory) StartShard(s *Shard) *Shard {
	s.Owned.Set(0)
	s.Members.Set(0)
	f.Shard.Store(s)
	return s
}

// Drop deletes the series of the factory's informers, given by their
// hooks, and of its shard, once they have stopped, and releases the
// default name.
func (f *Factory) Drop(informers []*Hooks) {
	for _, h := range informers {
		h.Drop()
	}
	if sm := f.Shard.Swap(nil); sm != nil {
		sm.Delete()
	}
	if f.defaultName != nil {
		f.defaultName.Release()
	}
}

// Start counts the events of a running informer (Run: target is the
// informer itself, past the lag wrapping of its handlers) into what Report
// gave, and returns Run's stop function. The informer runs even if the
// counting handler cannot be added; the error is logged with its name.
func (h *Hooks) Start(target cache.SharedIndexInformer, synced <-chan struct{}, name any) func() {
	stop, err := h.Run(target, synced)
	if err != nil {
		klog.Background().Error(err, "Cannot count the events of an informer", "informer", name)
	}
	return stop
}

// Provider holds the process-wide metrics provider, of the root's
// MetricsProvider type P; the zero value holds none, which means off.
type Provider[P any] struct{ p atomic.Pointer[P] }

// Set installs p; a nil p turns metrics off.
func (s *Provider[P]) Set(p P) {
	if any(p) == nil {
		s.p.Store(nil)
		return
	}
	s.p.Store(&p)
}

// Get returns the provider installed, if any.
func (s *Provider[P]) Get() (p P, ok bool) {
	if h := s.p.Load(); h != nil {
		return *h, true
	}
	return p, false
}

// On reports whether a provider is installed: handlers added meanwhile
// have their lag measured.
func (s *Provider[P]) On() bool { return s.p.Load() != nil }
