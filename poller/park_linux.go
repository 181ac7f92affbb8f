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
// block in a system call, so every hop of a ping-pong costs several thread
// wakeups (bench/README.md has the numbers). A parker parks the goroutine
// the way os.File.Read does instead: the fds to wait for are armed in a
// private epoll instance, the instance's fd is registered with the
// runtime's netpoller (os.NewFile of a nonblocking fd), and the goroutine
// waits for it with RawConn.Read, which parks it until the instance has
// something to report or the read deadline passes. No thread blocks, and
// the runtime's scheduler wakes the goroutine.
//
// Once woken, the parker collects what the instance reports with a
// zero-timeout epoll_wait. Epoll asks each fd the same question poll(2)
// and select(2) ask (the file's poll method, filtered by the events asked
// for plus POLLERR and POLLHUP), so Poll and WaitFD report what ppoll
// would, and Select maps the bits to its three sets as select(2) does.
//
// Fds the kernel will not put in an epoll instance (regular files and
// directories: EPERM; a closed fd: EBADF), and waits on more than
// maxParkFDs distinct fds, make park report false: the caller then waits
// the old way, blocking its thread, with the old call's semantics
// (POLLNVAL for a closed fd, EBADF from select).

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

// What select(2) counts as readable, writable and exceptional, as poll(2)
// bits (the kernel's POLLIN_SET, POLLOUT_SET and POLLEX_SET); a parked
// Select arms each fd for the sets it is in and reports it in a set if its
// bits meet that set's.
const (
	selectIn  = unix.EPOLLIN | unix.EPOLLRDNORM | unix.EPOLLRDBAND | unix.EPOLLHUP | unix.EPOLLERR
	selectOut = unix.EPOLLOUT | unix.EPOLLWRNORM | unix.EPOLLWRBAND | unix.EPOLLERR
	selectEx  = unix.EPOLLPRI
)

// A parker is a nonblocking epoll instance registered with Go's netpoller.
// It is used by one goroutine at a time.
//
// The fds of a wait stay in the instance after it, one-shot (EPOLLONESHOT),
// so that the next wait on the same fd, usually the same goroutine's next
// one, costs one EPOLL_CTL_MOD instead of an add and a delete. MOD also
// finds an fd closed and its number reused: a different file to epoll,
// ENOENT. It is safe only on an entry the last drain reported: epoll_wait
// disarms a one-shot entry it reports and takes it off the ready list, so
// nothing happens to it until MOD, and MOD wakes the instance's waiters if
// the fd is ready. An entry still armed (its wait ended at the deadline,
// or for another fd, or the drain failed) may sit on the ready list with
// its wakeup long consumed, and MOD would not wake anybody for it: such an
// entry is deleted and added again, since ADD always looks. An armed entry
// of another fd may wake a later wait once; that wait finds nothing and
// waits again. Each entry carries a generation in its event data, so that
// an entry left behind for a closed fd whose file lives on (in a dup)
// cannot be taken for the entry of the fd that now has its number.
type parker struct {
	epfd     int
	f        *os.File // owns epfd
	rc       syscall.RawConn
	deadline bool              // a read deadline is set on f
	reg      []parkEntry       // the fds in the instance, oldest first
	gen      uint32            // the last generation given to an entry
	evs      []unix.EpollEvent // the last drain's reports of entries of reg: evs[:nev]
	nev      int

	// One wait's state, set by park.
	c     *counters
	fds   []parkFD // distinct fds to wait for
	err   error    // an error of arm's system calls
	armed bool
	armFn func(uintptr) bool // p.arm, bound once so a wait allocates nothing
	// collided is set when a wait asked for the parker's own fd.
	collided bool
	ev       unix.EpollEvent // epoll_ctl's argument, kept here so it is not allocated
}

// A parkEntry is one fd in a parker's instance.
type parkEntry struct {
	fd    int32
	gen   uint32 // in the event data (Pad) beside fd
	armed bool   // added or modified since a drain last reported it
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
	parkers.mu.Unlock()
	return makeParker(c)
}

// makeParker makes a new parker, or returns nil if the netpoller refused
// one before (and remembers it if it refuses this one) or the parker's
// instance cannot be made.
func makeParker(c *counters) *parker {
	parkers.mu.Lock()
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
	p := &parker{epfd: fd, f: f, rc: rc, evs: make([]unix.EpollEvent, maxParkFDs)}
	p.armFn = p.arm
	return p, nil
}

// putParker returns p to the pool, or closes it if the pool is full.
//
// A parker that found a caller's fd number to be its own is closed, not
// kept: the caller then waits on its thread for a number that is closed
// again, and is told so (POLLNVAL, EBADF), instead of waiting on the
// parker's epoll instance.
func putParker(p *parker) {
	p.fds = p.fds[:0]
	if p.collided {
		p.f.Close()
		return
	}
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

// add adds fd and the poll(2) events ev (a PollFd's Events, or one of
// the select sets) to the wait being prepared, merging repeats of an fd.
// It reports false once there are too many fds.
func (p *parker) add(fd int32, ev uint32) bool {
	if fd == int32(p.epfd) {
		// The caller's fd was closed and the parker got its number. The
		// caller must see a closed fd: see putParker.
		p.collided = true
		return false
	}
	e := ev & parkEvents
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

// bound sets the read deadline of a wait of timeout (nonzero; negative:
// none) on p's file, and clears one left by an earlier wait.
func (p *parker) bound(timeout time.Duration) {
	if timeout > 0 {
		p.f.SetReadDeadline(time.Now().Add(timeout))
		p.deadline = true
	} else if p.deadline {
		p.f.SetReadDeadline(time.Time{})
		p.deadline = false
	}
}

// park waits, with the goroutine parked in the netpoller, until one of the
// fds given to add is ready or timeout (nonzero; negative: none) passes,
// and collects what is ready (see revents). It reports false if it could
// not wait that way (an fd the kernel would not take); the caller then
// waits on its thread. err is the collecting epoll_wait's, a raw errno.
func (p *parker) park(c *counters, timeout time.Duration) (ok bool, err error) {
	p.bound(timeout)
	p.c, p.err, p.armed, p.nev = c, nil, false, 0
	defer func() { p.c = nil }()
	// RawConn.Read calls arm once the netpoller has forgotten any earlier
	// readiness of the instance, so a readiness that comes while the fds
	// are armed, or that arming finds, wakes the wait that is about to
	// park.
	rerr := p.rc.Read(p.armFn)
	if !p.armed || p.err != nil || rerr != nil && !errors.Is(rerr, os.ErrDeadlineExceeded) {
		// Not armed: the deadline passed before RawConn.Read called arm
		// (a wait of a microsecond), and the fds were never looked at.
		return false, nil
	}
	return true, p.drain()
}

// arm is the RawConn.Read callback: the first call arms the fds and asks
// to park; the call after a wakeup ends the wait.
func (p *parker) arm(uintptr) bool {
	if p.armed {
		return true
	}
	p.armed = true
	for _, t := range p.fds {
		if p.err = p.register(t); p.err != nil {
			return true
		}
	}
	return false
}

// drain collects the instance's reports into p.evs without waiting,
// disarming the entries reported.
func (p *parker) drain() error {
	p.nev = 0
	n, err := p.c.epollWait(p.epfd, p.evs[:max(len(p.reg), 1)], 0)
	if err != nil {
		return err
	}
	// Keep the reports of current entries, which are disarmed now.
	for _, ev := range p.evs[:n] {
		if i := p.find(ev.Fd); i >= 0 && p.reg[i].gen == uint32(ev.Pad) {
			p.reg[i].armed = false
			p.evs[p.nev] = ev
			p.nev++
		}
	}
	return nil
}

// revents returns what the last drain reported for fd, as poll(2) bits.
func (p *parker) revents(fd int32) uint32 {
	for _, ev := range p.evs[:p.nev] {
		if ev.Fd == fd {
			return ev.Events
		}
	}
	return 0
}

// register arms t in the instance: MOD if the parker has the fd
// disarmed, ADD if it has not (deleting an armed entry first, and adding
// when MOD finds the number is another file now), making room first.
func (p *parker) register(t parkFD) error {
	p.gen++
	p.ev = unix.EpollEvent{Events: t.ev | unix.EPOLLONESHOT, Fd: t.fd, Pad: int32(p.gen)}
	if i := p.find(t.fd); i >= 0 {
		op := unix.EPOLL_CTL_MOD
		if p.reg[i].armed {
			op = unix.EPOLL_CTL_DEL
		}
		err := p.c.epollCtl(p.epfd, op, int(t.fd), &p.ev)
		if err == nil && op == unix.EPOLL_CTL_MOD {
			p.reg[i].armed, p.reg[i].gen = true, p.gen
			return nil
		}
		p.drop(i)
		if err != nil && err != unix.ENOENT {
			return err
		}
	}
	if len(p.reg) >= maxParkFDs {
		p.evict()
	}
	if err := p.c.epollCtl(p.epfd, unix.EPOLL_CTL_ADD, int(t.fd), &p.ev); err != nil {
		return err
	}
	p.reg = append(p.reg, parkEntry{fd: t.fd, gen: p.gen, armed: true})
	return nil
}

func (p *parker) find(fd int32) int {
	for i := range p.reg {
		if p.reg[i].fd == fd {
			return i
		}
	}
	return -1
}

func (p *parker) drop(i int) { p.reg = append(p.reg[:i], p.reg[i+1:]...) }

// evict removes the oldest entry that is not one of this wait's fds.
func (p *parker) evict() {
	for i, e := range p.reg {
		if p.isTarget(e.fd) {
			continue
		}
		// A failure means the fd was closed: the kernel has forgotten
		// its entry already. p.ev is not read by DEL.
		p.c.epollCtl(p.epfd, unix.EPOLL_CTL_DEL, int(e.fd), &p.ev)
		p.drop(i)
		return
	}
}

func (p *parker) isTarget(fd int32) bool {
	for _, t := range p.fds {
		if t.fd == fd {
			return true
		}
	}
	return false
}

// Parking a Loop's blocking wait in Go's netpoller.
//
// A Loop blocked in epoll_wait holds an OS thread, and whatever makes its
// fds ready (often a goroutine of the same program writing a pipe or a
// socket) has to wake that thread through the kernel. With a core taken
// by another process that wakeup waits for the kernel's scheduler to
// place the thread beside it, and every handoff between the producer and
// the loop pays it (bench/README.md, "Busy core", has the numbers). A
// goroutine parked in the netpoller is woken by the runtime instead, often
// on the thread that just made its fd ready, once that thread runs out of
// work: no cross-thread wakeup at all.
//
// A loopParker does that with its own small epoll instance, registered
// with the netpoller as a parker's is (newParker), whose one entry is the
// Loop's epoll fd: an epoll instance is readable while it has events to
// report, so the netpoller wakes the goroutine when the Loop's instance
// has something. The entry is one-shot and stays disarmed except during a
// parked wait: armed all the time, every event the Loop's instance
// received while the loop runs would wake the netpoller's sleeping thread
// for nothing. It is re-armed with EPOLL_CTL_MOD, never deleted and added
// again: adding an epoll fd to another makes the kernel walk every fd the
// Loop watches, looking for loops.
//
// A wait first looks at the Loop's instance with a zero-timeout
// epoll_wait, into the Loop's batch, and parks only if it found nothing:
// a wait that finds its fds ready costs what it costs on the thread, one
// system call. Arming looks at the instance again (MOD does), so an event
// that came after the look, or one the look missed, wakes the wait at
// once: that is what lets the wait trust an empty look, and what keeps an
// injected fault from losing an event. MOD wakes the waiter only for an
// entry that is not on the parker's ready list already, so between waits
// the entry is kept disarmed and off that list: once woken, the wait
// drains the parker (a drain that reports the entry leaves it so);
// otherwise it disarms the entry and drains. If that fails, the entry's
// state is unknown and the next arm deletes and adds it.
type loopParker struct {
	p     *parker
	fd    int32               // the Loop's epoll fd
	look  func() (int, error) // the Loop's zero-timeout wait, into its batch
	armFn func(uintptr) bool  // lp.arm, bound once so a wait allocates nothing
	clean bool                // the entry is disarmed and off the ready list

	// One wait's state.
	c     *counters
	armed bool  // the callback ran
	err   error // arming's error
}

// A parkResult says how a loopParker's wait went.
type parkResult uint8

const (
	// parkNo: the wait did not happen (arming failed, or the netpoller
	// did); the caller waits on its thread.
	parkNo parkResult = iota
	// parkDone: n and err are the wait's result.
	parkDone
	// parkDistrust: n and err are the wait's result, and the rest of
	// the wait blocks on its thread.
	parkDistrust
)

// The loop's entry in its parker: armed, and disarmed (the kernel adds
// EPOLLERR and EPOLLHUP, which an epoll fd never reports).
const (
	loopArmed    = unix.EPOLLIN | unix.EPOLLONESHOT
	loopDisarmed = unix.EPOLLONESHOT
)

// newLoopParker returns a parker for be's epoll instance, or nil if be is
// not epoll, the netpoller does not take an epoll fd, or the parker's
// instance cannot be made (no fd free): the Loop then waits on its thread.
// look is the Loop's zero-timeout wait.
func newLoopParker(be backend, c *counters, look func() (int, error)) *loopParker {
	eb, ok := be.(*epollBackend)
	if !ok {
		return nil
	}
	p := makeParker(c)
	if p == nil {
		return nil
	}
	lp := &loopParker{p: p, fd: int32(eb.epfd), look: look}
	lp.armFn = lp.arm
	if lp.ctl(c, unix.EPOLL_CTL_ADD, loopDisarmed) != nil {
		p.f.Close()
		return nil
	}
	lp.clean = true
	return lp
}

// wait waits, parked in the netpoller, until the Loop's instance has
// something to report or timeout (nonzero; negative: none) passes, and
// returns the last look's result: how many events it put in the batch, or
// its raw errno.
func (lp *loopParker) wait(c *counters, timeout time.Duration) (int, parkResult, error) {
	if n, err := lp.look(); n != 0 || err != nil {
		return n, parkDone, err
	}
	p := lp.p
	p.bound(timeout)
	lp.c, lp.armed, lp.err = c, false, nil
	rerr := p.rc.Read(lp.armFn)
	lp.c = nil
	if !lp.armed {
		if errors.Is(rerr, os.ErrDeadlineExceeded) {
			// The deadline passed before the entry was armed: the look
			// above was this wait's last.
			return 0, parkDone, nil
		}
		return 0, parkNo, nil
	}
	if lp.err != nil {
		return 0, parkNo, nil
	}
	if rerr != nil {
		lp.disarm(c)
		if errors.Is(rerr, os.ErrDeadlineExceeded) {
			// An event that came with the deadline is found by the
			// next wait's look.
			return 0, parkDone, nil
		}
		return 0, parkNo, nil // the netpoller failed
	}
	reported, ok := lp.drain(c)
	switch {
	case ok && reported:
		lp.clean = true // one-shot: reporting disarmed it
	case ok:
		// Woken for nothing: the caller takes it for a spurious
		// return and waits again.
		lp.disarm(c)
		return 0, parkDone, nil
	}
	// The parker reported the Loop's instance (or the drain failed, and
	// the look decides).
	n, err := lp.look()
	if n == 0 || err != nil {
		// The instance said it had something and the look found
		// nothing, or failed: the rest of this wait blocks on its
		// thread, where each retry costs one system call, rather than
		// arming and draining around every look.
		return n, parkDistrust, err
	}
	return n, parkDone, nil
}

// arm is the RawConn.Read callback: the first call arms the entry and asks
// to park; the call after a wakeup ends the wait.
func (lp *loopParker) arm(uintptr) bool {
	if lp.armed {
		return true
	}
	lp.armed = true
	if !lp.clean {
		// Its state is unknown: delete it, and add it below, which
		// looks whatever the state was.
		lp.ctl(lp.c, unix.EPOLL_CTL_DEL, 0)
		lp.err = lp.ctl(lp.c, unix.EPOLL_CTL_ADD, loopArmed)
	} else {
		lp.err = lp.ctl(lp.c, unix.EPOLL_CTL_MOD, loopArmed)
	}
	lp.clean = false
	return lp.err != nil
}

// disarm brings an entry that may be armed, and may be on the ready list,
// back to disarmed and off the list: disarmed, no event can put it there
// again, and a drain takes it off without reporting it.
func (lp *loopParker) disarm(c *counters) {
	if lp.ctl(c, unix.EPOLL_CTL_MOD, loopDisarmed) != nil {
		return
	}
	if _, ok := lp.drain(c); ok {
		lp.clean = true
	}
}

// drain collects the parker's reports without waiting, and reports
// whether the entry was among them and whether the call succeeded.
func (lp *loopParker) drain(c *counters) (reported, ok bool) {
	p := lp.p
	n, err := c.epollWait(p.epfd, p.evs[:1], 0)
	if err != nil {
		return false, false
	}
	return n > 0 && p.evs[0].Fd == lp.fd, true
}

func (lp *loopParker) ctl(c *counters, op int, events uint32) error {
	p := lp.p
	p.ev = unix.EpollEvent{Events: events, Fd: lp.fd}
	return c.epollCtl(p.epfd, op, int(lp.fd), &p.ev)
}

// close closes the parker's instance, taking it out of the netpoller. No
// wait may be running.
func (lp *loopParker) close() error {
	return lp.p.f.Close()
}
