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

package informers

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeinformers/informers/internal/budget"
)

// This file holds the memory budget's options and setters; the engine is
// internal/budget, enforced where objects pass (internal/listwatch).

// ErrOverMemoryBudget is wrapped by the error of a stopped informer
// (Ready, and crcache's reads): test it with [errors.Is].
var ErrOverMemoryBudget = budget.ErrOverBudget

// WithMemoryBudget caps the memory of the factory's informers: the sum of
// their estimates ([Factory.MemoryStatus]) stays within bytes. An informer
// whose first list or later growth would pass it stops before it does, as
// objects arrive (per page of a LIST, per object of a watch-list stream):
// its cache is emptied, [Factory.Ready] and [Factory.Notices] say why and
// what would narrow it, and the others keep serving. It tries again once
// the budget is raised ([Factory.SetMemoryBudget]) or its namespaces
// change ([Factory.SetNamespaces]). Every factory built with the same
// option value shares the one budget, as crcache's are. A budget that is
// not positive is an error from [New]. Informers built by InformerFor's
// newFunc are not counted.
func WithMemoryBudget(bytes int64) SharedInformerOption {
	return withPool("WithMemoryBudget", fmt.Sprint(bytes), budget.NewPool(bytes), checkBytes(bytes))
}

// WithMemoryBudgetFraction is [WithMemoryBudget] of fraction (0 < f <= 1)
// of the container's memory limit, read once from cgroup v2's
// /sys/fs/cgroup/memory.max, as automemlimit reads it. Where there is no
// limit ("max", or no cgroup v2) there is no budget, and Notices says so.
// Another fraction, or an unreadable limit, is an error from [New].
func WithMemoryBudgetFraction(fraction float64) SharedInformerOption {
	limit, err := budget.FromCgroup(budget.CgroupMemoryMax, fraction)
	pool := budget.NewPool(limit)
	if errors.Is(err, budget.ErrNoLimit) {
		pool.Note, err = fmt.Sprintf("WithMemoryBudgetFraction(%v): no memory budget: %v", fraction, err), nil
	}
	return withPool("WithMemoryBudgetFraction", fmt.Sprint(fraction), pool, err)
}

func withPool(option, value string, pool *budget.Pool, err error) SharedInformerOption {
	return func(f *sharedInformerFactory) *sharedInformerFactory {
		switch {
		case err != nil:
			f.invalid(fmt.Errorf("%s(%s): %w", option, value, err))
		case f.memoryPool != nil:
			f.invalid(fmt.Errorf("%s(%s): a memory budget was given already: give one", option, value))
		default:
			f.memoryPool = pool
		}
		return f
	}
}

func checkBytes(bytes int64) error {
	if bytes <= 0 {
		return fmt.Errorf("a budget of %d bytes: it must be positive (omit the option for none)", bytes)
	}
	return nil
}

func (f *sharedInformerFactory) SetMemoryBudget(bytes int64) error {
	if f.memoryPool == nil {
		return errors.New("informers: SetMemoryBudget: the factory has no WithMemoryBudget or WithMemoryBudgetFraction")
	}
	if bytes < 0 {
		return fmt.Errorf("informers: SetMemoryBudget(%d): %w", bytes, checkBytes(bytes))
	}
	f.memoryPool.SetLimit(bytes)
	return nil
}

func (f *sharedInformerFactory) SetResourceMemoryBudget(resource schema.GroupVersionResource, bytes int64) error {
	if bytes < 0 {
		return fmt.Errorf("informers: SetResourceMemoryBudget(%v, %d): %w", resource, bytes, checkBytes(bytes))
	}
	f.lock.Lock()
	defer f.lock.Unlock()
	if f.memoryBudgets == nil {
		f.memoryBudgets = map[schema.GroupVersionResource]int64{}
	}
	f.memoryBudgets[resource] = bytes // for the informers built later (spec.go)
	for _, e := range f.all() {
		if e.id.Resource == resource && e.hooks != nil {
			e.hooks.Budget.SetLimit(bytes)
		}
	}
	return nil
}

// OverBudget returns why the informers of resource are stopped over a
// memory budget, or nil (internal/bridge: crcache's reads).
func (f *sharedInformerFactory) OverBudget(resource schema.GroupVersionResource) error {
	f.lock.Lock()
	defer f.lock.Unlock()
	var errs []error
	for k, e := range f.entries {
		if err := e.hooks.Stopped(); k.resource == resource && err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
