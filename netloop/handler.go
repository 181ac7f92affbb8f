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

// HandlerFuncs is a Handler made of functions; a nil one does nothing.
type HandlerFuncs struct {
	Open  func(c *Conn)
	Data  func(c *Conn)
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

// OnClose calls h.Close if it is set.
func (h HandlerFuncs) OnClose(c *Conn, reason error) {
	if h.Close != nil {
		h.Close(c, reason)
	}
}
