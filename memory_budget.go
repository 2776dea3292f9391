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
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeinformers/informers/internal/budget"
)

// ErrOverMemoryBudget is wrapped by the errors of an informer stopped over
// its memory budget (Ready, listers' Get, crcache's reads).
var ErrOverMemoryBudget = budget.ErrOverBudget

// WithMemoryBudget caps the sum of the factory's informers' estimates
// ([Factory.MemoryStatus]) at bytes. An informer whose fill or growth
// would pass it stops before it does, as objects arrive (per LIST page,
// per object of a watch-list stream): its cache is emptied, [Factory.Ready]
// and [Factory.Notices] say why and what would narrow it, its listers' Get
// returns [ErrOverMemoryBudget] (List returns nothing), and the others keep
// serving. It tries again when the budget is raised
// ([Factory.SetMemoryBudget]) or its namespaces change. Every factory built
// with one option value shares its budget, as crcache's do. A budget that
// is not positive is an error from [New]. See docs/memory.md.
func WithMemoryBudget(bytes int64) SharedInformerOption {
	return withPool("WithMemoryBudget", bytes, budget.NewPool(bytes), budget.CheckBytes(bytes, false))
}

// WithMemoryBudgetFraction is [WithMemoryBudget] of fraction (0 < f <= 1)
// of the container's memory limit, read once from cgroup v2's
// /sys/fs/cgroup/memory.max as automemlimit reads it. Without a limit
// ("max", or no cgroup v2) there is no budget, and Notices says so.
func WithMemoryBudgetFraction(fraction float64) SharedInformerOption {
	pool, err := budget.FractionPool(fraction)
	return withPool("WithMemoryBudgetFraction", fraction, pool, err)
}

func withPool(option string, value any, pool *budget.Pool, err error) SharedInformerOption {
	return func(f *sharedInformerFactory) *sharedInformerFactory {
		var bad error
		if f.memoryPool, bad = budget.Choose(f.memoryPool, pool, err, option, value); bad != nil {
			f.invalid(bad)
		}
		return f
	}
}

func (f *sharedInformerFactory) SetMemoryBudget(bytes int64) error { return f.memoryPool.Set(bytes) }

func (f *sharedInformerFactory) SetResourceMemoryBudget(resource schema.GroupVersionResource, bytes int64) error {
	if err := budget.CheckBytes(bytes, true); err != nil {
		return fmt.Errorf("informers: SetResourceMemoryBudget(%v, %d): %w", resource, bytes, err)
	}
	f.lock.Lock()
	defer f.lock.Unlock()
	if f.memoryBudgets == nil {
		f.memoryBudgets = map[schema.GroupVersionResource]int64{}
	}
	f.memoryBudgets[resource] = bytes // for the informers built later (spec.go)
	for k, e := range f.entries {
		if k.resource == resource && e.hooks != nil {
			e.hooks.Budget.SetLimit(bytes)
		}
	}
	return nil
}
