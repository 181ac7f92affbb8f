package netloop_test

import (
	"bufio"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/netloop"
)

// eofLines is lines with an OnEOF that hands the end of file to eof.
type eofLines struct {
	*lines
	eof func(c *netloop.Conn)
}

func (h eofLines) OnEOF(c *netloop.Conn) { h.eof(c) }

// TestOnEOF: a handler that implements OnEOF keeps a half-closed
// connection open for writing: replies made after the end of file, from
// another goroutine and from a timer, reach the peer, and the connection
// closes (OnClose told io.EOF) when the handler says so; the loop does not
// spin in between.
func TestOnEOF(t *testing.T) {
	release := make(chan struct{})
	var eofs atomic.Int32
	h := eofLines{lines: newLines(func(c *netloop.Conn, line string) {
		go func() {
			<-release
			c.AsyncWrite([]byte(strings.ToUpper(line) + "\n"))
		}()
	})}
	h.eof = func(c *netloop.Conn) {
		eofs.Add(1)
		assert.Empty(t, c.Peek(), "every line was consumed before the EOF")
		go func() {
			<-release
			c.Post(func(c *netloop.Conn) {
				c.AfterFunc(10*time.Millisecond, func(c *netloop.Conn) {
					c.WriteString("bye\n")
					assert.NoError(t, c.Close())
				})
			})
		}()
	}
	srv, addr := serve(t, h, netloop.WithLoops(1))
	c := dial(t, "tcp", addr)
	_, err := c.Write([]byte("a\nb\n"))
	require.NoError(t, err)
	require.NoError(t, c.(*net.TCPConn).CloseWrite())
	eventually(t, func() bool { return eofs.Load() == 1 }, "OnEOF not called")
	ev := srv.Stats().Loops[0].Events
	time.Sleep(100 * time.Millisecond)
	assert.Less(t, srv.Stats().Loops[0].Events-ev, uint64(5), "the loop spins on a half-closed peer")
	assert.Equal(t, int64(1), srv.Stats().Open, "closed before the handler said so")
	close(release)
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"A", "B"}, strings.Fields(strings.TrimSuffix(string(got), "bye\n")))
	assert.True(t, strings.HasSuffix(string(got), "bye\n"), "got %q", got)
	assert.ErrorIs(t, h.nextClose(t), io.EOF)
	assert.Equal(t, int32(1), eofs.Load())
}

// TestOnEOFDefault: HandlerFuncs without EOF closes at the end of file,
// after writing what is pending, as a Handler without OnEOF does.
func TestOnEOFDefault(t *testing.T) {
	closed := make(chan error, 1)
	h := netloop.HandlerFuncs{
		Data: func(c *netloop.Conn) {
			c.Write(c.Peek())
			c.Discard(len(c.Peek()))
		},
		Close: func(c *netloop.Conn, reason error) { closed <- reason },
	}
	_, addr := serve(t, h, netloop.WithLoops(1))
	c := dial(t, "tcp", addr)
	_, err := c.Write([]byte("echo"))
	require.NoError(t, err)
	require.NoError(t, c.(*net.TCPConn).CloseWrite())
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Equal(t, "echo", string(got))
	select {
	case err := <-closed:
		assert.ErrorIs(t, err, io.EOF)
	case <-time.After(timeout):
		t.Fatal("not closed")
	}
}

// TestLoopPost: work posted to each loop from other goroutines runs on that
// loop, sees its connections (and only its own), and what it writes is
// flushed; a panicking function is counted and the loop goes on; after
// Close, Post refuses.
func TestLoopPost(t *testing.T) {
	const clients = 8
	h := newLines(nil)
	srv, addr := serve(t, h, netloop.WithLoops(2))
	loops := srv.Loops()
	require.Len(t, loops, 2)
	for i, l := range loops {
		assert.Equal(t, i, l.Index())
	}
	var rs []*bufio.Reader
	for range clients {
		c := dial(t, "tcp", addr)
		// A request answered proves the connection is open on its loop.
		_, err := c.Write([]byte("hi\n"))
		require.NoError(t, err)
		r := bufio.NewReader(c)
		assert.Equal(t, "HI\n", readLine(t, r))
		rs = append(rs, r)
	}

	var mu sync.Mutex
	seen := 0
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Go(func() {
			done := make(chan struct{})
			require.NoError(t, l.Post(func() {
				defer close(done)
				for c := range l.Conns() {
					assert.Same(t, l, c.Loop(), "a connection of another loop")
					c.WriteString("news\n")
					mu.Lock()
					seen++
					mu.Unlock()
				}
			}))
			select {
			case <-done:
			case <-time.After(timeout):
				t.Error("posted function not run")
			}
		})
	}
	wg.Wait()
	assert.Equal(t, clients, seen)
	for _, r := range rs {
		assert.Equal(t, "news\n", readLine(t, r))
	}

	// A panic in posted work or a loop timer: counted, the loop serves on.
	fired := make(chan struct{})
	require.NoError(t, loops[0].Post(func() { panic("posted") }))
	loops[1].AfterFunc(time.Millisecond, func() { panic("timed") })
	loops[0].AfterFunc(time.Millisecond, func() { close(fired) })
	select {
	case <-fired:
	case <-time.After(timeout):
		t.Fatal("loop timer not run")
	}
	eventually(t, func() bool { return srv.Stats().Panics == 2 }, "panics not counted")
	c := dial(t, "tcp", addr)
	_, err := c.Write([]byte("still\n"))
	require.NoError(t, err)
	assert.Equal(t, "STILL\n", readLine(t, bufio.NewReader(c)))

	require.NoError(t, srv.Close())
	for _, l := range loops {
		assert.ErrorIs(t, l.Post(func() { t.Error("ran after Close") }), netloop.ErrServerClosed)
	}
}

// TestLoopPostOrder: functions posted from one goroutine run in order, one
// at a time, on the loop goroutine.
func TestLoopPostOrder(t *testing.T) {
	srv, _ := serve(t, newLines(nil), netloop.WithLoops(1))
	l := srv.Loops()[0]
	var got []int
	done := make(chan struct{})
	for i := range 100 {
		require.NoError(t, l.Post(func() {
			got = append(got, i) // no lock: only the loop goroutine runs this
			if i == 99 {
				close(done)
			}
		}))
	}
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatal("posted functions not run")
	}
	want := make([]int, 100)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, got)
}
