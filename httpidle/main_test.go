package httpidle_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests start servers, and the Runtime starts timers and releases:
// none of their goroutines may outlive the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
