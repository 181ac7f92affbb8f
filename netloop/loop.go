package netloop

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// A loop is one poller.Loop with its lock, its connections and its read
// buffer. Every field not marked otherwise belongs to the loop goroutine
// (the holder of lock).
type loop struct {
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

func newLoop(s *Server, id int) (*loop, error) {
	l := &loop{
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

// run runs the loop until Close, then closes what is left.
func (l *loop) run() error {
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
func (l *loop) cleanup() {
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
func (l *loop) post(f func()) bool {
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

func (l *loop) runPosted() {
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
func (l *loop) call(c *Conn, f func()) {
	defer func() {
		if v := recover(); v != nil {
			l.c.panics.Add(1)
			l.closeConn(c, &PanicError{Value: v, Stack: debug.Stack()})
		}
	}()
	f()
}

// open starts serving an accepted fd.
func (l *loop) open(fd int, sa unix.Sockaddr, ln *listener) {
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
func (l *loop) event(c *Conn, ev poller.Events) {
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
func (l *loop) read(c *Conn) {
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
		// every wait), write what is pending, then close.
		c.eof = true
		c.closing = true
		c.reason = io.EOF
		l.markDirty(c)
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
func (l *loop) deliver(c *Conn) {
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

func (l *loop) markDirty(c *Conn) {
	if !c.dirty {
		c.dirty = true
		l.dirty = append(l.dirty, c)
	}
}

// flushDirty flushes every connection written to (or closed) since the
// last call. Flushing may deliver input that waited, which may mark more.
func (l *loop) flushDirty() {
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
func (l *loop) flush(c *Conn) {
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
	if !c.closing && !c.paused {
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
func (l *loop) closeConn(c *Conn, reason error) {
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

func (l *loop) signalDrained() {
	select {
	case <-l.drained:
	default:
		close(l.drained)
	}
}

// checkIdle is c's idle timer: close c if it has been idle long enough,
// or wait for the rest of its timeout.
func (l *loop) checkIdle(c *Conn) {
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
func (l *loop) drain() {
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
