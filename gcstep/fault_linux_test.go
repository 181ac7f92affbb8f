//go:build linux

package gcstep

import (
	"testing"
	"time"
)

// TestMeasurePages: the prices of a fault and of a return are measured,
// positive, and not a preempted round's (each costs well under a
// millisecond anywhere).
func TestMeasurePages(t *testing.T) {
	f, r := measurePages()
	check(t, f > 0 && f < time.Millisecond, "fault price %v", f)
	check(t, r > 0 && r < time.Millisecond, "return price %v", r)
}
