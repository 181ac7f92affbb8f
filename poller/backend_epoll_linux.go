package poller

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// epollBackend waits with epoll(7), level-triggered, so that it reports
// exactly what poll and select report: an fd stays ready until drained.
// Its cost does not grow with the number of registered fds.
//
// The event data holds the fd and its generation (EpollEvent.Fd and .Pad),
// never a Go pointer: the kernel keeps that memory, the garbage collector
// cannot see it, and a stale pointer there needs the race/norace twin files
// other loops carry.
type epollBackend struct {
	c    *counters
	epfd int
	buf  []unix.EpollEvent // used by wait only
}

func newPlatformBackend(b Backend, c *counters) (backend, error) {
	if b != BackendEpoll {
		panic("poller: unknown backend " + b.String())
	}
	return newEpollBackend(c)
}

func newEpollBackend(c *counters) (*epollBackend, error) {
	fd, err := c.epollCreate()
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	return &epollBackend{c: c, epfd: fd}, nil
}

// toEpoll returns the epoll events for ev. Read also asks for EPOLLRDHUP,
// so a peer's close (or its shutdown of writing) is reported as Hangup; it
// comes with EPOLLIN (the read returns 0), so it wakes no loop that Read
// would not have woken, and it stops when Read is no longer watched.
func toEpoll(ev Events) uint32 {
	var e uint32
	if ev&Read != 0 {
		e |= unix.EPOLLIN | unix.EPOLLRDHUP
	}
	if ev&Write != 0 {
		e |= unix.EPOLLOUT
	}
	if ev&Priority != 0 {
		e |= unix.EPOLLPRI
	}
	return e
}

func fromEpoll(e uint32) Events {
	var ev Events
	if e&unix.EPOLLIN != 0 {
		ev |= Read
	}
	if e&unix.EPOLLOUT != 0 {
		ev |= Write
	}
	if e&unix.EPOLLPRI != 0 {
		ev |= Priority
	}
	if e&(unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
		ev |= Hangup
	}
	if e&unix.EPOLLERR != 0 {
		ev |= Error
	}
	return ev
}

func (b *epollBackend) ctl(op, fd int, ev Events, gen uint32) error {
	e := unix.EpollEvent{Events: toEpoll(ev), Fd: int32(fd), Pad: int32(gen)}
	return os.NewSyscallError("epoll_ctl", b.c.epollCtl(b.epfd, op, fd, &e))
}

func (b *epollBackend) add(fd int, ev Events, gen uint32) error {
	return b.ctl(unix.EPOLL_CTL_ADD, fd, ev, gen)
}

func (b *epollBackend) modify(fd int, ev Events, gen uint32) error {
	return b.ctl(unix.EPOLL_CTL_MOD, fd, ev, gen)
}

func (b *epollBackend) remove(fd int) error {
	// A non-nil event keeps kernels before 2.6.9 happy; it costs nothing.
	var e unix.EpollEvent
	return os.NewSyscallError("epoll_ctl", b.c.epollCtl(b.epfd, unix.EPOLL_CTL_DEL, fd, &e))
}

func (b *epollBackend) wait(timeout time.Duration, evs []readyEvent) (int, error) {
	if len(b.buf) < len(evs) {
		b.buf = make([]unix.EpollEvent, len(evs))
	}
	n, err := b.c.epollWait(b.epfd, b.buf[:len(evs)], timeout)
	if err != nil {
		return 0, err
	}
	for i := range n {
		e := &b.buf[i]
		evs[i] = readyEvent{fd: e.Fd, gen: uint32(e.Pad), ev: fromEpoll(e.Events)}
	}
	return n, nil
}

// wakeOnChange is false: epoll_ctl takes effect in a running epoll_wait.
func (b *epollBackend) wakeOnChange() bool { return false }

func (b *epollBackend) close() error {
	return os.NewSyscallError("close", b.c.close(b.epfd))
}

func (b *epollBackend) waitName() string { return "epoll_wait" }
