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

package settle

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeinformers/informers/internal/wake"
)

// Counts counts what happened to each resource and waits for a count: the
// watch-list streams a fake sent (Streaming.WaitSent), the requests
// informertest.Faults refused. Its zero value is ready to use.
type Counts struct {
	mu      sync.Mutex
	n       map[schema.GroupVersionResource]int
	changed wake.Signal
}

// Add counts one more for resource.
func (c *Counts) Add(resource schema.GroupVersionResource) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[schema.GroupVersionResource]int{}
	}
	c.n[resource]++
	c.mu.Unlock()
	c.changed.Broadcast()
}

// Get is the count of resource.
func (c *Counts) Get(resource schema.GroupVersionResource) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[resource]
}

// Wait returns once resource has been counted n times, or when ctx ends
// first, with ctx's cause. It returns the count it saw last.
func (c *Counts) Wait(ctx context.Context, resource schema.GroupVersionResource, n int) (int, error) {
	for {
		changed := c.changed.Next()
		got := c.Get(resource)
		if got >= n {
			return got, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return got, context.Cause(ctx)
		}
	}
}
