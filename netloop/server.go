package netloop

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// A Server serves the connections of one address on its loops.
type Server struct {
	h     Handler
	cfg   config
	loops []*Loop
	addr  net.Addr

	mu    sync.Mutex
	state state // guarded by mu
	done  chan struct{}
}

type state uint8

const (
	stateNew state = iota
	stateServing
	stateShuttingDown
	stateClosed
)

// Listen opens a listening socket on address (see net.Listen: networks
// "tcp", "tcp4", "tcp6" and "unix"; port 0 picks a free port) and returns
// a Server for it, ready to Serve. Errors are *net.OpError, as net.Listen
// returns: a bad address, a port in use (errors.Is(err,
// unix.EADDRINUSE)), no fd left (unix.EMFILE).
func Listen(network, address string, h Handler, opts ...Option) (*Server, error) {
	if h == nil {
		panic("netloop: Listen with a nil Handler")
	}
	cfg := newConfig(opts)
	n := 1
	if cfg.reusePort {
		n = cfg.loops
	}
	lns, err := listen(network, address, n, cfg.reusePort)
	if err != nil {
		return nil, err
	}
	return newServer(h, cfg, lns)
}

// NewServer returns a Server for connections accepted on ln: a listener
// from net.Listen, systemd's socket activation, a test's "127.0.0.1:0". The
// Server accepts on a duplicate of ln's fd, so ln must be one of package
// net's listeners (or anything with a SyscallConn); Shutdown and Close
// close ln. WithReusePort does not apply.
func NewServer(ln net.Listener, h Handler, opts ...Option) (*Server, error) {
	if h == nil {
		panic("netloop: NewServer with a nil Handler")
	}
	cfg := newConfig(opts)
	cfg.reusePort = false
	l, err := fromListener(ln)
	if err != nil {
		return nil, err
	}
	return newServer(h, cfg, []*listener{l})
}

func newServer(h Handler, cfg config, lns []*listener) (*Server, error) {
	s := &Server{h: h, cfg: cfg, addr: lns[0].addr, done: make(chan struct{})}
	fail := func(err error) (*Server, error) {
		for _, ln := range lns {
			ln.close()
		}
		for _, l := range s.loops {
			l.pl.Close()
			if l.handle != nil {
				l.handle.Close()
			}
		}
		return nil, err
	}
	for i := range cfg.loops {
		l, err := newLoop(s, i)
		if err != nil {
			return fail(err)
		}
		s.loops = append(s.loops, l)
	}
	for i, ln := range lns {
		if err := s.loops[i].watch(ln); err != nil {
			return fail(err)
		}
	}
	return s, nil
}

// Addr returns the address the server listens on (with the port chosen
// for port 0).
func (s *Server) Addr() net.Addr { return s.addr }

// Serve runs the loops, each on its own goroutine, until Shutdown or Close,
// and returns nil then; or the error that stopped a loop (a failed wait),
// after closing the server. It returns ErrServerClosed if the server was
// already serving or closed.
func (s *Server) Serve() error {
	s.mu.Lock()
	if s.state != stateNew {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.state = stateServing
	s.mu.Unlock()
	errs := make([]error, len(s.loops))
	var wg sync.WaitGroup
	for i, l := range s.loops {
		wg.Go(func() {
			if errs[i] = l.run(); errs[i] != nil {
				s.stopLoops()
			}
		})
	}
	wg.Wait()
	close(s.done)
	return errors.Join(errs...)
}

// dispatch hands a connection accepted by loop from to the loop that will
// serve it: from itself for SO_REUSEPORT listeners, the next loop in turn
// for a shared one.
func (s *Server) dispatch(from *Loop, fd int, sa unix.Sockaddr, ln *listener) {
	if s.cfg.reusePort || len(s.loops) == 1 {
		from.open(fd, sa, ln)
		return
	}
	to := s.loops[ln.next]
	ln.next = (ln.next + 1) % len(s.loops)
	if to == from {
		from.open(fd, sa, ln)
		return
	}
	if !to.post(func() { to.open(fd, sa, ln) }) {
		unix.Close(fd)
	}
}

// Shutdown stops the server gracefully: the listeners close at once, every
// connection stops being read, writes its pending output and closes (OnClose
// is told ErrServerClosed), and the loops stop once none is left. If ctx
// ends first, the connections left are closed at once, with a reset, and
// Shutdown returns ctx.Err() once the loops have stopped. A server that was
// never served is closed at once. Serve returns once the loops stopped.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	prev := s.state
	switch prev {
	case stateNew:
		s.state = stateClosed
	case stateServing:
		s.state = stateShuttingDown
	}
	s.mu.Unlock()
	switch prev {
	case stateNew:
		s.closeUnserved()
		return nil
	case stateShuttingDown, stateClosed:
		return ErrServerClosed
	}
	var drained []<-chan struct{}
	for _, l := range s.loops {
		if l.post(l.drain) {
			drained = append(drained, l.drained)
		}
	}
	var err error
wait:
	for _, ch := range drained {
		select {
		case <-ch:
		case <-s.done:
			break wait
		case <-ctx.Done():
			err = ctx.Err()
			break wait
		}
	}
	s.stopLoops()
	<-s.done
	return err
}

// Close closes the server at once: listeners and connections (OnClose is
// told ErrServerClosed, unwritten output is dropped), then the loops.
// Serve returns.
func (s *Server) Close() error {
	s.mu.Lock()
	prev := s.state
	s.state = stateClosed
	s.mu.Unlock()
	switch prev {
	case stateNew:
		s.closeUnserved()
		return nil
	case stateClosed:
		return ErrServerClosed
	}
	s.stopLoops()
	<-s.done
	return nil
}

func (s *Server) stopLoops() {
	for _, l := range s.loops {
		l.pl.Close()
	}
}

// closeUnserved releases a server Serve never ran.
func (s *Server) closeUnserved() {
	for _, l := range s.loops {
		l.lock.Acquire()
		l.cleanup()
		l.lock.Release()
	}
	close(s.done)
}

// Loops returns the server's event loops, in the order of their Index.
func (s *Server) Loops() []*Loop { return slices.Clone(s.loops) }

// Stats returns what the server did so far.
func (s *Server) Stats() Stats {
	var st Stats
	for _, l := range s.loops {
		st.add(&l.c)
		st.Loops = append(st.Loops, l.pl.Stats())
	}
	st.Open = int64(st.Accepted) - int64(st.Closed)
	return st
}
