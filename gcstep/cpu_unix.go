//go:build unix

package gcstep

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the whole process has used so far, user and
// system (getrusage(2)); 0 if it could not be read.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
