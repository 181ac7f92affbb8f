package cpuburn

import "syscall"

// sysProcAttr has the kernel kill the burner when the thread that started
// it exits, a second line of defence besides its standard input.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
