//go:build !unix

package gcstep

import "time"

// processCPU is unknown here: an inline cycle is charged its wall time.
func processCPU() (time.Duration, bool) { return 0, false }
