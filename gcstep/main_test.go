package gcstep

import (
	"testing"

	"go.uber.org/goleak"
)

// Background cycles restore GOGC from the runtime's cleanup goroutine: it
// must not outlive the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
