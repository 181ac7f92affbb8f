//go:build darwin || freebsd

package poller

import (
	"time"

	"golang.org/x/sys/unix"
)

// sysPlatform is empty outside Linux: no epoll, and Wake uses a pipe.
type sysPlatform struct{}

var platformSys = sysPlatform{}

// sysPoll is poll(2): x/sys has no Ppoll for darwin or freebsd. poll(2)
// never touches the signal mask either, so a wait is still one system call;
// only the timeout is coarser (milliseconds, rounded up).
func sysPoll(fds []unix.PollFd, timeout time.Duration) (int, error) {
	return unix.Poll(fds, msTimeout(timeout))
}

// pollName names the wait call in errors.
const pollName = "poll"

func (c *counters) pipe() (r, w int, err error) {
	c.syscalls.Add(1)
	return sys.pipe()
}
