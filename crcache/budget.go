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
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeinformers/informers/internal/bridge"
)

// This file is the memory budget over the cache's factories: the budget of
// informers.WithMemoryBudget given to NewCache is one for the whole cache
// (every factory the cache builds shares the option's), and
// ResourceOptions.MemoryBudget applies to the resource's informers. A
// kind whose informer is stopped over a budget makes Get and List return
// why (errors.Is(err, informers.ErrOverMemoryBudget)); WaitForCacheSync
// does not wait for it, so that a manager starts the controllers of the
// other kinds; Ready and Notices name it.

// SetMemoryBudget sets the budget of the informers.WithMemoryBudget (or
// WithMemoryBudgetFraction) given to NewCache; 0 removes it. Informers
// stopped over it try again.
func (c *Cache) SetMemoryBudget(bytes int64) error {
	pool := c.config.settings.MemoryPool
	switch {
	case pool == nil:
		return errors.New("crcache: SetMemoryBudget: the cache was built without informers.WithMemoryBudget or WithMemoryBudgetFraction")
	case bytes < 0:
		return fmt.Errorf("crcache: SetMemoryBudget(%d): a budget must not be negative", bytes)
	}
	pool.SetLimit(bytes)
	return nil
}

// SetResourceMemoryBudget sets the budget of resource's informers
// ([informers.Factory.SetResourceMemoryBudget]), those built later
// included; 0 removes it.
func (c *Cache) SetResourceMemoryBudget(resource schema.GroupVersionResource, bytes int64) error {
	if bytes < 0 {
		return fmt.Errorf("crcache: SetResourceMemoryBudget(%v, %d): a budget must not be negative", resource, bytes)
	}
	c.mu.Lock()
	if c.budgets == nil {
		c.budgets = map[schema.GroupVersionResource]int64{}
	}
	c.budgets[resource] = bytes
	factories := c.liveFactories()
	c.mu.Unlock()
	var errs []error
	for _, f := range factories {
		errs = append(errs, f.SetResourceMemoryBudget(resource, bytes))
	}
	return errors.Join(errs...)
}

// overBudget returns why e's informers are stopped over a memory budget,
// or nil.
func (c *Cache) overBudget(e *entry) error {
	c.mu.RLock()
	slots := e.slots
	c.mu.RUnlock()
	var errs []error
	for _, si := range slots {
		if b, ok := si.factory.(bridge.Factory); ok {
			errs = append(errs, bridge.OverBudget(b, e.resource))
		}
	}
	return errors.Join(errs...)
}

// syncedOrStopped is what a wait for e's sync waits for: its informer
// synced, or stopped over a memory budget, which only a larger budget or
// a narrower informer ends.
func (c *Cache) syncedOrStopped(e *entry) func() bool {
	return func() bool { return e.informer.HasSynced() || c.overBudget(e) != nil }
}
