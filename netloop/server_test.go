package netloop_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/netloop"
)

// TestSplitAndPipelined: a request split across reads is answered once
// whole; many requests in one write are all answered, in order.
func TestSplitAndPipelined(t *testing.T) {
	h := newLines(nil)
	_, addr := serve(t, h, netloop.WithLoops(1))
	c := dial(t, "tcp", addr)
	r := bufio.NewReader(c)
	for _, part := range []string{"he", "l", "lo\nwor", "ld", "\n"} {
		_, err := c.Write([]byte(part))
		require.NoError(t, err)
		time.Sleep(5 * time.Millisecond) // separate reads on the server
	}
	assert.Equal(t, "HELLO\n", readLine(t, r))
	assert.Equal(t, "WORLD\n", readLine(t, r))

	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	_, err := c.Write([]byte(b.String()))
	require.NoError(t, err)
	for i := range 5000 {
		require.Equal(t, fmt.Sprintf("LINE %d\n", i), readLine(t, r))
	}
}

// TestSlowReader: a peer that sends requests for big replies and reads
// nothing makes the server stop reading it once the output passes the
// write limit; the output held stays within the limit and one reply, and
// every reply arrives once the peer reads.
func TestSlowReader(t *testing.T) {
	const (
		limit    = 256 << 10
		reply    = 64 << 10
		requests = 200 // 12.5 MiB of replies
	)
	var maxPending atomic.Int64
	h := newLines(func(c *netloop.Conn, line string) {
		c.Write(make([]byte, reply-1))
		c.Write([]byte("\n"))
		if p := int64(c.Pending()); p > maxPending.Load() {
			maxPending.Store(p)
		}
	})
	srv, addr := serve(t, h, netloop.WithLoops(1), netloop.WithWriteLimit(limit))
	c := dial(t, "tcp", addr)
	_, err := c.Write([]byte(strings.Repeat("big\n", requests)))
	require.NoError(t, err)
	eventually(t, func() bool { return srv.Stats().Pauses > 0 }, "reading never paused")
	// Wait for the kernel's buffers to fill: then the server must have
	// stopped producing output, far from all of it.
	before := srv.Stats().BytesWritten
	eventually(t, func() bool {
		time.Sleep(50 * time.Millisecond)
		now := srv.Stats().BytesWritten
		stable := now == before
		before = now
		return stable
	}, "the server keeps writing to a peer that reads nothing")
	assert.Less(t, before, uint64(requests*reply/2))
	assert.LessOrEqual(t, maxPending.Load(), int64(limit+reply), "output held beyond the limit and one reply")

	n, err := io.CopyN(io.Discard, c, requests*reply)
	require.NoError(t, err)
	assert.Equal(t, int64(requests*reply), n)
	assert.LessOrEqual(t, maxPending.Load(), int64(limit+reply))
}

// TestResetWithOutputPending: a peer that resets with replies unwritten
// closes its connection with the error, and the loop goes on.
func TestResetWithOutputPending(t *testing.T) {
	h := newLines(func(c *netloop.Conn, line string) {
		if line == "big" {
			c.Write(make([]byte, 8<<20))
			return
		}
		c.WriteString(strings.ToUpper(line) + "\n")
	})
	srv, addr := serve(t, h, netloop.WithLoops(1))
	c := dial(t, "tcp", addr)
	_, err := c.Write([]byte("big\n"))
	require.NoError(t, err)
	eventually(t, func() bool { return srv.Stats().BytesWritten > 0 }, "nothing written")
	require.NoError(t, c.(*net.TCPConn).SetLinger(0))
	require.NoError(t, c.Close())
	reason := h.nextClose(t)
	assert.True(t, errors.Is(reason, unix.ECONNRESET) || errors.Is(reason, unix.EPIPE), "reason %v", reason)

	c2 := dial(t, "tcp", addr)
	_, err = c2.Write([]byte("still\n"))
	require.NoError(t, err)
	assert.Equal(t, "STILL\n", readLine(t, bufio.NewReader(c2)))
	assert.Equal(t, int64(1), srv.Stats().Open)
}

// TestHalfClose: a peer that shuts down its writing half still gets the
// replies to what it sent, then end of file; the connection closes with
// io.EOF and the loop does not spin meanwhile.
func TestHalfClose(t *testing.T) {
	release := make(chan struct{})
	h := newLines(func(c *netloop.Conn, line string) {
		// The reply comes from another goroutine, after the EOF.
		go func() {
			<-release
			c.AsyncWrite([]byte(strings.ToUpper(line) + "\n"))
		}()
	})
	srv, addr := serve(t, h, netloop.WithLoops(1))
	c := dial(t, "tcp", addr)
	_, err := c.Write([]byte("a\nb\n"))
	require.NoError(t, err)
	require.NoError(t, c.(*net.TCPConn).CloseWrite())
	reason := h.nextClose(t)
	assert.ErrorIs(t, reason, io.EOF)
	close(release)
	// Closed at once: nothing was pending, so nothing more is written.
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Empty(t, string(got))
	_ = srv
}

// TestHalfCloseFlushes: replies pending when the peer's EOF arrives are
// written before the connection closes, and the loop does not spin while
// it waits for the peer to read them.
func TestHalfCloseFlushes(t *testing.T) {
	const size = 4 << 20
	h := newLines(func(c *netloop.Conn, line string) {
		c.Write(make([]byte, size-1))
		c.Write([]byte("\n"))
	})
	srv, addr := serve(t, h, netloop.WithLoops(1))
	c := dial(t, "tcp", addr)
	_, err := c.Write([]byte("go\n"))
	require.NoError(t, err)
	require.NoError(t, c.(*net.TCPConn).CloseWrite())
	eventually(t, func() bool { return srv.Stats().BytesWritten > 0 }, "nothing written")
	time.Sleep(20 * time.Millisecond)
	ev := srv.Stats().Loops[0].Events
	time.Sleep(100 * time.Millisecond)
	assert.Less(t, srv.Stats().Loops[0].Events-ev, uint64(10), "the loop spins on a half-closed peer")
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Len(t, got, size)
	assert.ErrorIs(t, h.nextClose(t), io.EOF)
}

// raiseNOFILE raises the soft RLIMIT_NOFILE to at least n, or skips.
func raiseNOFILE(t *testing.T, n uint64) {
	var lim unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &lim))
	if uint64(lim.Cur) >= n {
		return
	}
	if uint64(lim.Max) < n {
		t.Skipf("RLIMIT_NOFILE hard limit %d is below the %d fds the test needs", lim.Max, n)
	}
	old := lim
	lim.Cur = lim.Max
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lim))
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &old) })
}

// TestManyConnections: 1000 clients connected at once, each served, spread
// over the loops.
func TestManyConnections(t *testing.T) {
	const n = 1000
	raiseNOFILE(t, 2*n+100)
	for _, reuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reuseport=%v", reuse), func(t *testing.T) {
			h := newLines(nil)
			srv, addr := serve(t, h, netloop.WithLoops(2), netloop.WithReusePort(reuse))
			conns := make([]net.Conn, n)
			for i := range conns {
				conns[i] = dial(t, "tcp", addr)
			}
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i, c := range conns {
				wg.Go(func() {
					msg := fmt.Sprintf("client %d\n", i)
					if _, err := c.Write([]byte(msg)); err != nil {
						errs <- err
						return
					}
					got, err := bufio.NewReader(c).ReadString('\n')
					if err == nil && got != strings.ToUpper(msg) {
						err = fmt.Errorf("got %q, want %q", got, strings.ToUpper(msg))
					}
					if err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			st := srv.Stats()
			assert.Equal(t, uint64(n), st.Accepted)
			assert.Equal(t, int64(n), st.Open)
			if !reuse {
				// Round robin: an even split.
				for i, ls := range st.Loops {
					assert.GreaterOrEqual(t, ls.Events, uint64(n/2), "loop %d served too little", i)
				}
			}
			for _, c := range conns {
				c.Close()
			}
			eventually(t, func() bool { return srv.Stats().Open == 0 }, "connections left open")
		})
	}
}

// TestHandlerPanic: the connection whose handler panicked closes with the
// panic as its reason; the loop and the other connections go on.
func TestHandlerPanic(t *testing.T) {
	h := newLines(func(c *netloop.Conn, line string) {
		if line == "boom" {
			panic("boom")
		}
		c.WriteString(line + "\n")
	})
	srv, addr := serve(t, h, netloop.WithLoops(1))
	other := dial(t, "tcp", addr)
	c := dial(t, "tcp", addr)
	_, err := c.Write([]byte("boom\n"))
	require.NoError(t, err)
	var pe *netloop.PanicError
	require.ErrorAs(t, h.nextClose(t), &pe)
	assert.Equal(t, "boom", pe.Value)
	assert.Contains(t, string(pe.Stack), "TestHandlerPanic")
	_, err = io.ReadAll(c)
	require.NoError(t, err, "the client sees end of file")

	_, err = other.Write([]byte("fine\n"))
	require.NoError(t, err)
	assert.Equal(t, "fine\n", readLine(t, bufio.NewReader(other)))
	assert.Equal(t, uint64(1), srv.Stats().Panics)
}

// TestShutdown: Shutdown writes the pending output of every connection
// before closing it, and closes idle ones at once.
func TestShutdown(t *testing.T) {
	const size = 8 << 20
	h := newLines(func(c *netloop.Conn, line string) {
		c.Write(make([]byte, size-1))
		c.Write([]byte("\n"))
	})
	srv, addr := serve(t, h, netloop.WithLoops(2))
	idle := dial(t, "tcp", addr)
	busy := dial(t, "tcp", addr)
	_, err := busy.Write([]byte("go\n"))
	require.NoError(t, err)
	eventually(t, func() bool { return srv.Stats().BytesWritten > 0 }, "nothing written")

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	_, err = io.ReadAll(idle)
	require.NoError(t, err)
	got, err := io.ReadAll(busy)
	require.NoError(t, err)
	assert.Len(t, got, size, "output lost at shutdown")
	select {
	case err := <-shut:
		require.NoError(t, err)
	case <-time.After(timeout):
		t.Fatal("Shutdown did not return")
	}
	assert.ErrorIs(t, h.nextClose(t), netloop.ErrServerClosed)
	assert.ErrorIs(t, h.nextClose(t), netloop.ErrServerClosed)
	_, err = net.DialTimeout("tcp", addr, timeout)
	assert.Error(t, err, "still accepting after Shutdown")
	assert.ErrorIs(t, srv.Shutdown(context.Background()), netloop.ErrServerClosed)
}

// TestShutdownDeadline: a peer that never reads cannot hold Shutdown past
// its context: the connection is reset and Shutdown returns the
// context's error.
func TestShutdownDeadline(t *testing.T) {
	h := newLines(func(c *netloop.Conn, line string) { c.Write(make([]byte, 16<<20)) })
	srv, addr := serve(t, h, netloop.WithLoops(1))
	c := dial(t, "tcp", addr)
	_, err := c.Write([]byte("go\n"))
	require.NoError(t, err)
	eventually(t, func() bool { return srv.Stats().BytesWritten > 0 }, "nothing written")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	assert.ErrorIs(t, srv.Shutdown(ctx), context.DeadlineExceeded)
	assert.Less(t, time.Since(start), timeout)
	assert.ErrorIs(t, h.nextClose(t), netloop.ErrServerClosed)
	assert.Equal(t, int64(0), srv.Stats().Open)
}

// TestSharedRuntime: loops that share one gcstep.Runtime step it from
// their own goroutines (run with -race) while serving garbage-making
// requests. The whole budget: the test is of when a release comes, not
// of whether 3 % of this traffic's CPU pays for its faults.
func TestSharedRuntime(t *testing.T) {
	rt := gcstep.NewRuntime(gcstep.WithBudget(1))
	defer rt.Close()
	var sink atomic.Pointer[[]byte]
	h := newLines(func(c *netloop.Conn, line string) {
		b := make([]byte, 64<<10) // garbage for the stepper
		sink.Store(&b)
		c.WriteString(line + "\n")
	})
	srv, addr := serve(t, h, netloop.WithLoops(2), netloop.WithStepper(rt))
	var wg sync.WaitGroup
	for i := range 8 {
		c := dial(t, "tcp", addr)
		wg.Go(func() {
			r := bufio.NewReader(c)
			for j := range 200 {
				msg := fmt.Sprintf("%d-%d\n", i, j)
				if _, err := c.Write([]byte(msg)); err != nil {
					t.Error(err)
					return
				}
				got, err := r.ReadString('\n')
				if err != nil || got != msg {
					t.Errorf("got %q, %v; want %q", got, err, msg)
					return
				}
				if j%20 == 0 {
					time.Sleep(2 * time.Millisecond) // idle moments
				}
			}
		})
	}
	wg.Wait()
	// Whether and where a cycle runs during the traffic is the Runtime's
	// policy. What the server owes it: every loop reports through its
	// own handle, so once they are all quiet the Runtime empties the gap,
	// from a step one of the loops takes at its NextStep.
	if !assert.Eventually(t, func() bool { return rt.Stats().Releases > 0 }, timeout, time.Millisecond,
		"the quiet loops never let the Runtime release") {
		t.Fatalf("stepper: %+v", rt.Stats())
	}
	st := srv.Stats()
	steps := uint64(0)
	for i, ls := range st.Loops {
		assert.NotZero(t, ls.Events, "loop %d served nothing", i)
		steps += ls.Steps
	}
	assert.NotZero(t, steps, "no loop stepped the Runtime")
}

// TestIdleTimeout: a connection that does nothing for its timeout is
// closed; one that keeps talking is not.
func TestIdleTimeout(t *testing.T) {
	h := newLines(nil)
	_, addr := serve(t, h, netloop.WithLoops(1), netloop.WithIdleTimeout(250*time.Millisecond))
	quiet := dial(t, "tcp", addr)
	chatty := dial(t, "tcp", addr)
	r := bufio.NewReader(chatty)
	start := time.Now()
	for time.Since(start) < 600*time.Millisecond {
		_, err := chatty.Write([]byte("hi\n"))
		require.NoError(t, err)
		assert.Equal(t, "HI\n", readLine(t, r))
		time.Sleep(20 * time.Millisecond)
	}
	assert.ErrorIs(t, h.nextClose(t), netloop.ErrIdleTimeout)
	_, err := io.ReadAll(quiet)
	require.NoError(t, err)
	select {
	case err := <-h.closed:
		t.Fatalf("the talking connection closed too: %v", err)
	default:
	}
}

// TestAsyncWrite: another goroutine writes to a connection through its
// loop.
func TestAsyncWrite(t *testing.T) {
	h := newLines(nil)
	_, addr := serve(t, h, netloop.WithLoops(2))
	c := dial(t, "tcp", addr)
	var sc *netloop.Conn
	select {
	case sc = <-h.opened:
	case <-time.After(timeout):
		t.Fatal("not opened")
	}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() { assert.NoError(t, sc.AsyncWrite([]byte(fmt.Sprintf("push %d\n", i)))) })
	}
	wg.Wait()
	r := bufio.NewReader(c)
	seen := map[string]bool{}
	for range 10 {
		seen[readLine(t, r)] = true
	}
	assert.Len(t, seen, 10)
	c.Close()
	h.nextClose(t)
	assert.ErrorIs(t, sc.AsyncWrite([]byte("late")), netloop.ErrConnClosed)
}

// TestCloseAndAbort: Close writes what is pending, then closes; Abort
// resets.
func TestCloseAndAbort(t *testing.T) {
	h := newLines(func(c *netloop.Conn, line string) {
		c.WriteString("bye\n")
		switch line {
		case "close":
			assert.NoError(t, c.Close())
			assert.ErrorIs(t, c.Close(), netloop.ErrConnClosed)
			_, err := c.WriteString("late")
			assert.ErrorIs(t, err, netloop.ErrConnClosed)
		case "abort":
			c.Abort()
		}
	})
	_, addr := serve(t, h, netloop.WithLoops(1))
	c := dial(t, "tcp", addr)
	_, err := c.Write([]byte("close\nignored\n"))
	require.NoError(t, err)
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Equal(t, "bye\n", string(got))
	assert.NoError(t, h.nextClose(t))

	c = dial(t, "tcp", addr)
	_, err = c.Write([]byte("abort\n"))
	require.NoError(t, err)
	_, err = io.ReadAll(c)
	assert.ErrorIs(t, err, unix.ECONNRESET)
	assert.NoError(t, h.nextClose(t))
}

func TestListenErrors(t *testing.T) {
	h := newLines(nil)
	srv, err := netloop.Listen("tcp", "127.0.0.1:0", h, netloop.WithLoops(1))
	require.NoError(t, err)
	defer srv.Close()
	for _, tt := range []struct {
		network, addr string
		is            error
		contains      string
	}{
		{"tcp", srv.Addr().String(), unix.EADDRINUSE, "address already in use"},
		{"tcp", "127.0.0.1:99999", nil, "invalid port"},
		{"tcp4", "[::1]:0", nil, "no suitable address"},
		{"udp", "127.0.0.1:0", nil, "unknown network udp"},
		{"unix", filepath.Join(t.TempDir(), "no", "such", "dir"), unix.ENOENT, "bind"},
	} {
		t.Run(tt.network+" "+tt.addr, func(t *testing.T) {
			s, err := netloop.Listen(tt.network, tt.addr, h)
			require.Error(t, err)
			assert.Nil(t, s)
			var oe *net.OpError
			assert.ErrorAs(t, err, &oe)
			assert.Contains(t, err.Error(), tt.contains)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
			t.Log(err)
		})
	}
}

// TestNetworks: tcp6, unix and a net.Listener given to NewServer.
func TestNetworks(t *testing.T) {
	check := func(t *testing.T, srv *netloop.Server, network string) {
		start(t, srv)
		c := dial(t, network, srv.Addr().String())
		_, err := c.Write([]byte("ok\n"))
		require.NoError(t, err)
		assert.Equal(t, "OK\n", readLine(t, bufio.NewReader(c)))
	}
	t.Run("unix", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s")
		srv, err := netloop.Listen("unix", path, newLines(nil), netloop.WithLoops(2))
		require.NoError(t, err)
		check(t, srv, "unix")
	})
	t.Run("tcp6", func(t *testing.T) {
		srv, err := netloop.Listen("tcp6", "[::1]:0", newLines(nil), netloop.WithLoops(1))
		if err != nil && (errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.EAFNOSUPPORT)) {
			t.Skipf("no IPv6 loopback: %v", err)
		}
		require.NoError(t, err)
		check(t, srv, "tcp6")
	})
	t.Run("listener", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		srv, err := netloop.NewServer(ln, newLines(nil), netloop.WithLoops(2))
		require.NoError(t, err)
		check(t, srv, "tcp")
	})
	t.Run("not a socket", func(t *testing.T) {
		_, err := netloop.NewServer(fakeListener{}, newLines(nil))
		assert.ErrorIs(t, err, netloop.ErrListener)
	})
}

type fakeListener struct{ net.Listener }

// TestReadLimit: a peer that sends more than the read limit without a
// whole request is cut off.
func TestReadLimit(t *testing.T) {
	h := newLines(nil)
	_, addr := serve(t, h, netloop.WithLoops(1), netloop.WithReadLimit(100<<10))
	c := dial(t, "tcp", addr)
	_, err := c.Write(make([]byte, 200<<10)) // no newline
	if err != nil {
		require.ErrorIs(t, err, unix.ECONNRESET)
	}
	assert.ErrorIs(t, h.nextClose(t), netloop.ErrReadLimit)
}

// TestLifecycle: Shutdown or Close before Serve, Serve twice, calls after
// the end.
func TestLifecycle(t *testing.T) {
	srv, err := netloop.Listen("tcp", "127.0.0.1:0", newLines(nil), netloop.WithLoops(2))
	require.NoError(t, err)
	addr := srv.Addr().String()
	require.NoError(t, srv.Shutdown(context.Background()), "Shutdown of a server never served")
	assert.ErrorIs(t, srv.Serve(), netloop.ErrServerClosed)
	assert.ErrorIs(t, srv.Close(), netloop.ErrServerClosed)
	_, err = net.DialTimeout("tcp", addr, timeout)
	assert.Error(t, err, "the listener outlived Shutdown")

	srv, err = netloop.Listen("tcp", "127.0.0.1:0", newLines(nil), netloop.WithLoops(1))
	require.NoError(t, err)
	start(t, srv)
	c := dial(t, "tcp", srv.Addr().String())
	_, err = c.Write([]byte("up?\n"))
	require.NoError(t, err)
	assert.Equal(t, "UP?\n", readLine(t, bufio.NewReader(c)), "serving")
	assert.ErrorIs(t, srv.Serve(), netloop.ErrServerClosed, "a second Serve")
	require.NoError(t, srv.Close())
	assert.ErrorIs(t, srv.Shutdown(context.Background()), netloop.ErrServerClosed)
}

// TestLoopStepper: WithLoopStepper gives each loop its own stepper.
func TestLoopStepper(t *testing.T) {
	var steps [2]atomic.Int64
	h := newLines(nil)
	srv, addr := serve(t, h, netloop.WithLoops(2), netloop.WithLoopStepper(func(i int) gcstep.Stepper {
		return gcstep.Func(func(time.Duration) bool {
			steps[i].Add(1)
			return false
		})
	}))
	for range 4 {
		c := dial(t, "tcp", addr)
		_, err := c.Write([]byte("x\n"))
		require.NoError(t, err)
		assert.Equal(t, "X\n", readLine(t, bufio.NewReader(c)))
	}
	for i := range steps {
		assert.NotZero(t, steps[i].Load(), "loop %d's stepper never stepped", i)
		assert.Equal(t, srv.Stats().Loops[i].Steps, uint64(steps[i].Load()))
	}
}

// TestSlowReaderAppend: a handler that stops at the write limit itself,
// as resp.Store.Serve does (through AppendOutput, whose slice holds just
// the unwritten output), is offered the rest of the input as the output
// drains: every reply arrives to a peer that reads slowly.
func TestSlowReaderAppend(t *testing.T) {
	const (
		limit    = 64 << 10
		requests = 300
	)
	// A reply the size of the limit leaves the output exactly at it.
	for _, reply := range []int{10 << 10, limit} {
		t.Run(fmt.Sprintf("reply=%d", reply), func(t *testing.T) {
			h := netloop.HandlerFuncs{Data: func(c *netloop.Conn) {
				var n int
				c.AppendOutput(func(out []byte) []byte {
					in := c.Peek()
					for len(out) < limit {
						i := bytes.IndexByte(in[n:], '\n')
						if i < 0 {
							break
						}
						n += i + 1
						out = append(out, make([]byte, reply-1)...)
						out = append(out, '\n')
					}
					return out
				})
				c.Discard(n)
			}}
			_, addr := serve(t, h, netloop.WithLoops(1), netloop.WithWriteLimit(limit))
			c := dial(t, "tcp", addr)
			_, err := c.Write([]byte(strings.Repeat("r\n", requests)))
			require.NoError(t, err)
			buf := make([]byte, 32<<10)
			got := 0
			for got < requests*reply {
				n, err := c.Read(buf)
				require.NoError(t, err, "after %d bytes", got)
				got += n
				if got%(256<<10) < n {
					time.Sleep(time.Millisecond) // a slow reader
				}
			}
			assert.Equal(t, requests*reply, got)
		})
	}
}

// TestAfterFunc: a reply written by a timer on the connection's loop
// arrives; a timer of a closed connection does not run.
func TestAfterFunc(t *testing.T) {
	ran := make(chan string, 4)
	h := newLines(func(c *netloop.Conn, line string) {
		c.AfterFunc(20*time.Millisecond, func(c *netloop.Conn) {
			ran <- line
			c.WriteString("later " + line + "\n")
		})
		if line == "bye" {
			c.Close()
		}
	})
	_, addr := serve(t, h, netloop.WithLoops(1))
	c := dial(t, "tcp", addr)
	_, err := c.Write([]byte("x\n"))
	require.NoError(t, err)
	assert.Equal(t, "later x\n", readLine(t, bufio.NewReader(c)))
	assert.Equal(t, "x", <-ran)
	_, err = c.Write([]byte("bye\n"))
	require.NoError(t, err)
	h.nextClose(t)
	time.Sleep(50 * time.Millisecond)
	assert.Empty(t, ran, "the timer of a closed connection ran")
}
