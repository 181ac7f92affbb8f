package netloop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// epoch is the origin of now: a monotonic clock, cheaper to store than a
// time.Time.
var epoch = time.Now()

func now() time.Duration { return time.Since(epoch) }

// A Loop is one of a Server's event loops: a poller.Loop with its own lock,
// goroutine, connections and read buffer. It is for work that belongs to a
// loop rather than to one connection: state the loop's connections share
// without a mutex (a pub/sub channel's subscribers, a per-loop cache), a
// broadcast to them, a periodic task. Post reaches it from any goroutine;
// its other methods are for the loop goroutine (handlers, timers, posted
// functions).
type Loop struct {
	// Every field not marked otherwise belongs to the loop goroutine (the
	// holder of lock).
	s    *Server
	id   int
	pl   *poller.Loop
	lock *gvl.Lock
	c    counters

	// handle is this loop's share of a *gcstep.Runtime given to
	// WithStepper, closed when the loop stops; nil otherwise.
	handle *gcstep.Loop

	buf   []byte
	conns map[*Conn]struct{}
	dirty []*Conn
	lns   []*listener // the listeners this loop accepts on

	draining bool
	drained  chan struct{} // closed once draining and no connection is left

	mu        sync.Mutex
	posted    []func() // guarded by mu
	scheduled bool     // guarded by mu: a timer will run posted
	stopped   bool     // guarded by mu: posted functions are refused
}

func newLoop(s *Server, id int) (*Loop, error) {
	l := &Loop{
		s:       s,
		id:      id,
		lock:    gvl.New(),
		buf:     make([]byte, s.cfg.readBufSize),
		conns:   make(map[*Conn]struct{}),
		drained: make(chan struct{}),
	}
	st := s.cfg.stepper
	switch {
	case s.cfg.stepperFor != nil:
		st = s.cfg.stepperFor(id)
	case st != nil:
		if rt, ok := st.(*gcstep.Runtime); ok {
			l.handle = rt.Loop()
			st = l.handle
		}
	}
	opts := append(append([]poller.Option(nil), s.cfg.loopOpts...),
		poller.WithGVL(l.lock), poller.WithStepper(st))
	pl, err := poller.NewLoop(opts...)
	if err != nil {
		if l.handle != nil {
			l.handle.Close()
		}
		return nil, err
	}
	l.pl = pl
	return l, nil
}

// Index returns the loop's place among its Server's loops, from 0 to
// len(Server.Loops())-1: a key for per-loop state.
func (l *Loop) Index() int { return l.id }

// Post calls fn on the loop goroutine soon, from any goroutine, through the
// loop's Wake; what fn writes to the loop's connections is flushed after
// it. Functions posted from one goroutine run in the order posted. A panic
// in fn is recovered and counted in Stats.Panics: the loop and its
// connections go on. Post returns ErrServerClosed, and fn is never called,
// once the loop has stopped (after Close, or at the end of Shutdown); a
// function Post accepted runs even if the loop stops before its turn, but
// then what it writes is dropped with the connections.
func (l *Loop) Post(fn func()) error {
	if fn == nil {
		panic("netloop: Loop.Post with a nil func")
	}
	if !l.post(func() { l.guard(fn) }) {
		return ErrServerClosed
	}
	return nil
}

// AfterFunc calls f on the loop goroutine once d has passed, and flushes
// what it writes to the loop's connections; a panic in f is treated as in
// Post. The returned Timer's Stop cancels the call. It may be called from
// any goroutine; f is not called once the loop has stopped.
func (l *Loop) AfterFunc(d time.Duration, f func()) *poller.Timer {
	if f == nil {
		panic("netloop: Loop.AfterFunc with a nil func")
	}
	return l.pl.AfterFunc(d, func() {
		l.guard(f)
		l.flushDirty()
	})
}

// Conns returns the loop's open connections, in no particular order, for
// the loop goroutine: a connection closed while the sequence runs (by the
// caller, or since it started) is not yielded after its close.
func (l *Loop) Conns() iter.Seq[*Conn] {
	return func(yield func(*Conn) bool) {
		for c := range l.conns {
			if !c.closed && !yield(c) {
				return
			}
		}
	}
}

// guard runs fn, a function posted to the loop or timed on it, and
// recovers a panic in it: counted, and the loop goes on.
func (l *Loop) guard(fn func()) {
	defer func() {
		if v := recover(); v != nil {
			l.c.panics.Add(1)
		}
	}()
	fn()
}

// run runs the loop until Close, then closes what is left.
func (l *Loop) run() error {
	l.lock.Acquire()
	defer l.lock.Release()
	err := l.pl.Run(context.Background())
	l.cleanup()
	if errors.Is(err, poller.ErrClosed) {
		return nil
	}
	return fmt.Errorf("netloop: loop %d: %w", l.id, err)
}

// cleanup runs on a loop that no longer runs, lock held: posted functions
// run (a connection handed over is opened, then closed with the rest),
// every connection is closed with ErrServerClosed and the listeners too.
func (l *Loop) cleanup() {
	l.mu.Lock()
	l.stopped = true
	posted := l.posted
	l.posted = nil
	l.mu.Unlock()
	for _, f := range posted {
		f()
	}
	for c := range l.conns {
		c.abort = true
		l.closeConn(c, ErrServerClosed)
	}
	for _, ln := range l.lns {
		ln.close()
	}
	l.lns = nil
	l.pl.Close()
	if l.handle != nil {
		l.handle.Close()
	}
}

// post makes f run on the loop goroutine soon, from any goroutine, and
// reports false if the loop has stopped and never will run it.
func (l *Loop) post(f func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return false
	}
	l.posted = append(l.posted, f)
	if !l.scheduled {
		l.scheduled = true
		l.pl.AfterFunc(0, l.runPosted)
	}
	return true
}

func (l *Loop) runPosted() {
	l.mu.Lock()
	posted := l.posted
	l.posted = nil
	l.scheduled = false
	l.mu.Unlock()
	for _, f := range posted {
		f()
	}
	l.flushDirty()
}

// call runs f, a handler callback for c, and closes c if f panics.
func (l *Loop) call(c *Conn, f func()) {
	defer func() {
		if v := recover(); v != nil {
			l.c.panics.Add(1)
			l.closeConn(c, &PanicError{Value: v, Stack: debug.Stack()})
		}
	}()
	f()
}

// open starts serving an accepted fd.
func (l *Loop) open(fd int, sa unix.Sockaddr, ln *listener) {
	if l.draining {
		unix.Close(fd)
		return
	}
	if !ln.unix && l.s.cfg.noDelay {
		// An error here is no reason to refuse the connection.
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	c := &Conn{l: l, fd: fd, ln: ln, sa: sa, armed: poller.Read}
	if err := l.pl.Add(fd, poller.Read, func(_ int, ev poller.Events) { l.event(c, ev) }); err != nil {
		unix.Close(fd)
		l.c.acceptErrors.Add(1)
		return
	}
	l.conns[c] = struct{}{}
	l.c.accepted.Add(1)
	if d := l.s.cfg.idle; d > 0 {
		c.SetIdleTimeout(d)
	}
	l.call(c, func() { l.s.h.OnOpen(c) })
	l.flushDirty()
}

// event handles what the loop reported for c's fd.
func (l *Loop) event(c *Conn, ev poller.Events) {
	if ev&poller.Write != 0 {
		l.flush(c)
	}
	if c.closed {
		return
	}
	switch {
	case c.armed&poller.Read != 0 && ev&(poller.Read|poller.Hangup|poller.Error) != 0:
		l.read(c)
	case ev&(poller.Hangup|poller.Error) != 0 && ev&poller.Write == 0:
		// Not reading, not writable, but hung up or failed: find out
		// why and close, or the report would come back at every wait.
		err := io.EOF
		if errno, _ := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_ERROR); errno != 0 {
			err = os.NewSyscallError("read", unix.Errno(errno))
		}
		l.closeConn(c, err)
	}
	l.flushDirty()
}

// read reads once into the loop's buffer and hands the bytes to OnData.
func (l *Loop) read(c *Conn) {
	n, err := ignoringEINTR(func() (int, error) { return unix.Read(c.fd, l.buf) })
	switch {
	case err == unix.EAGAIN:
		return
	case err != nil:
		l.closeConn(c, os.NewSyscallError("read", err))
		return
	case n == 0:
		// End of file: the peer closed, or shut down its writing half.
		// Stop reading (a level-triggered loop would report the EOF at
		// every wait), write what is pending, then close; or leave the
		// closing to an EOFHandler.
		c.eof = true
		c.reason = io.EOF
		l.markDirty(c)
		if h, ok := l.s.h.(EOFHandler); ok {
			l.call(c, func() { h.OnEOF(c) })
		} else {
			c.closing = true
		}
		return
	}
	l.c.reads.Add(1)
	l.c.bytesRead.Add(uint64(n))
	if c.idle > 0 {
		c.lastSeen = now()
	}
	if c.in == nil && len(c.data) == 0 {
		c.data = l.buf[:n]
	} else {
		if c.in == nil {
			c.in = getBuf()
		}
		b := append((*c.in)[:0], c.data...) // moves data to the front
		*c.in = append(b, l.buf[:n]...)
		c.data = *c.in
	}
	l.deliver(c)
}

// deliver calls OnData and keeps what it left.
func (l *Loop) deliver(c *Conn) {
	l.call(c, func() { l.s.h.OnData(c) })
	if c.closed {
		return
	}
	switch {
	case len(c.data) == 0:
		c.data = nil
		if c.in != nil {
			putBuf(c.in)
			c.in = nil
		}
	case c.in == nil:
		// A view of l.buf, which the next read overwrites: copy.
		c.in = getBuf()
		*c.in = append((*c.in)[:0], c.data...)
		c.data = *c.in
	case len(c.data) > l.s.cfg.readLimit && !c.paused:
		l.closeConn(c, ErrReadLimit)
		return
	}
	if c.Pending() >= l.s.cfg.writeLimit && !c.paused {
		c.paused = true
		l.c.pauses.Add(1)
		l.markDirty(c) // flush updates what the fd is watched for
	}
}

func (l *Loop) markDirty(c *Conn) {
	if !c.dirty {
		c.dirty = true
		l.dirty = append(l.dirty, c)
	}
}

// flushDirty flushes every connection written to (or closed) since the
// last call. Flushing may deliver input that waited, which may mark more.
func (l *Loop) flushDirty() {
	for i := 0; i < len(l.dirty); i++ {
		c := l.dirty[i]
		l.dirty[i] = nil
		c.dirty = false
		if !c.closed {
			l.flush(c)
		}
	}
	l.dirty = l.dirty[:0]
}

// flush writes what the socket takes of c's output, closes c if it is
// closing and nothing is left, and watches the fd for what is needed next.
func (l *Loop) flush(c *Conn) {
	if c.abort {
		l.closeConn(c, c.reason)
		return
	}
	for c.Pending() > 0 {
		n, err := ignoringEINTR(func() (int, error) { return unix.Write(c.fd, (*c.out)[c.outR:]) })
		if err == unix.EAGAIN {
			break
		}
		if err != nil {
			l.closeConn(c, os.NewSyscallError("write", err))
			return
		}
		l.c.writes.Add(1)
		l.c.bytesWritten.Add(uint64(n))
		c.outR += n
		if c.idle > 0 {
			c.lastSeen = now()
		}
	}
	pending := c.Pending()
	switch {
	case c.out == nil:
	case pending == 0:
		putBuf(c.out)
		c.out = nil
		c.outR = 0
	case c.outR > cap(*c.out)/2:
		// Keep appends from growing the buffer forever behind a slow
		// reader: move the unwritten part to the front.
		*c.out = append((*c.out)[:0], (*c.out)[c.outR:]...)
		c.outR = 0
	}
	if c.closing && pending == 0 {
		l.closeConn(c, c.reason)
		return
	}
	resume := c.paused && pending < l.s.cfg.writeLimit
	if resume {
		c.paused = false
	}
	want := poller.Events(0)
	if !c.closing && !c.paused && !c.eof {
		want |= poller.Read
	}
	if pending > 0 {
		want |= poller.Write
	}
	if want != c.armed {
		if err := l.pl.Modify(c.fd, want); err != nil {
			l.closeConn(c, err)
			return
		}
		c.armed = want
	}
	if resume && len(c.data) > 0 {
		// Input that waited for the peer to read: offer it again.
		l.deliver(c)
	}
}

// closeConn closes c's fd (with a reset if c.abort), releases its buffers
// and calls OnClose(c, reason).
func (l *Loop) closeConn(c *Conn, reason error) {
	if c.closed {
		return
	}
	c.closed = true
	c.closing = true
	c.gone.Store(true)
	l.pl.Remove(c.fd) // may fail only if the loop is closed: then it forgot the fd
	if c.abort {
		unix.SetsockoptLinger(c.fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	}
	unix.Close(c.fd)
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.in != nil {
		putBuf(c.in)
		c.in = nil
	}
	if c.out != nil {
		putBuf(c.out)
		c.out = nil
	}
	c.data = nil
	delete(l.conns, c)
	l.c.closed.Add(1)
	func() {
		defer func() {
			if v := recover(); v != nil {
				l.c.panics.Add(1)
			}
		}()
		l.s.h.OnClose(c, reason)
	}()
	if l.draining && len(l.conns) == 0 {
		l.signalDrained()
	}
}

func (l *Loop) signalDrained() {
	select {
	case <-l.drained:
	default:
		close(l.drained)
	}
}

// checkIdle is c's idle timer: close c if it has been idle long enough,
// or wait for the rest of its timeout.
func (l *Loop) checkIdle(c *Conn) {
	if c.closed || c.idle == 0 {
		return
	}
	if left := c.idle - (now() - c.lastSeen); left > 0 {
		c.timer.Reset(left)
		return
	}
	l.closeConn(c, ErrIdleTimeout)
}

// drain begins a graceful shutdown of the loop: no more accepting, every
// connection closed once its output is written.
func (l *Loop) drain() {
	l.draining = true
	for _, ln := range l.lns {
		l.pl.Remove(ln.fd)
		ln.close()
	}
	l.lns = nil
	for c := range l.conns {
		if !c.closing {
			c.closing = true
			c.reason = ErrServerClosed
		}
		l.markDirty(c)
	}
	l.flushDirty()
	if len(l.conns) == 0 {
		l.signalDrained()
	}
}

// ignoringEINTR calls f until it fails with something other than EINTR.
func ignoringEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != unix.EINTR {
			return n, err
		}
	}
}
