package lab

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The tcp workload runs its client by starting this executable again.
	if spec := os.Getenv(ClientEnv); spec != "" {
		ClientMain(spec)
		return
	}
	goleak.VerifyTestMain(m)
}
