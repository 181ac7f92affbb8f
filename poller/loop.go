package poller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A Handler is called by a Loop, on the loop goroutine and with the lock
// held (if there is one), when its fd is ready: ev holds what is ready among
// what was asked for, plus Hangup, Error and Invalid. It must not block:
// it reads and writes fd with raw system calls (see the package comment).
type Handler func(fd int, ev Events)

// batchSize is how many ready fds one wait reports at most; the others stay
// ready (level-triggered) and are reported by the next wait.
const batchSize = 128

// A Loop is an event loop: fds with handlers, timers and Wake, run by one
// goroutine through Run or RunOnce, waiting with the idle algorithm of the
// package comment.
//
// A wait that blocks blocks the loop goroutine's thread in the backend's
// wait. With WithNetpoller(true), on epoll (Linux), it parks the goroutine
// in Go's netpoller instead, as a goroutine reading an os.File does:
// whatever makes an fd ready, often another goroutine of the program,
// then hands over to the loop through the runtime's scheduler rather than
// by waking another thread, which helps a stream's consumer most when
// other processes keep the cores busy (see WithNetpoller for what it costs
// a request/response loop). Such a Loop keeps one more fd (a small epoll
// instance registered with the netpoller); where it cannot, it waits on
// its thread as the other backends do.
//
// Add, Modify, Remove, AfterFunc, Wake, Stats and Close may be called from
// any goroutine, and from handlers and timer functions during dispatch; a
// handler may remove or modify its own fd. Run and RunOnce are for one
// goroutine at a time, which must hold the lock given with WithGVL.
type Loop struct {
	c       counters
	idle    idler
	be      backend
	backend Backend
	pollFn  waitFunc     // l.poll, bound once
	evs     []readyEvent // the batch; loop goroutine only
	mayStep bool         // the stepper may have work; loop goroutine only

	// park parks blocking waits in Go's netpoller (park_linux.go); nil
	// where it cannot: the wait then blocks its thread in the backend.
	// unparked is set for the rest of a RunOnce's wait once parking
	// failed (the kernel refused to arm) or its look did (see
	// loopParker). Both are the loop goroutine's.
	park     *loopParker
	unparked bool

	// waiting is true from the moment RunOnce computes its timeout (under
	// mu) until its wait returns. A change that the wait must see (a timer
	// earlier than the wait's timeout, a registration on a backend that
	// only sees it in the next wait) wakes the loop when waiting is set.
	waiting atomic.Bool

	mu       sync.Mutex
	regs     map[int]*registration // guarded by mu; nil once closed
	lastGen  uint32                // guarded by mu; last generation handed out
	timers   timerHeap             // guarded by mu
	timerSeq uint64                // guarded by mu; last Timer.seq handed out
	running  bool                  // guarded by mu; RunOnce in progress
	closed   bool                  // guarded by mu

	wake waker
}

// A registration is one watched fd. keep holds the *os.File or
// syscall.Conn the fd came from, so the file is not closed by a finalizer
// while the loop watches its fd.
type registration struct {
	fd   int
	ev   Events
	gen  uint32
	h    Handler
	keep any
}

// NewLoop returns a Loop configured by opts, or the error of the system call
// that failed (running out of fds, for instance), or ErrFDRange if its own
// wake fd is one the select backend cannot hold. Like New, it panics, with
// an error wrapping ErrBackend, if WithBackend names a backend the platform
// lacks: that is a mistake in the program, which Backends lets it avoid.
func NewLoop(opts ...Option) (*Loop, error) {
	cfg := newConfig(opts)
	if !cfg.backend.available() {
		panic(backendError("NewLoop", cfg.backend))
	}
	l := &Loop{
		backend: cfg.backend,
		evs:     make([]readyEvent, batchSize),
		regs:    make(map[int]*registration),
		mayStep: true,
	}
	l.idle = idler{lock: cfg.lock, stepper: cfg.stepper, budget: cfg.budget, c: &l.c, epoch: time.Now()}
	l.pollFn = l.poll
	be, err := newBackend(cfg.backend, &l.c)
	if err != nil {
		return nil, opError("NewLoop", err)
	}
	l.be = be
	if err := l.wake.open(&l.c); err != nil {
		be.close()
		return nil, opError("NewLoop", err)
	}
	if limit := fdLimitOf(cfg.backend); l.wake.rfd >= limit {
		// select(2) cannot hold it: the process has FD_SETSIZE fds open.
		l.wake.close(&l.c)
		be.close()
		return nil, rangeError("NewLoop", l.wake.rfd, limit)
	}
	if err := be.add(l.wake.rfd, Read, wakeGen); err != nil {
		l.wake.close(&l.c)
		be.close()
		return nil, opError("NewLoop", err)
	}
	if !cfg.onThread {
		l.park = newLoopParker(be, &l.c, l.look)
	}
	return l, nil
}

// Stats returns what l did so far.
func (l *Loop) Stats() Stats { return l.c.snapshot() }

// Backend returns the backend l waits with.
func (l *Loop) Backend() Backend { return l.backend }

// Add watches fd for ev (Read, Write, Priority; Hangup, Error and Invalid
// are always reported) and calls h when it is ready. The fd stays owned by
// the caller, who must Remove it before closing it: epoll forgets a closed
// fd by itself only once every duplicate of it is closed, and select and
// poll report it Invalid (after which the Loop drops it).
//
// Any fd poll(2) accepts works: pipes, sockets, ttys, eventfds. Epoll
// refuses regular files and directories (EPERM), which are always ready:
// read them directly, or use the poll backend.
//
// Errors: ErrFDRange for a negative fd, one above the kernel's int32, or
// one select cannot hold, ErrRegistered if fd is already watched, the
// system call's error for an fd that is not open, ErrClosed after Close.
func (l *Loop) Add(fd int, ev Events, h Handler) error {
	return l.add("Add", fd, ev, h, nil)
}

// AddFile is Add for the fd of f, which it obtains through f.SyscallConn,
// not f.Fd: Fd switches the file, and every dup of it, to blocking mode.
// f is kept alive while registered. It returns the fd, for Modify and
// Remove; a closed f is an error matching os.ErrClosed.
func (l *Loop) AddFile(f *os.File, ev Events, h Handler) (int, error) {
	return l.addConn("AddFile", f, ev, h)
}

// AddConn is Add for the fd of c (a *net.TCPConn, a *net.UnixConn, an
// *os.File...), obtained through c.SyscallConn without changing its
// blocking mode. c is kept alive while registered. It returns the fd, for
// Modify and Remove.
func (l *Loop) AddConn(c syscall.Conn, ev Events, h Handler) (int, error) {
	return l.addConn("AddConn", c, ev, h)
}

// addConn is AddConn, reporting errors as op's.
func (l *Loop) addConn(op string, c syscall.Conn, ev Events, h Handler) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1, opError(op, err)
	}
	fd := -1
	if err := rc.Control(func(s uintptr) { fd = int(s) }); err != nil {
		// Control fails only for a closed file or connection, with an
		// internal error that os.ErrClosed does not match.
		return -1, opError(op, fmt.Errorf("%w: %w", os.ErrClosed, err))
	}
	if err := l.add(op, fd, ev, h, c); err != nil {
		return -1, err
	}
	return fd, nil
}

// add is Add, reporting errors as op's.
func (l *Loop) add(op string, fd int, ev Events, h Handler, keep any) error {
	if h == nil {
		panic("poller: " + op + " with a nil Handler")
	}
	if limit := fdLimitOf(l.backend); fd < 0 || fd >= limit {
		// The kernel's fd is an int32: a larger number would be
		// truncated to another fd's. select(2) holds fewer.
		return rangeError(op, fd, limit)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fdError(op, fd, ErrClosed)
	}
	if _, ok := l.regs[fd]; ok {
		return fdError(op, fd, ErrRegistered)
	}
	l.lastGen++
	if l.lastGen == wakeGen {
		l.lastGen++
	}
	r := &registration{fd: fd, ev: ev & waitable, gen: l.lastGen, h: h, keep: keep}
	if err := l.be.add(fd, r.ev, r.gen); err != nil {
		return fdError(op, fd, err)
	}
	l.regs[fd] = r
	l.changedLocked()
	return nil
}

// Modify changes what fd is watched for. A Loop never delivers an event
// that was not asked for when its handler is called (Hangup, Error and
// Invalid aside), even from a batch collected before Modify.
func (l *Loop) Modify(fd int, ev Events) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fdError("Modify", fd, ErrClosed)
	}
	r, ok := l.regs[fd]
	if !ok {
		return fdError("Modify", fd, ErrNotRegistered)
	}
	if err := l.be.modify(fd, ev&waitable, r.gen); err != nil {
		return fdError("Modify", fd, err)
	}
	r.ev = ev & waitable
	l.changedLocked()
	return nil
}

// Remove stops watching fd. Its handler is not called again, not even for
// events of a batch collected before Remove. If fd was closed before being
// removed, the registration is dropped all the same and the kernel's
// complaint (EBADF, or ENOENT if the number was reused) is returned.
func (l *Loop) Remove(fd int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fdError("Remove", fd, ErrClosed)
	}
	if _, ok := l.regs[fd]; !ok {
		return fdError("Remove", fd, ErrNotRegistered)
	}
	delete(l.regs, fd)
	err := l.be.remove(fd)
	l.changedLocked()
	if err != nil {
		return fdError("Remove", fd, err)
	}
	return nil
}

// changedLocked wakes a wait that must see a change it would otherwise
// miss. l.mu must be held.
func (l *Loop) changedLocked() {
	if l.waiting.Load() && l.be.wakeOnChange() {
		l.Wake()
	}
}

// Run runs the loop until ctx is done (returning ctx.Err()), Close is
// called (returning ErrClosed), or a wait fails (returning its error).
func (l *Loop) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, l.Wake)
	defer stop()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := l.runOnce("Run", -1); err != nil {
			return err
		}
	}
}

// RunOnce waits until an fd is ready, a timer is due, Wake is called or
// timeout passes (negative: no limit; zero: do not block), stepping while
// idle, then calls the handlers of the ready fds and the functions of the
// due timers, and returns how many it called. It returns ErrClosed if the
// loop is closed, before or during the call.
//
// The stepper is offered work at the first idle moment of a RunOnce. Once
// it reports no more, later calls do not ask it again until a handler or
// timer has run: an idle loop woken only by Wake does not step in vain.
//
// It must not be called concurrently with itself, nor from a handler; it
// panics if it is.
//
// A panic in a handler or a timer func is not recovered: it propagates out
// of RunOnce (and Run) to the caller, with the loop consistent. The other
// ready fds of that wait are not called but stay ready, so the next wait
// reports them again; the due timers not yet called stay due. A caller that
// recovers may run the loop again, or Close it.
func (l *Loop) RunOnce(timeout time.Duration) (int, error) {
	return l.runOnce("RunOnce", timeout)
}

// runOnce is RunOnce, reporting errors as op's.
func (l *Loop) runOnce(op string, timeout time.Duration) (int, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, opError(op, ErrClosed)
	}
	if l.running {
		l.mu.Unlock()
		panic("poller: Loop.RunOnce called concurrently or from a handler")
	}
	l.running = true
	l.waiting.Store(true)
	// A wait cut short for the next timer ends with work: the timer.
	clamped := l.timers.clamp(timeout)
	timerDue := clamped != timeout
	timeout = clamped
	l.mu.Unlock()
	defer l.exit()

	n, err := l.idle.wait(timeout, false, timerDue, &l.mayStep, l.pollFn)
	l.waiting.Store(false)
	l.unparked = false
	if err != nil {
		return 0, opError(op, os.NewSyscallError(l.be.waitName(), err))
	}
	// Handlers and timers may leave garbage: dispatch and fireTimers set
	// mayStep before each call, so the next idle moment offers the
	// stepper work again, even after a panic.
	called := l.dispatch(n)
	called += l.fireTimers()
	if l.isClosed() {
		return called, opError(op, ErrClosed)
	}
	return called, nil
}

func (l *Loop) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// exit ends a RunOnce, freeing the loop's fds if Close came meanwhile.
func (l *Loop) exit() {
	l.waiting.Store(false)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running = false
	if l.closed {
		l.freeLocked()
	}
}

// poll is the Loop's waitFunc: one backend wait. A wait that may block
// parks the goroutine in Go's netpoller where the Loop can (epoll on
// Linux, see loopParker), and blocks the thread in the backend's wait
// elsewhere: the poll and select backends, other platforms, a netpoller
// that refuses an epoll fd, a Loop made with no fd free for the parker's
// instance, a Loop without WithNetpoller(true), and the rest of a wait
// whose arming or look failed.
func (l *Loop) poll(timeout time.Duration) (int, error) {
	if timeout != 0 && l.park != nil && !l.unparked {
		n, res, err := l.park.wait(&l.c, timeout)
		if res != parkNo {
			l.c.parked.Add(1)
			l.unparked = res == parkDistrust
			return n, err
		}
		l.unparked = true
	}
	return l.be.wait(timeout, l.evs)
}

// look is the parked wait's look: a zero-timeout backend wait.
func (l *Loop) look() (int, error) {
	return l.be.wait(0, l.evs)
}

// dispatch calls the handlers of the first n events of l.evs and returns
// how many it called. Each registration is looked up again under mu, so an
// event whose fd was removed, or removed and added again (a new
// generation), since the wait is dropped.
func (l *Loop) dispatch(n int) int {
	called := 0
	for i := range n {
		e := l.evs[i]
		if e.gen == wakeGen {
			l.wake.drain(&l.c)
			continue
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			break
		}
		r := l.regs[int(e.fd)]
		if r == nil || r.gen != e.gen {
			l.mu.Unlock()
			continue
		}
		ev := e.ev & (r.ev | Hangup | Error | Invalid)
		h := r.h
		if e.ev&Invalid != 0 {
			// Closed behind the loop's back: drop it now, or every
			// wait would report it again and the loop would spin.
			delete(l.regs, r.fd)
			l.be.remove(r.fd)
		}
		l.mu.Unlock()
		if ev == 0 {
			continue
		}
		called++
		l.c.events.Add(1)
		l.mayStep = true // set before the call, which may panic
		h(int(e.fd), ev)
	}
	return called
}

// Close stops the loop and releases every fd it created (the backend's and
// the wake fds; registered fds belong to their owners and stay open). A
// RunOnce or Run in progress is woken and returns ErrClosed, releasing the
// fds on its way out. Every later call returns ErrClosed, Close included.
func (l *Loop) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return opError("Close", ErrClosed)
	}
	l.closed = true
	l.regs = nil
	l.timers.clear()
	if l.running {
		l.mu.Unlock()
		l.Wake()
		return nil
	}
	err := l.freeLocked()
	l.mu.Unlock()
	if err != nil {
		return opError("Close", err)
	}
	return nil
}

// freeLocked closes the loop's own fds. l.mu must be held, l.closed set and
// no RunOnce running; it runs once.
func (l *Loop) freeLocked() error {
	if l.be == nil {
		return nil
	}
	var perr error
	if l.park != nil {
		// Out of the netpoller before the epoll fd it watches is closed.
		perr = l.park.close()
		l.park = nil
	}
	err := errors.Join(perr, l.wake.close(&l.c), l.be.close())
	l.be = nil
	return err
}
