package grpcidle_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests start gRPC servers and clients, and the Runtime starts timers
// and releases: none of their goroutines may outlive the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
