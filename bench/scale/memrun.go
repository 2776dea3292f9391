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

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"

	informers "github.com/kubeinformers/informers"
	"github.com/kubeinformers/informers/crcache"
	internalbudget "github.com/kubeinformers/informers/internal/budget"
)

// memoryStatuser is what this library's factories and crcache report
// their memory through.
type memoryStatuser interface {
	MemoryStatus() map[informers.InformerID]informers.MemoryStatus
}

// estimateOf sums the byte estimates of m's informers.
func estimateOf(m memoryStatuser) func() int64 {
	return func() int64 {
		var sum int64
		for _, s := range m.MemoryStatus() {
			sum += s.Bytes
		}
		return sum
	}
}

// runBudget fills crcache's Pod informer under a budget: it returns once
// the informer synced, or once the budget stopped it, with what Ready()
// says then.
func runBudget(ctx context.Context, cfg *rest.Config) (*running, error) {
	budget, err := strconv.ParseInt(os.Getenv(envBudget), 10, 64)
	if err != nil || budget <= 0 {
		return nil, fmt.Errorf("child: %s=%q is not a budget in bytes", envBudget, os.Getenv(envBudget))
	}
	newCache := crcache.NewCache(append(childListMode(), informers.WithMemoryBudget(budget))...)
	c, err := newCache(cfg, ctrlcache.Options{Scheme: scheme.Scheme})
	if err != nil {
		return nil, err
	}
	cc, ok := c.(*crcache.Cache)
	if !ok {
		return nil, fmt.Errorf("crcache.NewCache built a %T", c)
	}
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		for _, s := range cc.MemoryStatus() {
			if s.Stopped == nil {
				continue
			}
			why := s.Stopped.Error()
			if err := cc.Ready(); err != nil {
				why = err.Error()
			}
			// The store is released when the budget stops it, so
			// s.Objects is 0 by now: the objects it had seen are
			// in the stop's error.
			var stop *internalbudget.Stopped
			if !errors.As(s.Stopped, &stop) {
				return nil, fmt.Errorf("stopped with %w, not a budget's stop", s.Stopped)
			}
			return &running{count: func() int { return 0 }, budget: budget, stopped: why, stoppedAt: int64(stop.Objects), keep: c}, nil
		}
		if inf.HasSynced() {
			r := &running{count: func() int {
				return len(inf.(toolscache.SharedIndexInformer).GetStore().ListKeys())
			}, estimate: estimateOf(cc), budget: budget, keep: c}
			return r, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("neither synced nor stopped by its budget: %w", context.Cause(ctx))
		case <-t.C:
		}
	}
}
