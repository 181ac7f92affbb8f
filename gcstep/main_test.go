package gcstep

import (
	"testing"

	"go.uber.org/goleak"
)

// The release tier runs on timer goroutines and background cycles restore
// GOGC from the runtime's cleanup goroutine: none may outlive the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
