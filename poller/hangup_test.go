package poller_test

import (
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/poller"
)

// seesPeerClose reports whether backend b reports Hangup when the peer of a
// stream socket closes its end (or shuts down writing) while ours stays
// open: epoll asks for EPOLLRDHUP, poll for POLLRDHUP where the platform
// has it; select has no way to tell.
func seesPeerClose(b poller.Backend) bool {
	switch runtime.GOOS {
	case "linux", "freebsd":
		return b != poller.BackendSelect
	}
	return false
}

// tcpPair returns the two ends of a loopback TCP connection: ours, as a
// *net.TCPConn, and the peer's.
func tcpPair(t *testing.T) (ours *net.TCPConn, peer net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	peer, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { peer.Close() })
	c, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn), peer
}

// TestLoopPeerClose: a TCP peer that closes its end, and a socketpair peer
// that shuts down writing, are reported as Read|Hangup by the backends that
// can see it, as Read by select. A handler that then stops watching Read
// is not called again: the hangup of a half-closed socket comes only with
// Read, so it cannot make the level-triggered loop spin.
func TestLoopPeerClose(t *testing.T) {
	type setup func(t *testing.T) (conn syscall.Conn, closePeer func())
	cases := map[string]setup{
		"tcp/close": func(t *testing.T) (syscall.Conn, func()) {
			ours, peer := tcpPair(t)
			return ours, func() { require.NoError(t, peer.Close()) }
		},
		"socketpair/shutdown": func(t *testing.T) (syscall.Conn, func()) {
			s := newSocketpair(t)
			return rawConn(s.r), func() { require.NoError(t, unix.Shutdown(s.w, unix.SHUT_WR)) }
		},
	}
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		for name, setup := range cases {
			t.Run(name, func(t *testing.T) {
				conn, closePeer := setup(t)
				l := newLoop(t, poller.WithBackend(b))
				var got []poller.Events
				fd, err := l.AddConn(conn, poller.Read, func(fd int, ev poller.Events) {
					got = append(got, ev)
					require.NoError(t, l.Modify(fd, 0)) // stop watching
				})
				require.NoError(t, err)
				closePeer()
				n, err := l.RunOnce(5 * time.Second)
				require.NoError(t, err)
				require.Equal(t, 1, n)
				want := poller.Read
				if seesPeerClose(b) {
					want |= poller.Hangup
				}
				assert.Equal(t, []poller.Events{want}, got)

				n, err = l.RunOnce(30 * time.Millisecond)
				require.NoError(t, err)
				assert.Zero(t, n, "called again after it stopped watching: %v", got)
				require.NoError(t, l.Remove(fd))

				// The one-shot wait reports the same.
				m := poller.New(poller.WithBackend(b))
				ev, err := m.WaitFD(fd, poller.Read, time.Second)
				require.NoError(t, err)
				assert.Equal(t, want, ev)
			})
		}
	})
}

// rawConn is a syscall.Conn for a bare fd, for AddConn in tests.
type rawConn int

func (c rawConn) SyscallConn() (syscall.RawConn, error) { return c, nil }
func (c rawConn) Control(f func(fd uintptr)) error      { f(uintptr(c)); return nil }
func (c rawConn) Read(f func(fd uintptr) bool) error    { f(uintptr(c)); return nil }
func (c rawConn) Write(f func(fd uintptr) bool) error   { f(uintptr(c)); return nil }
