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
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestCounts: Wait returns once the resource's count reaches n, counted
// by other goroutines meanwhile, and otherwise with the context's cause
// and the count it saw.
func TestCounts(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	other := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	var c Counts
	if got, err := c.Wait(t.Context(), pods, 0); got != 0 || err != nil {
		t.Errorf("Wait for 0 = %d, %v", got, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			c.Add(other)
			c.Add(pods)
		}
	}()
	if got, err := c.Wait(t.Context(), pods, 50); got != 50 || err != nil {
		t.Errorf("Wait for 50 = %d, %v", got, err)
	}
	<-done
	if got := c.Get(other); got != 50 {
		t.Errorf("other resource counted %d, want 50", got)
	}

	cause := errors.New("the test gave up")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(cause)
	if got, err := c.Wait(ctx, pods, 51); got != 50 || !errors.Is(err, cause) {
		t.Errorf("Wait past the end = %d, %v; want 50 and the context's cause", got, err)
	}
}
