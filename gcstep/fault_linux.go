//go:build linux

package gcstep

import (
	"time"

	"golang.org/x/sys/unix"
)

// measurePages is what returning one 4 KiB page to the OS and faulting
// it back cost here: the faultPages pages of a small anonymous mapping
// are touched, returned with MADV_DONTNEED (as the runtime returns free
// pages) and touched again, both timed, the fastest of faultRounds rounds
// (a preemption in one does not set the price); 0, 0 if the mapping
// fails. It takes well under a millisecond, once a process, where a
// fault is 0.2-15 µs (bare metal to a virtual machine whose hypervisor
// handles faults) and a return about as much.
func measurePages() (fault, ret time.Duration) {
	const faultPages, faultRounds = 16, 3
	b, err := unix.Mmap(-1, 0, faultPages*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return 0, 0
	}
	defer unix.Munmap(b)
	fault, ret = time.Hour, time.Hour
	for range faultRounds {
		for i := 0; i < len(b); i += pageSize {
			b[i] = 1
		}
		start := time.Now()
		if unix.Madvise(b, unix.MADV_DONTNEED) != nil {
			return 0, 0
		}
		mid := time.Now()
		for i := 0; i < len(b); i += pageSize {
			b[i] = 1
		}
		fault, ret = min(fault, time.Since(mid)/faultPages), min(ret, mid.Sub(start)/faultPages)
	}
	return fault, ret
}
