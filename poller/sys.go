package poller

import (
	"math"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// sysTable holds every system call the package makes. Production code calls
// them only through the counting wrappers below, which read the package
// variable sys; tests swap sys (never concurrently with a running Mux or
// Loop) to make calls fail or misbehave: EINTR anywhere, EAGAIN, EBADF,
// ENOMEM, waits that return early with nothing ready.
//
// Entries return raw errnos (unix.Errno), never wrapped ones, so that the
// callers can compare with EINTR and EAGAIN; callers wrap with
// os.NewSyscallError before an error reaches the user.
//
// Timeouts are durations, converted to each call's unit inside the entry:
// a negative duration blocks indefinitely, zero polls without blocking.
//
// The wrappers call the table's entries only once a test has swapped it
// (swapped), and make the real calls directly otherwise. A call through a
// func value is opaque to the compiler's escape analysis, which must then
// assume that the entry keeps whatever memory it is given: every PollFd
// array, fd set and buffer a wait keeps on its stack would be moved to the
// heap, an allocation per wait. A swapped table's entries get heap copies
// of that memory instead, copied back after the call.
type sysTable struct {
	// poll is ppoll(2) with a nil signal mask where x/sys has it (Linux),
	// poll(2) elsewhere.
	poll func(fds []unix.PollFd, timeout time.Duration) (int, error)
	// sel is select(2). The fd sets are modified in place.
	sel func(nfd int, r, w, e *unix.FdSet, timeout time.Duration) (int, error)
	// read, write and close are the plain calls. close is never retried.
	read  func(fd int, p []byte) (int, error)
	write func(fd int, p []byte) (int, error)
	close func(fd int) error
	// fdFlags is fcntl(fd, F_GETFD): the cheapest "is fd open?".
	fdFlags func(fd int) (int, error)
	// pipe makes a nonblocking, close-on-exec pipe.
	pipe func() (r, w int, err error)

	sysPlatform

	// swapped says that a test changed entries: the wrappers call them
	// (with copies of the caller's memory) instead of the real calls.
	swapped bool
}

// sys is the table in use. See sysTable.
var sys = sysTable{
	poll:    sysPoll,
	sel:     sysSelect,
	read:    unix.Read,
	write:   unix.Write,
	close:   unix.Close,
	fdFlags: func(fd int) (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0) },
	pipe:    sysPipe,

	sysPlatform: platformSys,
}

// msTimeout converts d to poll(2) and epoll_wait(2) milliseconds, rounding
// up so that a wait never ends before its deadline: a wait that ended early
// would be counted as spurious and restarted.
func msTimeout(d time.Duration) int {
	if d < 0 {
		return -1
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	if ms > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(ms)
}

// maxSelectWait caps one select(2): unix.NsecToTimeval rounds up by adding
// 999 ns first, so a timeout near math.MaxInt64 wraps to a negative
// timeval and select fails with EINVAL. A capped wait that ends with nothing
// is restarted by counters.restart with the time left, like any early return.
const maxSelectWait = 24 * time.Hour

func sysSelect(nfd int, r, w, e *unix.FdSet, timeout time.Duration) (int, error) {
	if timeout < 0 {
		return unix.Select(nfd, r, w, e, nil)
	}
	tv := unix.NsecToTimeval(int64(min(timeout, maxSelectWait)))
	if timeout > 0 && tv.Sec == 0 && tv.Usec == 0 {
		tv.Usec = 1 // round up: never end a wait before its deadline
	}
	return unix.Select(nfd, r, w, e, &tv)
}

// The counting wrappers: the only callers of sys. Each counts one system
// call in c, then makes it: directly, or through a swapped table with
// copies of the caller's memory (see sysTable).

func (c *counters) poll(fds []unix.PollFd, timeout time.Duration) (int, error) {
	c.syscalls.Add(1)
	if !sys.swapped {
		return sysPoll(fds, timeout)
	}
	cp := slices.Clone(fds)
	n, err := sys.poll(cp, timeout)
	copy(fds, cp)
	return n, err
}

func (c *counters) sel(nfd int, r, w, e *unix.FdSet, timeout time.Duration) (int, error) {
	c.syscalls.Add(1)
	if !sys.swapped {
		return sysSelect(nfd, r, w, e, timeout)
	}
	cr, cw, ce := heapCopy(r), heapCopy(w), heapCopy(e)
	n, err := sys.sel(nfd, cr, cw, ce, timeout)
	copyBack(r, cr)
	copyBack(w, cw)
	copyBack(e, ce)
	return n, err
}

func (c *counters) read(fd int, p []byte) (int, error) {
	c.syscalls.Add(1)
	if !sys.swapped {
		return unix.Read(fd, p)
	}
	cp := slices.Clone(p)
	n, err := sys.read(fd, cp)
	copy(p, cp)
	return n, err
}

func (c *counters) write(fd int, p []byte) (int, error) {
	c.syscalls.Add(1)
	if !sys.swapped {
		return unix.Write(fd, p)
	}
	return sys.write(fd, slices.Clone(p))
}

// close closes fd once. It is never retried, not even after EINTR: the fd
// is gone by then on Linux and may already be reused by another goroutine.
func (c *counters) close(fd int) error {
	c.syscalls.Add(1)
	err := sys.close(fd)
	if err == unix.EINTR {
		err = nil
	}
	return err
}

// fdOpen reports whether fd is an open file descriptor; any answer but
// EBADF counts as open (the fd may still be bad, the wait will tell).
func (c *counters) fdOpen(fd int) bool {
	c.syscalls.Add(1)
	_, err := sys.fdFlags(fd)
	return err != unix.EBADF
}

// heapCopy returns a copy of *p (nil for nil) for a swapped table's entry,
// which may keep it: see sysTable.
func heapCopy[T any](p *T) *T {
	if p == nil {
		return nil
	}
	cp := new(T)
	*cp = *p
	return cp
}

// copyBack copies what an entry left in cp, heapCopy's copy of p, to p.
func copyBack[T any](p, cp *T) {
	if p != nil {
		*p = *cp
	}
}
