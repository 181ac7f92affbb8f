package poller_test

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// lockedMux returns a Mux shared under a lock, and the lock, held.
func lockedMux(t *testing.T, opts ...poller.Option) (*poller.Mux, *gvl.Lock) {
	l := gvl.New()
	l.Acquire()
	t.Cleanup(l.Release)
	return poller.New(append(opts, poller.WithGVL(l))...), l
}

func TestParkedWaitBlocksNoThread(t *testing.T) {
	// A goroutine waiting with the lock released is parked in the
	// netpoller, as a goroutine reading an os.File is ("IO wait"), not
	// blocked in a system call.
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)
		l := gvl.New()
		m := poller.New(poller.WithBackend(b), poller.WithGVL(l))
		var wg sync.WaitGroup
		wg.Go(func() {
			l.Acquire()
			defer l.Release()
			got, err := m.WaitFD(p.r, poller.Read, 10*time.Second)
			assert.NoError(t, err)
			assert.Equal(t, poller.Read, got)
		})
		eventually(t, "the wait to park in the netpoller", func() bool {
			buf := make([]byte, 1<<20)
			for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
				if strings.Contains(g, "poller.(*parker).park") && strings.Contains(g, "[IO wait") {
					return true
				}
			}
			return false
		})
		p.write(p.w, "x")
		wg.Wait()
		assert.EqualValues(t, 1, m.Stats().Parked)
		assert.EqualValues(t, 1, m.Stats().BlockingPolls)
	})
}

func TestParkedFDNumberReused(t *testing.T) {
	// A parker keeps the fds of past waits. An fd closed while a dup of
	// it lives on, its number then reused by a new pipe: the old file
	// becoming ready must not make the new one look ready, and the new
	// one must still wake the wait.
	m, _ := lockedMux(t)
	p := newPipe(t)
	got, err := m.WaitFD(p.r, poller.Read, 10*time.Millisecond) // leaves p.r armed in the parker
	require.NoError(t, err)
	require.Zero(t, got)
	old := p.r
	keep, err := unix.Dup(old)
	require.NoError(t, err)
	defer unix.Close(keep)
	p.close(&p.r)
	q := newPipe(t)
	if q.r != old {
		t.Skipf("the kernel gave the new pipe fd %d, not %d", q.r, old)
	}
	p.write(p.w, "x") // the old file is ready, through keep
	got, err = m.WaitFD(q.r, poller.Read, 20*time.Millisecond)
	require.NoError(t, err)
	assert.Zero(t, got, "the old file's readiness reported for the new one")

	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(5 * time.Millisecond)
		q.write(q.w, "y")
	})
	got, err = m.WaitFD(q.r, poller.Read, 5*time.Second)
	wg.Wait()
	require.NoError(t, err)
	assert.Equal(t, poller.Read, got)
}

func TestParkedWaitFallsBack(t *testing.T) {
	// Waits the netpoller cannot take block their thread as before: more
	// fds than a parked wait arms, and fds epoll refuses.
	t.Run("many fds", func(t *testing.T) {
		const n = 70
		fds := make([]unix.PollFd, n)
		pipes := make([]*fdPair, n)
		for i := range pipes {
			pipes[i] = newPipe(t)
			fds[i] = unix.PollFd{Fd: int32(pipes[i].r), Events: unix.POLLIN}
		}
		m, _ := lockedMux(t)
		var wg sync.WaitGroup
		wg.Go(func() {
			time.Sleep(5 * time.Millisecond)
			pipes[n-1].write(pipes[n-1].w, "x")
		})
		got, err := m.Poll(fds, 5*time.Second)
		wg.Wait()
		require.NoError(t, err)
		assert.Equal(t, 1, got)
		assert.Equal(t, int16(unix.POLLIN), fds[n-1].Revents)
		assert.Zero(t, m.Stats().Parked)
	})
	t.Run("/dev/null", func(t *testing.T) {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(fd)
		m, _ := lockedMux(t)
		got, err := m.WaitFD(fd, poller.Read, 5*time.Second)
		require.NoError(t, err)
		assert.Equal(t, poller.Read, got)
		assert.Zero(t, m.Stats().Parked)
	})
	t.Run("closed fd", func(t *testing.T) {
		// With no idle parker, the wait makes one, whose epoll fd takes
		// the lowest free number: the closed fd's. The wait must still
		// report a closed fd, not wait on the parker's own.
		poller.CloseIdleParkers()
		p := newPipe(t)
		fd := p.r
		p.close(&p.r)
		m, _ := lockedMux(t)
		got, err := m.WaitFD(fd, poller.Read, 5*time.Second)
		require.NoError(t, err)
		assert.Equal(t, poller.Invalid, got)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := m.Poll(fds, 5*time.Second)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, int16(unix.POLLNVAL), fds[0].Revents)
		_, _, _, err = m.Select([]int{fd}, nil, nil, 5*time.Second)
		require.ErrorIs(t, err, unix.EBADF)
		assert.Zero(t, m.Stats().Parked)
	})
}

func TestParkedWaitTinyTimeout(t *testing.T) {
	// A deadline that passes before the parker arms (a wait of a
	// nanosecond) must still look at the fds: a ready fd is reported.
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)
		p.write(p.w, "x")
		m, _ := lockedMux(t, poller.WithBackend(b))
		for range 100 {
			got, err := m.WaitFD(p.r, poller.Read, time.Nanosecond)
			require.NoError(t, err)
			require.Equal(t, poller.Read, got)
			rr, _, _, err := m.Select([]int{p.r}, nil, nil, time.Nanosecond)
			require.NoError(t, err)
			require.Equal(t, []int{p.r}, rr)
		}
	})
}
