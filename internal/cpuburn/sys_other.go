//go:build !linux

package cpuburn

import "syscall"

// sysProcAttr is empty where there is no parent-death signal: the burner's
// standard input reaching end of file is what ends it.
func sysProcAttr() *syscall.SysProcAttr { return nil }
