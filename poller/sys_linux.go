package poller

import (
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysPlatform is the Linux part of sysTable: epoll and eventfd.
type sysPlatform struct {
	epollCreate func() (int, error)
	epollCtl    func(epfd, op, fd int, ev *unix.EpollEvent) error
	epollWait   func(epfd int, evs []unix.EpollEvent, timeout time.Duration) (int, error)
	// eventfd makes a nonblocking, close-on-exec eventfd counting from 0.
	eventfd func() (int, error)
	// setNonblock sets O_NONBLOCK on fd (a parker's epoll fd, so that
	// os.NewFile hands it to the netpoller).
	setNonblock func(fd int) error
}

var platformSys = sysPlatform{
	epollCreate: func() (int, error) { return unix.EpollCreate1(unix.EPOLL_CLOEXEC) },
	epollCtl:    unix.EpollCtl,
	epollWait:   sysEpollWait,
	eventfd:     func() (int, error) { return unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK) },
	setNonblock: func(fd int) error { return unix.SetNonblock(fd, true) },
}

// sysEpollWait is epoll_wait(2), made as a raw system call when it cannot
// block (see epollPeek), and as epoll_pwait2(2) when it has a deadline and
// the kernel has that call (see epollWaitNs).
func sysEpollWait(epfd int, evs []unix.EpollEvent, timeout time.Duration) (int, error) {
	if timeout == 0 && len(evs) > 0 {
		return epollPeek(epfd, evs)
	}
	if timeout > 0 && len(evs) > 0 && !noPwait2.Load() {
		if n, err := epollWaitNs(epfd, evs, timeout); err != unix.ENOSYS && err != unix.EPERM {
			return n, err
		}
		noPwait2.Store(true)
	}
	return unix.EpollWait(epfd, evs, msTimeout(timeout))
}

// noPwait2 is set once epoll_pwait2 was refused: a kernel before 5.11
// (ENOSYS), or a seccomp filter that does not know the call (EPERM).
var noPwait2 atomic.Bool

// epollWaitNs is epoll_pwait2(2) with no signal mask: epoll_wait with a
// timeout in nanoseconds. epoll_wait's is in milliseconds, rounded up so
// that a wait never ends before its deadline, so a wait of 100 µs (a
// timer, a stepper's deferred work) slept a whole millisecond, longer than
// a stream's idle gap between bursts.
func epollWaitNs(epfd int, evs []unix.EpollEvent, timeout time.Duration) (int, error) {
	ts := unix.NsecToTimespec(int64(timeout))
	n, _, errno := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd),
		uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), uintptr(unsafe.Pointer(&ts)), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(n), nil
}

// epollPeek is epoll_wait with a zero timeout, made as a raw system call:
// it cannot block, so it skips the scheduler's entersyscall/exitsyscall,
// which wake a sleeping sysmon thread at every call. A loop makes one after
// every dispatch; under pipelined load a server's loops spent 30-48 % of
// their futex calls on those wakeups (bench/README.md, "Pipelined load").
// epoll_pwait with no signal mask is epoll_wait, and is the call every
// architecture has.
func epollPeek(epfd int, evs []unix.EpollEvent) (int, error) {
	n, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd),
		uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(n), nil
}

// sysPoll is ppoll(2) with a nil signal mask: the kernel leaves the mask
// alone, so a wait costs one system call, not the two extra rt_sigprocmask
// calls a masked wait costs (seeds 000 and 001), and the timeout keeps
// nanoseconds instead of poll(2)'s milliseconds.
func sysPoll(fds []unix.PollFd, timeout time.Duration) (int, error) {
	if timeout < 0 {
		return unix.Ppoll(fds, nil, nil)
	}
	ts := unix.NsecToTimespec(int64(timeout))
	return unix.Ppoll(fds, &ts, nil)
}

func sysPipe() (r, w int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return -1, -1, err
	}
	return p[0], p[1], nil
}

func (c *counters) epollCreate() (int, error) {
	c.syscalls.Add(1)
	return sys.epollCreate()
}

func (c *counters) epollCtl(epfd, op, fd int, ev *unix.EpollEvent) error {
	c.syscalls.Add(1)
	if !sys.swapped {
		return unix.EpollCtl(epfd, op, fd, ev)
	}
	cp := heapCopy(ev)
	err := sys.epollCtl(epfd, op, fd, cp)
	copyBack(ev, cp)
	return err
}

func (c *counters) epollWait(epfd int, evs []unix.EpollEvent, timeout time.Duration) (int, error) {
	c.syscalls.Add(1)
	if !sys.swapped {
		return sysEpollWait(epfd, evs, timeout)
	}
	cp := slices.Clone(evs)
	n, err := sys.epollWait(epfd, cp, timeout)
	copy(evs, cp)
	return n, err
}

func (c *counters) eventfd() (int, error) {
	c.syscalls.Add(1)
	return sys.eventfd()
}

// pollName names the wait call in errors.
const pollName = "ppoll"

func (c *counters) setNonblock(fd int) error {
	c.syscalls.Add(1)
	return sys.setNonblock(fd)
}
