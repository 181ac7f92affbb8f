//go:build unix

package gcstep

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the whole process has used so far, user and
// system (getrusage(2)); false if it could not be read.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
