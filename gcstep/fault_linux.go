//go:build linux

package gcstep

import (
	"time"

	"golang.org/x/sys/unix"
)

// faultPages is how many pages measureFault faults back in a round, and
// faultRounds how many rounds it takes the fastest of (a preemption in
// one does not set the price).
const (
	faultPages  = 16
	faultRounds = 3
)

// measureFault is what faulting back one 4 KiB page returned to the OS
// costs here: the pages of a small anonymous mapping are touched,
// returned with MADV_DONTNEED (as the runtime returns free pages) and
// touched again, timed, the fastest of three rounds; 0 if the mapping fails. It takes well under a
// millisecond, once a process, where one is 0.2-15 µs (bare metal to a
// virtual machine whose hypervisor handles faults).
func measureFault() time.Duration {
	const page = 4 << 10
	b, err := unix.Mmap(-1, 0, faultPages*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return 0
	}
	defer unix.Munmap(b)
	best := time.Duration(0)
	for range faultRounds {
		for i := 0; i < len(b); i += page {
			b[i] = 1
		}
		if unix.Madvise(b, unix.MADV_DONTNEED) != nil {
			return 0
		}
		start := time.Now()
		for i := 0; i < len(b); i += page {
			b[i] = 1
		}
		if d := time.Since(start) / faultPages; best == 0 || d < best {
			best = d
		}
	}
	return best
}
