package gcstep

import (
	"time"

	"golang.org/x/sys/unix"
)

// probeFault measures what this machine charges to fault a page back in
// after it was returned to the OS, as the first burst after a release
// does for every page it takes back: it maps a few pages, touches them,
// returns them with MADV_DONTNEED and times touching them again. The
// price differs by an order of magnitude between bare metal (about a
// microsecond) and some virtual machines (10 µs and more), which is what
// decides whether emptying a short gap pays. It costs probePages faults,
// twice, once per Runtime; 0 if the probe cannot map memory.
func probeFault() time.Duration {
	n := probePages * pageSize
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return 0
	}
	defer unix.Munmap(mem)
	best := time.Duration(0)
	for round := 0; round < 2; round++ {
		for i := 0; i < n; i += pageSize {
			mem[i] = 1 // resident
		}
		if unix.Madvise(mem, unix.MADV_DONTNEED) != nil {
			return 0
		}
		start := time.Now()
		for i := 0; i < n; i += pageSize {
			mem[i] = 1 // faulted back in, zeroed by the kernel
		}
		if d := time.Since(start) / probePages; round == 0 || d < best {
			best = d
		}
	}
	return best
}

// probePages is how many pages the fault probe touches: enough to see
// past one slow fault, few enough to cost well under a millisecond on a
// machine that charges 10 µs a fault.
const probePages = 16
