//go:build !unix

package gcstep

import (
	"runtime/metrics"
	"sync"
	"time"
)

// processCPU is the CPU time the Go runtime counts its threads to have
// used so far (runtime/metrics: every class but idle; not the time in
// system calls), read into samples kept so that it allocates nothing.
func processCPU() time.Duration {
	cpuMu.Lock()
	defer cpuMu.Unlock()
	metrics.Read(cpuSamples)
	return time.Duration((cpuSamples[0].Value.Float64() - cpuSamples[1].Value.Float64()) * float64(time.Second))
}

var (
	cpuMu      sync.Mutex
	cpuSamples = []metrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/cpu/classes/idle:cpu-seconds"}}
)
