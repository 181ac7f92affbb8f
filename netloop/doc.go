// Package netloop serves stream connections (TCP, Unix sockets) on
// poller.Loop event loops, so that a server's idle time between requests
// becomes garbage-collection time.
//
// A Server accepts connections and spreads them over its loops (one per
// four Ps by default, at least one: see WithLoops), each run by its own
// goroutine holding its own gvl.Lock, all sharing one gcstep.Stepper (the
// collector is process-wide; each loop steps at its own idle moments, see
// WithStepper). A Handler sees each connection open, receive data and
// close:
//
//	srv, err := netloop.Listen("tcp", "127.0.0.1:6380", netloop.HandlerFuncs{
//		Data: func(c *netloop.Conn) { // an echo server
//			in := c.Peek()
//			c.Write(in)
//			c.Discard(len(in))
//		},
//	})
//	...
//	go srv.Serve()
//	...
//	srv.Shutdown(ctx)
//
// Inbound bytes wait in a buffer the connection owns: a handler consumes
// what it can (Peek, then Discard) and leaves a partial request for the
// next call. Output is buffered by Write and written after the callback,
// as much as the socket takes; the rest waits for the socket to be
// writable. A connection whose unwritten output passes the write limit
// stops being read (Peek returns nothing) until the peer catches up, so a
// peer that sends requests without reading replies cannot make the server
// hold more than about the limit for it. A peer's end of file (it closed,
// or shut down its writing half) ends the reading: what is pending is
// written, then the connection closes, with no busy loop in between; a
// handler with an OnEOF method (EOFHandler) decides instead when to close,
// and may go on writing until then.
//
// Idle connections hold no buffers: the loop reads into one buffer it
// owns, and a connection borrows a pooled buffer only while it has a
// partial request or unwritten output.
//
// Handlers, timers and posted functions run on the connection's loop
// goroutine, one at a time per loop, with the loop's lock held; a Conn's
// methods are for them. Other goroutines reach a connection through Post
// and AsyncWrite, and a loop (Server.Loops, Conn.Loop) through Loop.Post,
// which hand the work to the loop through its Wake.
package netloop
