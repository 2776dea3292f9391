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
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/kubeinformers/informers/internal/budget"
	"github.com/kubeinformers/informers/internal/listwatch"
)

// This file connects an informer to its memory budget (internal/budget):
// its account, which every namespace's list/watch asks (internal/listwatch
// budget.go), and what a stop tells: one log line, the over-budget metric,
// Ready and Notices, which name the resource, the objects seen, the
// estimate, the budget and what would narrow it.

// newAccount returns the budget account of the informer of spec, whose
// estimate meter makes.
func (h *Hooks) newAccount(spec *Spec, meter budget.Meter) *budget.Account {
	return budget.NewAccount(budget.Config{
		Resource: spec.Name, Narrow: spec.Narrow, Pool: spec.MemoryPool, Limit: spec.MemoryBudget, Meter: meter,
		OnStop: func(st *budget.Stopped) {
			klog.Background().Info("Warning: informer stopped over its memory budget", "informer", spec.Name,
				"objects", st.Objects, "estimate", st.Bytes, "budget", st.Budget, "shared", st.Shared)
			h.Metrics.OverBudget(true)
		},
		OnRetry: func() { h.Metrics.OverBudget(false) },
	})
}

// Stopped returns why the informer stopped over its memory budget, or nil.
func (h *Hooks) Stopped() error {
	if h == nil {
		return nil
	}
	return h.Budget.Stopped()
}

// isOverBudget reports the error of a list or watch that the budget ended:
// Ready names the stop itself, not as a failing list.
func isOverBudget(err error) bool {
	if errors.Is(err, budget.ErrOverBudget) {
		return true
	}
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Reason == listwatch.StatusReasonOverBudget
}
