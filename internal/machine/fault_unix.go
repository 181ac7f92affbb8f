//go:build linux || darwin || freebsd

package machine

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// ErrUnsupported says the system cannot advise huge pages.
var ErrUnsupported = errors.New("huge pages cannot be advised here")

// PageFault maps n bytes (a multiple of 2 MiB) of anonymous memory,
// touches every page once so that it is resident, returns it with
// MADV_DONTNEED, and reports the mean time to touch a 4 KiB page again:
// the price of taking back memory given to the operating system. With
// huge, the range is advised MADV_HUGEPAGE first.
func PageFault(n int, huge bool) (time.Duration, error) {
	const page = 4 << 10
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(b)
	if huge {
		if err := adviseHuge(b); err != nil {
			return 0, err
		}
	}
	for i := 0; i < n; i += page {
		b[i] = 1
	}
	if err := unix.Madvise(b, unix.MADV_DONTNEED); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := 0; i < n; i += page {
		b[i] = 2
	}
	return time.Since(start) / time.Duration(n/page), nil
}
