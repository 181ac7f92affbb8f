package poller

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestEpollWaitKeepsNanoseconds checks that a wait with a deadline goes
// through epoll_pwait2 where the kernel has it, and that it reports a
// timeout as epoll_wait does.
func TestEpollWaitKeepsNanoseconds(t *testing.T) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(epfd)
	evs := make([]unix.EpollEvent, 4)
	// Both waits return EINTR as is when a signal lands in them (the
	// runtime's preemption signal can); callers restart, and so does this
	// test, a bounded number of times.
	n, err := untilNotEINTR(func() (int, error) { return epollWaitNs(epfd, evs, 50*time.Microsecond) })
	if err == unix.ENOSYS || err == unix.EPERM {
		t.Skipf("epoll_pwait2 refused here (%v): waits keep epoll_wait's milliseconds", err)
	}
	if err != nil || n != 0 {
		t.Fatalf("epoll_pwait2 on an empty epoll fd: n=%d err=%v, want a timeout", n, err)
	}
	if n, err := untilNotEINTR(func() (int, error) { return sysEpollWait(epfd, evs, 50*time.Microsecond) }); err != nil || n != 0 {
		t.Fatalf("sysEpollWait: n=%d err=%v, want a timeout", n, err)
	}
	if noPwait2.Load() {
		t.Fatal("sysEpollWait fell back to epoll_wait where epoll_pwait2 works")
	}
}

// untilNotEINTR calls wait until it returns something other than EINTR,
// at most 100 times.
func untilNotEINTR(wait func() (int, error)) (int, error) {
	n, err := wait()
	for i := 0; i < 100 && err == unix.EINTR; i++ {
		n, err = wait()
	}
	return n, err
}
