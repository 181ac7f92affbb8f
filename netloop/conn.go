package netloop

import (
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/poller"
)

// A Conn is one accepted connection. Its methods are for the handler and
// the functions that run on its loop (timers, Post); AsyncWrite and Post
// may be called from any goroutine.
type Conn struct {
	l  *Loop
	fd int
	ln *listener
	sa unix.Sockaddr // the peer's address, as accept returned it

	ctx  any
	gone atomic.Bool // closed, for Post from other goroutines

	// data is the unconsumed input Peek returns: a view of the loop's
	// read buffer during the OnData that follows a read, or in the
	// buffer in, borrowed from the pool while input waits. (Loop
	// goroutine only, as every field below.)
	data []byte
	in   *[]byte
	// out holds output from outR on; borrowed while output waits.
	out  *[]byte
	outR int

	armed    poller.Events // what the loop watches the fd for
	dirty    bool          // in l.dirty, to be flushed after the callback
	paused   bool          // output at the write limit: not read
	eof      bool          // the peer closed its end
	closing  bool          // Close, Abort or EOF: close once flushed
	abort    bool          // close without flushing, with a reset
	closed   bool          // the fd is closed
	reason   error         // what OnClose will be told
	idle     time.Duration // idle timeout; 0: none
	lastSeen time.Duration // since epoch, at the last read or write
	timer    *poller.Timer // the idle timer, if idle > 0
}

// Peek returns the input not consumed yet. The slice is valid until
// Discard or the end of the callback; copy what must outlive it. While
// unwritten output is at or above the write limit it returns nothing: the
// input waits, and is offered again (OnData) once the peer has read enough
// of the output to bring it below the limit.
func (c *Conn) Peek() []byte {
	if c.closing || c.Pending() >= c.l.s.cfg.writeLimit {
		return nil
	}
	return c.data
}

// Discard consumes the first n bytes of the input. Discard(0) and negative
// counts do nothing; it panics if n is more than Peek holds.
func (c *Conn) Discard(n int) {
	if n <= 0 {
		return
	}
	if n > len(c.data) {
		panic("netloop: Discard beyond the buffered input")
	}
	c.data = c.data[n:]
}

// Write buffers p, to be written when the callback returns, and returns
// len(p). After Close or Abort, or once the connection is closed, it
// returns ErrConnClosed.
func (c *Conn) Write(p []byte) (int, error) {
	if c.closing || c.closed {
		return 0, ErrConnClosed
	}
	if c.out == nil {
		c.out = getBuf()
	}
	*c.out = append(*c.out, p...)
	c.l.markDirty(c)
	return len(p), nil
}

// WriteString is Write for a string.
func (c *Conn) WriteString(s string) (int, error) {
	if c.closing || c.closed {
		return 0, ErrConnClosed
	}
	if c.out == nil {
		c.out = getBuf()
	}
	*c.out = append(*c.out, s...)
	c.l.markDirty(c)
	return len(s), nil
}

// AppendOutput lets f append to the connection's output buffer in place,
// as append does (f returns the extended slice), sparing the copy of Write
// for encoders written in the append style. The slice f gets holds exactly
// the unwritten output (its length is Pending), so f can stop at the write
// limit. f must not keep the slice. It returns ErrConnClosed, without
// calling f, after Close or Abort.
func (c *Conn) AppendOutput(f func(out []byte) []byte) error {
	if c.closing || c.closed {
		return ErrConnClosed
	}
	if c.out == nil {
		c.out = getBuf()
	} else if c.outR > 0 {
		*c.out = append((*c.out)[:0], (*c.out)[c.outR:]...)
		c.outR = 0
	}
	*c.out = f(*c.out)
	if len(*c.out) > 0 {
		c.l.markDirty(c)
	}
	return nil
}

// Pending returns how many bytes of output are not written yet.
func (c *Conn) Pending() int {
	if c.out == nil {
		return 0
	}
	return len(*c.out) - c.outR
}

// Close closes the connection once its output is written: it reads no
// more input, writes what is buffered, then closes, and OnClose is told
// nil. It returns nil, or ErrConnClosed if the connection was already
// closed or closing. A peer that never reads keeps a closing connection
// until its idle timeout or the server's shutdown.
func (c *Conn) Close() error {
	if c.closing || c.closed {
		return ErrConnClosed
	}
	c.closing = true
	c.l.markDirty(c)
	return nil
}

// Abort closes the connection at once, dropping unwritten output, with a
// reset (SO_LINGER 0) rather than an orderly shutdown. OnClose is told
// nil.
func (c *Conn) Abort() error {
	if c.closed || c.abort {
		return ErrConnClosed
	}
	c.closing = true
	c.abort = true
	c.l.markDirty(c)
	return nil
}

// Loop returns the loop that serves the connection.
func (c *Conn) Loop() *Loop { return c.l }

// Context returns what SetContext stored, or nil.
func (c *Conn) Context() any { return c.ctx }

// SetContext stores v with the connection: per-connection state for the
// handler.
func (c *Conn) SetContext(v any) { c.ctx = v }

// Fd returns the connection's file descriptor, for socket options. Do not
// read, write or close it.
func (c *Conn) Fd() int { return c.fd }

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return sockaddrToAddr(c.sa, c.ln.unix) }

// LocalAddr returns the address the connection was accepted on.
func (c *Conn) LocalAddr() net.Addr {
	if sa, err := unix.Getsockname(c.fd); err == nil && !c.closed {
		return sockaddrToAddr(sa, c.ln.unix)
	}
	return c.ln.addr
}

// SetIdleTimeout changes the connection's idle timeout (WithIdleTimeout),
// counting from now; 0 removes it.
func (c *Conn) SetIdleTimeout(d time.Duration) {
	if c.closed {
		return
	}
	c.idle = max(d, 0)
	c.lastSeen = now()
	if c.idle == 0 {
		if c.timer != nil {
			c.timer.Stop()
		}
		return
	}
	if c.timer == nil {
		c.timer = c.l.pl.AfterFunc(c.idle, func() { c.l.checkIdle(c) })
		return
	}
	c.timer.Reset(c.idle)
}

// Post calls fn(c) on the connection's loop, from any goroutine; the
// output fn writes is flushed after it. fn is not called if the connection
// closes first. It returns ErrConnClosed if the connection is already
// closed (or its server shut down) as far as the caller can tell.
func (c *Conn) Post(fn func(c *Conn)) error {
	if c.gone.Load() || !c.l.post(func() {
		if !c.closed {
			c.l.call(c, func() { fn(c) })
		}
	}) {
		return ErrConnClosed
	}
	return nil
}

// AsyncWrite writes a copy of p to the connection from any goroutine, as
// Post does: the bytes are dropped if the connection closes first.
func (c *Conn) AsyncWrite(p []byte) error {
	p = append([]byte(nil), p...)
	return c.Post(func(c *Conn) { c.Write(p) })
}

// AfterFunc calls f(c) on the connection's loop once d has passed, unless
// the connection has closed by then, and flushes what f writes: a delayed
// reply, a heartbeat. The returned Timer's Stop cancels the call. It may
// be called from any goroutine.
func (c *Conn) AfterFunc(d time.Duration, f func(c *Conn)) *poller.Timer {
	return c.l.pl.AfterFunc(d, func() {
		if c.closed {
			return
		}
		c.l.call(c, func() { f(c) })
		c.l.flushDirty()
	})
}
