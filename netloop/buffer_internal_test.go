package netloop

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIdleHoldsNoBuffer: a connection holds an inbound buffer only while
// a partial request waits, and an outbound one only while output waits.
func TestIdleHoldsNoBuffer(t *testing.T) {
	opened := make(chan *Conn, 1)
	srv, err := Listen("tcp", "127.0.0.1:0", HandlerFuncs{
		Open: func(c *Conn) { opened <- c },
		Data: func(c *Conn) {
			for {
				i := bytes.IndexByte(c.Peek(), '\n')
				if i < 0 {
					return
				}
				c.Write(c.Peek()[:i+1])
				c.Discard(i + 1)
			}
		},
	}, WithLoops(1))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	defer func() {
		srv.Close()
		require.NoError(t, <-done)
	}()
	c, err := net.DialTimeout("tcp", srv.Addr().String(), 10*time.Second)
	require.NoError(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var sc *Conn
	select {
	case sc = <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("not opened")
	}
	// held reports, from the loop, which buffers the connection holds.
	held := func() (in, out bool) {
		ch := make(chan [2]bool, 1)
		require.NoError(t, sc.Post(func(c *Conn) { ch <- [2]bool{c.in != nil, c.out != nil} }))
		select {
		case h := <-ch:
			return h[0], h[1]
		case <-time.After(10 * time.Second):
			t.Fatal("Post never ran")
			return
		}
	}
	in, out := held()
	assert.False(t, in)
	assert.False(t, out)

	c.Write([]byte("half a li"))
	require.Eventually(t, func() bool { in, _ := held(); return in }, 10*time.Second, time.Millisecond,
		"a partial request must be kept in the connection's buffer")
	c.Write([]byte("ne\n"))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "half a line\n", string(buf[:n]))
	in, out = held()
	assert.False(t, in, "inbound buffer kept by an idle connection")
	assert.False(t, out, "outbound buffer kept by an idle connection")
}
