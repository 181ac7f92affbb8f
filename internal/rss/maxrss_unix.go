//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package rss

import (
	"os"

	"golang.org/x/sys/unix"
)

// maxRSS returns getrusage(RUSAGE_SELF).ru_maxrss in bytes.
func maxRSS() (uint64, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, os.NewSyscallError("getrusage", err)
	}
	return uint64(ru.Maxrss) * maxrssUnit, nil
}
