package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdLimit returns the soft open-file limit (RLIMIT_NOFILE). The Go runtime
// raises it to the hard limit at startup, in this process and in the
// children it runs (which are Go programs too), so the value seen here is
// the one a run gets.
func fdLimit() (uint64, error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, os.NewSyscallError("getrlimit", err)
	}
	return uint64(lim.Cur), nil
}
