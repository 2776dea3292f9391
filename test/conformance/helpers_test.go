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

package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/kubeinformers/informers/informertest"
)

// waitFor polls cond until it holds or ctx ends, which fails the test.
func waitFor(t testing.TB, ctx context.Context, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("condition not met: %v", context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// settle waits until every event of the test's writes through the fake
// clients has reached every handler of factory (informertest.Settle):
// what follows asserts exactly, without polling.
func settle(t testing.TB, ctx context.Context, factory informertest.Factory) {
	t.Helper()
	if err := informertest.Settle(ctx, factory); err != nil {
		t.Fatal(err)
	}
}
