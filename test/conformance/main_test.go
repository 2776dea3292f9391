package conformance

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine is still running once every
// test has shut its factories down.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
