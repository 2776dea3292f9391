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

package crcache

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/internal/bridge"
	"github.com/kubeinformers/informers/internal/served"
)

// New is a drop-in for controller-runtime's [cache.New]: the same
// signature (it is a [cache.NewCacheFunc]) and behaviour, every informer
// an informer of this module's factory. It is NewCache() with no options.
func New(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	return NewCache()(config, opts)
}

// NewCache returns a [cache.NewCacheFunc] whose caches build their
// informers with options, this module's factory options (such as
// [informers.WithLeanMemory]), on top of what [cache.Options] says.
func NewCache(options ...informers.SharedInformerOption) cache.NewCacheFunc {
	return func(config *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := newCache(config, opts, options)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// Cache is the cache [New] and [NewCache] return: a [cache.Cache].
type Cache struct {
	config    *config
	clientset kubernetes.Interface
	dynamic   dynamic.Interface
	metadata  metadata.Interface

	// setNamespaces serializes SetNamespaces calls, which wait outside mu.
	setNamespaces sync.Mutex
	// adding is the change SetNamespaces is making, until it switches
	// reads or fails: reads in its added namespaces wait for it. mu
	// guards it.
	adding *namespaceChange

	mu      sync.RWMutex
	entries map[entryKey]*entry
	// named are the resources registered under the cache's informer name
	// (WithInformerName) for client-go's metrics, which takes each once.
	named map[schema.GroupVersionResource]bool
	// removing holds, by key, what closes once the factories of an
	// informer RemoveInformer removed have shut down.
	removing map[entryKey]chan struct{}
	started  bool
	stopped  bool
	ctx      context.Context
	// startWait is closed when Start has started the informers; done when
	// Start's context has ended.
	startWait chan struct{}
	done      chan struct{}
	// running tracks the goroutines the cache runs beside its factories:
	// the informers of Options.NewInformer, the waits of kinds not served
	// yet (follow.go), and the shutdowns of removed informers' factories.
	running sync.WaitGroup
	// budgets are SetResourceMemoryBudget's, under mu, for the factories
	// built later (budget.go).
	budgets map[schema.GroupVersionResource]int64
	// served is what waiting kinds wait through (follow.go).
	servedOnce sync.Once
	served     *served.Checker
}

var (
	_ cache.Cache = &Cache{}
	// controller-runtime's manager runs the cache on every replica, leader
	// or not.
	_ interface{ NeedLeaderElection() bool } = &Cache{}
)

func newCache(restConfig *rest.Config, opts cache.Options, options []informers.SharedInformerOption) (*Cache, error) {
	if restConfig == nil {
		return nil, errors.New("crcache: the REST config is nil")
	}
	// Building clients makes no request.
	probeClient, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("crcache: %w", err)
	}
	settings, err := probe(probeClient, options)
	if err != nil {
		return nil, err
	}
	cfg, err := resolveOptions(restConfig, opts, options, settings)
	if err != nil {
		return nil, err
	}
	clientset, err := kubernetes.NewForConfigAndClient(cfg.restConfig, cfg.httpClient)
	if err != nil {
		return nil, fmt.Errorf("crcache: %w", err)
	}
	// The dynamic and metadata clients choose their own serializers.
	untyped := rest.CopyConfig(cfg.restConfig)
	untyped.NegotiatedSerializer = nil
	dyn, err := dynamic.NewForConfigAndClient(untyped, cfg.httpClient)
	if err != nil {
		return nil, fmt.Errorf("crcache: %w", err)
	}
	meta, err := metadata.NewForConfigAndClient(untyped, cfg.httpClient)
	if err != nil {
		return nil, fmt.Errorf("crcache: %w", err)
	}
	return &Cache{
		config:    cfg,
		clientset: clientset,
		dynamic:   dyn,
		metadata:  meta,
		entries:   make(map[entryKey]*entry),
		named:     make(map[schema.GroupVersionResource]bool),
		removing:  make(map[entryKey]chan struct{}),
		startWait: make(chan struct{}),
		done:      make(chan struct{}),
	}, nil
}

// probe checks the factory options and returns what they set: a factory
// built with them alone, never started, says. A bad option is an error
// here, as it is from [informers.New], before anything is watched.
func probe(client kubernetes.Interface, options []informers.SharedInformerOption) (bridge.Settings, error) {
	f, err := informers.New(client, 0, options...)
	if err != nil {
		return bridge.Settings{}, fmt.Errorf("crcache: %w", err)
	}
	b, ok := f.(bridge.Factory)
	if !ok {
		f.Shutdown()
		return bridge.Settings{}, fmt.Errorf("crcache: the factory %T does not say its settings", f)
	}
	// The informer name of WithInformerName is the cache's, for the
	// informers it builds later: this factory's Shutdown keeps it.
	b.BorrowName("")
	f.Shutdown()
	return b.BridgeSettings(), nil
}

// NeedLeaderElection reports that the cache runs on every replica.
func (c *Cache) NeedLeaderElection() bool { return false }

// Start runs the informers built so far, and those built later, until ctx
// ends; then it stops them and returns once they have stopped. A second
// call is an error.
func (c *Cache) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("informer already started") // controller-runtime's words
	}
	c.started = true
	c.ctx = ctx
	for _, e := range c.entries {
		c.startEntry(e)
	}
	close(c.startWait)
	c.mu.Unlock()

	<-ctx.Done()

	c.mu.Lock()
	c.stopped = true // no informer starts, and no goroutine is added, from now on
	factories := c.liveFactories()
	c.mu.Unlock()
	close(c.done)
	for _, f := range factories {
		f.Shutdown()
	}
	c.running.Wait()
	// The factories borrowed it; the cache releases it as a factory's
	// Shutdown would.
	c.config.settings.InformerName.Release()
	return nil
}

// WaitForCacheSync waits until Start has run and every informer has
// synced; it returns false if ctx ends first.
func (c *Cache) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-c.startWait:
	case <-ctx.Done():
		return false
	}
	c.mu.RLock()
	synced := make([]func() bool, 0, len(c.entries))
	for _, e := range c.entries {
		synced = append(synced, c.syncedOrStopped(e))
	}
	c.mu.RUnlock()
	return waitForSync(ctx, synced...)
}
