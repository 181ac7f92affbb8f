//go:build linux

package gcstep

import (
	"testing"
	"time"
)

// TestMeasureFault: the fault price is measured, positive, and not a
// preempted round's (a fault costs well under a millisecond anywhere).
func TestMeasureFault(t *testing.T) {
	d := measureFault()
	check(t, d > 0 && d < time.Millisecond, "fault price %v", d)
}
