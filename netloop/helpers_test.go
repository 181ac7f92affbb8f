package netloop_test

import (
	"bufio"
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/netloop"
)

// timeout bounds every wait of the tests.
const timeout = 10 * time.Second

// lines is a line-protocol handler: each "\n"-terminated line is answered
// by reply (by default the line in upper case), and each close is sent to
// closed.
type lines struct {
	reply  func(c *netloop.Conn, line string)
	opened chan *netloop.Conn
	closed chan error
}

func newLines(reply func(c *netloop.Conn, line string)) *lines {
	if reply == nil {
		reply = func(c *netloop.Conn, line string) { c.WriteString(strings.ToUpper(line) + "\n") }
	}
	return &lines{reply: reply, opened: make(chan *netloop.Conn, 2000), closed: make(chan error, 2000)}
}

func (h *lines) OnOpen(c *netloop.Conn) { h.opened <- c }

func (h *lines) OnData(c *netloop.Conn) {
	for {
		b := c.Peek()
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return
		}
		line := string(b[:i])
		c.Discard(i + 1)
		h.reply(c, line)
	}
}

func (h *lines) OnClose(c *netloop.Conn, reason error) { h.closed <- reason }

// nextClose waits for the next connection to close and returns its reason.
func (h *lines) nextClose(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.closed:
		return err
	case <-time.After(timeout):
		t.Fatal("no connection closed")
		return nil
	}
}

// serve starts a server for h on a free loopback port; the test's cleanup
// closes it and checks that Serve returned.
func serve(t *testing.T, h netloop.Handler, opts ...netloop.Option) (*netloop.Server, string) {
	t.Helper()
	srv, err := netloop.Listen("tcp", "127.0.0.1:0", h, opts...)
	require.NoError(t, err)
	start(t, srv)
	return srv, srv.Addr().String()
}

func start(t *testing.T, srv *netloop.Server) {
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	t.Cleanup(func() {
		srv.Close()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(timeout):
			t.Error("Serve did not return after Close")
		}
	})
}

// dial connects to addr with a deadline on every read and write.
func dial(t *testing.T, network, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout(network, addr, timeout)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(timeout)))
	t.Cleanup(func() { c.Close() })
	return c
}

// readLine reads one line from r.
func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	s, err := r.ReadString('\n')
	require.NoError(t, err)
	return s
}

// eventually waits for cond, polling.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, timeout, time.Millisecond, msg)
}
