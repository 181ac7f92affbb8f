package poller

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Parking a waiting goroutine in Go's netpoller.
//
// A Mux shared by goroutines that share a gvl.Lock must not block an OS
// thread in ppoll(2) or select(2) while it waits with the lock released:
// the woken thread has to get a P back from the scheduler, and the lock
// handoff that follows readies a goroutine on a P that is itself about to
// block in a system call. Every hop of a ping-pong then costs several
// thread wakeups (see bench/README.md). A parker instead parks the
// goroutine the way os.File.Read does: the fds to wait for are added to a
// private epoll instance, that instance's fd is registered with the
// runtime's netpoller (through os.NewFile, as a nonblocking file), and the
// goroutine waits for it with RawConn.Read, which parks it until the
// instance reports something or the read deadline passes. No thread is
// blocked and the goroutine is woken by the runtime's own scheduler.
//
// The parker only says "something may be ready". The caller then asks the
// kernel with its own call (ppoll or select) and a zero timeout, so what
// Poll, Select and WaitFD report, closed fds and hangups included, is
// exactly what those calls report.
//
// Fds the kernel will not add to an epoll instance (regular files and
// directories: EPERM; a closed fd: EBADF) make park report false, and the
// caller waits the old way, blocking its thread; so do more than
// maxParkFDs distinct fds, for which adding and removing each would cost
// more than the thread wakeups saved.

// maxParkFDs bounds the distinct fds one parked wait adds: each costs two
// epoll_ctl calls.
const maxParkFDs = 64

// maxIdleParkers bounds the parkers kept for reuse; one is in use per
// goroutine parked at the same moment, and the rest are closed when
// returned.
const maxIdleParkers = 16

// parkEvents are the poll(2) bits an epoll instance understands: Linux
// gives poll and epoll the same values (EPOLLIN == POLLIN, and so on), so
// a poll(2) event mask is an epoll one.
const parkEvents = unix.EPOLLIN | unix.EPOLLPRI | unix.EPOLLOUT | unix.EPOLLRDNORM |
	unix.EPOLLRDBAND | unix.EPOLLWRNORM | unix.EPOLLWRBAND | unix.EPOLLRDHUP

// A parker is a nonblocking epoll instance registered with Go's netpoller.
// It is used by one goroutine at a time.
type parker struct {
	epfd     int
	f        *os.File // owns epfd
	rc       syscall.RawConn
	deadline bool // a read deadline is set on f

	// One wait's state, set by park.
	c     *counters
	fds   []parkFD // distinct fds to wait for
	added int      // fds[:added] are in the instance
	err   error    // epoll_ctl's error from arm
	armed bool
	armFn func(uintptr) bool // p.arm, bound once so a wait allocates nothing
	ev    unix.EpollEvent    // epoll_ctl's argument, kept here so it is not allocated
}

// A parkFD is one fd and the poll(2) events to wait for.
type parkFD struct {
	fd int32
	ev uint32
}

// parkers is the process's pool of idle parkers. broken is set once the
// netpoller refuses a parker; every wait then blocks its thread as before.
var parkers struct {
	mu     sync.Mutex
	free   []*parker
	broken bool
}

// getParker returns an idle parker, or makes one. It returns nil if the
// netpoller cannot take one, or the process is out of fds: the caller then
// waits on its thread.
func getParker(c *counters) *parker {
	parkers.mu.Lock()
	if n := len(parkers.free); n > 0 {
		p := parkers.free[n-1]
		parkers.free = parkers.free[:n-1]
		parkers.mu.Unlock()
		return p
	}
	broken := parkers.broken
	parkers.mu.Unlock()
	if broken {
		return nil
	}
	p, err := newParker(c)
	if err != nil {
		if errors.Is(err, errNotPollable) {
			parkers.mu.Lock()
			parkers.broken = true
			parkers.mu.Unlock()
		}
		return nil
	}
	return p
}

var errNotPollable = errors.New("poller: the netpoller does not take an epoll fd")

func newParker(c *counters) (*parker, error) {
	fd, err := c.epollCreate()
	if err != nil {
		return nil, err
	}
	if err := c.setNonblock(fd); err != nil {
		c.close(fd)
		return nil, err
	}
	// A nonblocking fd makes os.NewFile register it with the netpoller.
	f := os.NewFile(uintptr(fd), "poller-parker")
	rc, err := f.SyscallConn()
	if err == nil {
		// SetReadDeadline fails for a file the netpoller did not take.
		err = f.SetReadDeadline(time.Time{})
	}
	if err != nil {
		f.Close()
		return nil, errNotPollable
	}
	p := &parker{epfd: fd, f: f, rc: rc}
	p.armFn = p.arm
	return p, nil
}

// putParker returns p to the pool, or closes it if the pool is full.
func putParker(p *parker) {
	p.fds = p.fds[:0]
	parkers.mu.Lock()
	if len(parkers.free) < maxIdleParkers {
		parkers.free = append(parkers.free, p)
		p = nil
	}
	parkers.mu.Unlock()
	if p != nil {
		p.f.Close()
	}
}

// closeIdleParkers closes every idle parker (for tests that count fds).
func closeIdleParkers() {
	parkers.mu.Lock()
	free := parkers.free
	parkers.free = nil
	parkers.mu.Unlock()
	for _, p := range free {
		p.f.Close()
	}
}

// add adds fd and the poll(2) events ev to the wait being prepared,
// merging repeats of an fd. It reports false once there are too many.
func (p *parker) add(fd int32, ev int16) bool {
	e := uint32(uint16(ev)) & parkEvents
	for i := range p.fds {
		if p.fds[i].fd == fd {
			p.fds[i].ev |= e
			return true
		}
	}
	if len(p.fds) == maxParkFDs {
		return false
	}
	p.fds = append(p.fds, parkFD{fd, e})
	return true
}

// park waits, with the goroutine parked in the netpoller, until one of the
// fds given to add may be ready or timeout (nonzero; negative: none)
// passes. It reports false if it could not wait that way (an fd the kernel
// would not add); the caller then waits on its thread. Either way the
// caller learns what is ready from its own zero-timeout call.
func (p *parker) park(c *counters, timeout time.Duration) bool {
	if timeout > 0 {
		p.f.SetReadDeadline(time.Now().Add(timeout))
		p.deadline = true
	} else if p.deadline {
		p.f.SetReadDeadline(time.Time{})
		p.deadline = false
	}
	p.c, p.added, p.err, p.armed = c, 0, nil, false
	// RawConn.Read calls arm once the netpoller has forgotten any earlier
	// readiness of the instance, so the fds are added after that and a
	// readiness that comes with them (an fd ready already) is not lost: it
	// wakes the instance's waiters, parking or not yet.
	err := p.rc.Read(p.armFn)
	for _, t := range p.fds[:p.added] {
		// A failure means the fd was closed meanwhile: the kernel has
		// forgotten it already.
		c.epollCtl(p.epfd, unix.EPOLL_CTL_DEL, int(t.fd), &p.ev)
	}
	p.c = nil
	return p.err == nil && (err == nil || errors.Is(err, os.ErrDeadlineExceeded))
}

// arm is the RawConn.Read callback: the first call adds the fds and asks
// to park; the call after a wakeup ends the wait.
func (p *parker) arm(uintptr) bool {
	if p.armed {
		return true
	}
	p.armed = true
	for _, t := range p.fds {
		p.ev = unix.EpollEvent{Events: t.ev, Fd: t.fd}
		if err := p.c.epollCtl(p.epfd, unix.EPOLL_CTL_ADD, int(t.fd), &p.ev); err != nil {
			p.err = err
			return true
		}
		p.added++
	}
	return false
}
