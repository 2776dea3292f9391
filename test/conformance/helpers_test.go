package conformance

import (
	"context"
	"testing"
	"time"
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
