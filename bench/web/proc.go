package main

import "github.com/idlemux/idlemux/internal/procfs"

// readRSS returns the VmRSS of process pid, in bytes.
func readRSS(pid int) (uint64, error) {
	st, err := procfs.Status(pid)
	return st.RSS, err
}
