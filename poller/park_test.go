package poller_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// The waits of a Mux shared under a lock park in the netpoller where they
// can (park_linux.go); these tests hold them to what the same waits report
// without a lock, which block their thread in ppoll or select.

// A parkCase is an fd, what to wait for, and what makes it ready; trigger
// runs either before the wait or while it waits.
type parkCase struct {
	name  string
	setup func(t *testing.T) (fd int, ask poller.Events, trigger func())
}

var parkCases = []parkCase{
	{name: "pipe/read", setup: func(t *testing.T) (int, poller.Events, func()) {
		p := newPipe(t)
		return p.r, poller.Read, func() { p.write(p.w, "x") }
	}},
	{name: "pipe/hangup", setup: func(t *testing.T) (int, poller.Events, func()) {
		p := newPipe(t)
		return p.r, poller.Read, func() { p.close(&p.w) }
	}},
	{name: "pipe/reader-gone", setup: func(t *testing.T) (int, poller.Events, func()) {
		p := newPipe(t)
		fillPipe(t, p.w)
		return p.w, poller.Write, func() { p.close(&p.r) }
	}},
	{name: "pipe/drained", setup: func(t *testing.T) (int, poller.Events, func()) {
		p := newPipe(t)
		fillPipe(t, p.w)
		return p.w, poller.Write, func() { drain(p.r) }
	}},
	{name: "socketpair/read-write", setup: func(t *testing.T) (int, poller.Events, func()) {
		s := newSocketpair(t)
		fillPipe(t, s.r) // full: r is not writable until the peer reads
		return s.r, poller.Read | poller.Write, func() { s.write(s.w, "hello") }
	}},
	{name: "socketpair/hangup", setup: func(t *testing.T) (int, poller.Events, func()) {
		s := newSocketpair(t)
		return s.r, poller.Read, func() { s.close(&s.w) }
	}},
	{name: "tcp/priority", setup: func(t *testing.T) (int, poller.Events, func()) {
		a, b := tcpFDPair(t)
		return b, poller.Priority, func() {
			_, err := unix.SendmsgN(a, []byte("!"), nil, nil, unix.MSG_OOB)
			require.NoError(t, err)
		}
	}},
	{name: "file/read", setup: func(t *testing.T) (int, poller.Events, func()) {
		// epoll refuses regular files: the wait blocks its thread, and a
		// regular file is always ready anyway.
		f, err := os.Create(filepath.Join(t.TempDir(), "f"))
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		rc, err := f.SyscallConn()
		require.NoError(t, err)
		fd := -1
		require.NoError(t, rc.Control(func(s uintptr) { fd = int(s) }))
		return fd, poller.Read, func() {}
	}},
}

// fillPipe writes to the nonblocking fd until it would block.
func fillPipe(t *testing.T, fd int) {
	buf := make([]byte, 64<<10)
	for {
		if _, err := unix.Write(fd, buf); err == unix.EAGAIN {
			return
		} else {
			require.NoError(t, err)
		}
	}
}

// drain reads the nonblocking fd until it would block.
func drain(fd int) {
	buf := make([]byte, 64<<10)
	for {
		if n, _ := unix.Read(fd, buf); n <= 0 {
			return
		}
	}
}

// tcpFDPair returns the two ends of a loopback TCP connection as raw fds,
// nonblocking.
func tcpFDPair(t *testing.T) (int, int) {
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	defer unix.Close(l)
	require.NoError(t, unix.Bind(l, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, unix.Listen(l, 1))
	addr, err := unix.Getsockname(l)
	require.NoError(t, err)
	a, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	require.NoError(t, unix.Connect(a, addr))
	b, _, err := unix.Accept(l)
	require.NoError(t, err)
	p := newPair(t, [2]int{a, b})
	return p.r, p.w
}

// A waitResult is what the three calls reported for one fd.
type waitResult struct {
	waitFD  poller.Events
	revents int16
	sets    [3]bool // reported readable, writable, exceptional by Select
}

// waitAll makes each of the three waits on fd for ask (WaitFD on the
// Mux's backend) and returns what they reported.
func waitAll(t *testing.T, m *poller.Mux, fd int, ask poller.Events) waitResult {
	var res waitResult
	var err error
	res.waitFD, err = m.WaitFD(fd, ask, 5*time.Second)
	require.NoError(t, err)
	fds := []unix.PollFd{{Fd: int32(fd), Events: parkAsk(ask)}}
	_, err = m.Poll(fds, 5*time.Second)
	require.NoError(t, err)
	res.revents = fds[0].Revents
	var lists [3][]int
	for i, e := range []poller.Events{poller.Read, poller.Write, poller.Priority} {
		if ask&e != 0 {
			lists[i] = []int{fd}
		}
	}
	rr, wr, er, err := m.Select(lists[0], lists[1], lists[2], 5*time.Second)
	require.NoError(t, err)
	res.sets = [3]bool{len(rr) > 0, len(wr) > 0, len(er) > 0}
	return res
}

func parkAsk(ev poller.Events) int16 {
	e := pollEvents(ev)
	if ev&poller.Priority != 0 {
		e |= unix.POLLPRI
	}
	return e
}

func TestLockedWaitsMatchUnlocked(t *testing.T) {
	// Ready before the wait or while it waits, a wait by a goroutine that
	// holds the lock reports what the same wait reports without one.
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		for _, c := range parkCases {
			for _, during := range []bool{false, true} {
				name := c.name + "/before"
				if during {
					name = c.name + "/during"
				}
				t.Run(name, func(t *testing.T) {
					// Without a lock, on an fd made ready first.
					fd, ask, trigger := c.setup(t)
					trigger()
					want := waitAll(t, poller.New(poller.WithBackend(b)), fd, ask)

					fd, ask, trigger = c.setup(t)
					l := gvl.New()
					m := poller.New(poller.WithBackend(b), poller.WithGVL(l))
					var wg sync.WaitGroup
					if during {
						wg.Go(func() {
							time.Sleep(10 * time.Millisecond)
							trigger()
						})
					} else {
						trigger()
					}
					l.Acquire()
					// The first wait is the one the trigger wakes; the
					// others find the fd ready.
					start := time.Now()
					got := waitAll(t, m, fd, ask)
					elapsed := time.Since(start)
					l.Release()
					wg.Wait()
					assert.Equal(t, want, got)
					// A parked wait that took its wakeup for nothing
					// would still answer right, at its deadline.
					assert.Less(t, elapsed, 2*time.Second, "a wait ran to its deadline")
				})
			}
		}
	})
}

func TestLockedWaitTimeouts(t *testing.T) {
	// A parked wait ends at its deadline, not before and not much after,
	// and finds nothing; the next one still sees a byte.
	const timeout = 30 * time.Millisecond
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)
		l := gvl.New()
		m := poller.New(poller.WithBackend(b), poller.WithGVL(l))
		l.Acquire()
		defer l.Release()
		for _, wait := range []func() bool{
			func() bool { ev, err := m.WaitFD(p.r, poller.Read, timeout); require.NoError(t, err); return ev != 0 },
			func() bool {
				fds := []unix.PollFd{{Fd: int32(p.r), Events: unix.POLLIN}}
				n, err := m.Poll(fds, timeout)
				require.NoError(t, err)
				return n != 0
			},
			func() bool {
				rr, _, _, err := m.Select([]int{p.r}, nil, nil, timeout)
				require.NoError(t, err)
				return len(rr) != 0
			},
		} {
			start := time.Now()
			assert.False(t, wait())
			elapsed := time.Since(start)
			assert.GreaterOrEqual(t, elapsed, timeout)
			assert.Less(t, elapsed, timeout+slack)
		}
		p.write(p.w, "x")
		ev, err := m.WaitFD(p.r, poller.Read, time.Second)
		require.NoError(t, err)
		assert.Equal(t, poller.Read, ev)
	})
}

func TestLockedWaitsUnderSignals(t *testing.T) {
	// A signal storm neither shortens a parked wait nor loses its byte.
	const timeout = 50 * time.Millisecond
	stop := stormProcess(t)
	defer stop()
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)
		l := gvl.New()
		m := poller.New(poller.WithBackend(b), poller.WithGVL(l), poller.WithStepper(&stepper{more: never}))
		l.Acquire()
		defer l.Release()
		start := time.Now()
		got, err := m.WaitFD(p.r, poller.Read, timeout)
		elapsed := time.Since(start)
		require.NoError(t, err)
		assert.Zero(t, got)
		assert.GreaterOrEqual(t, elapsed, timeout)
		assert.Less(t, elapsed, timeout+slack)

		var wg sync.WaitGroup
		wg.Go(func() {
			time.Sleep(5 * time.Millisecond)
			unix.Write(p.w, []byte("x"))
		})
		got, err = m.WaitFD(p.r, poller.Read, 5*time.Second)
		wg.Wait()
		require.NoError(t, err)
		assert.Equal(t, poller.Read, got)
	})
}

func TestLockedWaitsManyGoroutines(t *testing.T) {
	// Many goroutines sharing a lock and a Mux wait at once, each on its
	// own pipe, and are woken in an order of the writer's choosing: each
	// gets its byte, and no fd outlives the waits.
	const n = 40
	poller.CloseIdleParkers()
	before := poller.OpenFDs(t)
	pipes := make([]*fdPair, n)
	for i := range pipes {
		pipes[i] = newPipe(t)
	}
	l := gvl.New()
	m := poller.New(poller.WithGVL(l))
	var wg sync.WaitGroup
	got := make([]poller.Events, n)
	waiting := make(chan struct{}, n)
	for i := range n {
		wg.Go(func() {
			l.Acquire()
			defer l.Release()
			waiting <- struct{}{}
			var err error
			got[i], err = m.WaitFD(pipes[i].r, poller.Read, 10*time.Second)
			assert.NoError(t, err)
		})
	}
	for range n {
		<-waiting
	}
	for i := n - 1; i >= 0; i -= 2 {
		pipes[i].write(pipes[i].w, "x")
	}
	for i := 0; i < n; i += 2 {
		pipes[i].write(pipes[i].w, "x")
	}
	wg.Wait()
	for i := range n {
		assert.Equal(t, poller.Read, got[i], "goroutine %d", i)
	}
	for _, p := range pipes {
		p.close(&p.r)
		p.close(&p.w)
	}
	poller.CloseIdleParkers()
	assert.Equal(t, before, poller.OpenFDs(t), "fds leaked")
}

func TestMuxRestsAfterNoMoreWork(t *testing.T) {
	// Once a step reports no more work, the Mux offers none for one step
	// budget, then offers again.
	const budget = 200 * time.Millisecond
	p := newPipe(t)
	st := &stepper{more: never}
	m := poller.New(poller.WithStepper(st), poller.WithStepBudget(budget))
	wait := func() {
		// The byte comes after the step and the poll after it, so the
		// call sees the step's "no more" and blocks.
		var wg sync.WaitGroup
		wg.Go(func() {
			time.Sleep(2 * time.Millisecond)
			p.write(p.w, "x")
		})
		got, err := m.WaitFD(p.r, poller.Read, -1)
		wg.Wait()
		require.NoError(t, err)
		require.Equal(t, poller.Read, got)
		drain(p.r)
	}
	start := time.Now()
	wait()
	assert.EqualValues(t, 1, st.calls.Load(), "the first call steps")
	wait()
	wait()
	if time.Since(start) < budget {
		assert.EqualValues(t, 1, st.calls.Load(), "a call within the budget stepped")
	}
	time.Sleep(budget)
	wait()
	assert.EqualValues(t, 2, st.calls.Load(), "no step after the budget")
}
