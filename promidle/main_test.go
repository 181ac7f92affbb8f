package promidle_test

import (
	"testing"

	"go.uber.org/goleak"
)

// A Runtime restores GOGC from the runtime's cleanup goroutine: it must
// not outlive the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
