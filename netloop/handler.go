package netloop

// A Handler serves the connections of a Server. Its methods run on the
// connection's loop goroutine, never concurrently for connections of the
// same loop, and concurrently for connections of different loops.
//
// A handler that panics has its connection closed, with a *PanicError as
// the reason; the loop and the other connections go on.
type Handler interface {
	// OnOpen is called once a connection is accepted, before any OnData.
	// It may Write (a greeting), SetContext, or Close.
	OnOpen(c *Conn)
	// OnData is called when new bytes arrived: Peek holds every byte not
	// yet consumed, the new ones after what an earlier call left. Consume
	// with Discard what was handled; the rest is offered again, with
	// more, at the next call. While the connection's unwritten output is
	// at or above the write limit, Peek returns nothing and the bytes wait:
	// OnData is called again once the output drains below the limit. A
	// handler that stops early for reasons of its own is called again
	// only when more bytes arrive.
	OnData(c *Conn)
	// OnClose is called once when the connection is closed, after its fd
	// is: reason is nil after Close or Abort, io.EOF when the peer closed
	// its end, ErrIdleTimeout, ErrReadLimit, ErrServerClosed, a
	// *PanicError, or the system call's error (errors.Is(reason,
	// unix.ECONNRESET) for a reset).
	OnClose(c *Conn, reason error)
}

// An EOFHandler is a Handler that decides what follows a peer's end of
// file (the peer closed, or shut down its writing half). Without OnEOF the
// connection closes once its pending output is written, which suits a
// handler that answers within OnData; a handler that answers later (from
// Post, AsyncWrite or a timer: a request whose end the peer marks with a
// half-close, a reply computed elsewhere) implements OnEOF and closes when
// it is done.
type EOFHandler interface {
	Handler
	// OnEOF is called once, after the OnData calls for every byte that
	// came before the end of file. The connection is no longer read (Peek
	// keeps what OnData left), but stays open for writing until the
	// handler calls Close (which flushes first) or Abort, the peer resets
	// it, or an idle timeout or shutdown closes it. OnClose is told io.EOF
	// after a Close.
	OnEOF(c *Conn)
}

// HandlerFuncs is a Handler (an EOFHandler) made of functions; a nil one
// does nothing, but a nil EOF closes the connection, as for a Handler
// without OnEOF.
type HandlerFuncs struct {
	Open  func(c *Conn)
	Data  func(c *Conn)
	EOF   func(c *Conn)
	Close func(c *Conn, reason error)
}

// OnOpen calls h.Open if it is set.
func (h HandlerFuncs) OnOpen(c *Conn) {
	if h.Open != nil {
		h.Open(c)
	}
}

// OnData calls h.Data if it is set.
func (h HandlerFuncs) OnData(c *Conn) {
	if h.Data != nil {
		h.Data(c)
	}
}

// OnEOF calls h.EOF if it is set, and closes c (once its output is
// written) if not.
func (h HandlerFuncs) OnEOF(c *Conn) {
	if h.EOF != nil {
		h.EOF(c)
		return
	}
	c.Close()
}

// OnClose calls h.Close if it is set.
func (h HandlerFuncs) OnClose(c *Conn, reason error) {
	if h.Close != nil {
		h.Close(c, reason)
	}
}
