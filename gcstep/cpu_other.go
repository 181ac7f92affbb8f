//go:build !unix

package gcstep

import (
	"runtime/metrics"
	"time"
)

// processCPU is the CPU time the Go runtime counts its threads to have
// used so far (runtime/metrics: every class but idle); time in system
// calls is not in it.
func processCPU() (time.Duration, bool) {
	s := []metrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/cpu/classes/idle:cpu-seconds"}}
	metrics.Read(s)
	return time.Duration((s[0].Value.Float64() - s[1].Value.Float64()) * float64(time.Second)), true
}
