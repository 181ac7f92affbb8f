package poller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// epollPeek is epoll_wait with a zero timeout: nothing ready is 0, a ready
// fd is reported with its events, a bad epoll fd is an error.
func TestEpollPeek(t *testing.T) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(epfd)
	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC))
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	require.NoError(t, unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, p[0], &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(p[0])}))

	evs := make([]unix.EpollEvent, 4)
	n, err := epollPeek(epfd, evs)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing written yet")

	_, err = unix.Write(p[1], []byte("x"))
	require.NoError(t, err)
	n, err = epollPeek(epfd, evs)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	assert.Equal(t, int32(p[0]), evs[0].Fd)
	assert.NotZero(t, evs[0].Events&unix.EPOLLIN)

	_, err = epollPeek(p[0], evs) // not an epoll fd
	assert.ErrorIs(t, err, unix.EINVAL)
}
