package poller_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

func TestWaitFDReady(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		for _, c := range readyCases {
			t.Run(c.name, func(t *testing.T) {
				fd, ask := c.setup(t)
				m := poller.New(poller.WithBackend(b))
				got, err := m.WaitFD(fd, ask, 5*time.Second)
				require.NoError(t, err)
				want := c.expect(b)
				assert.Equal(t, want, got&want, "got %v, want %v included", got, want)
				assert.EqualValues(t, 1, m.Stats().Events)
			})
		}
	})
}

func TestPollReady(t *testing.T) {
	for _, c := range readyCases {
		t.Run(c.name, func(t *testing.T) {
			fd, ask := c.setup(t)
			idle := newPipe(t)
			m := poller.New()
			fds := []unix.PollFd{
				{Fd: int32(idle.r), Events: unix.POLLIN},
				{Fd: int32(fd), Events: pollEvents(ask)},
			}
			n, err := m.Poll(fds, 5*time.Second)
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			assert.Zero(t, fds[0].Revents)
			assert.NotZero(t, fds[1].Revents)
		})
	}
}

func pollEvents(ev poller.Events) int16 {
	var e int16
	if ev&poller.Read != 0 {
		e |= unix.POLLIN
	}
	if ev&poller.Write != 0 {
		e |= unix.POLLOUT
	}
	return e
}

func TestSelectReady(t *testing.T) {
	p := newPipe(t)
	q := newPipe(t)
	p.write(p.w, "x")
	m := poller.New()
	// q.r is not ready; p.r appears twice and is reported once.
	rr, wr, er, err := m.Select([]int{q.r, p.r, p.r}, []int{q.w}, nil, 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, []int{p.r}, rr)
	assert.Equal(t, []int{q.w}, wr)
	assert.Empty(t, er)
	assert.EqualValues(t, 2, m.Stats().Events)
}

func TestSelectFDRange(t *testing.T) {
	for _, fd := range []int{-1, unix.FD_SETSIZE, unix.FD_SETSIZE + 1000} {
		m := poller.New()
		_, _, _, err := m.Select(nil, []int{fd}, nil, time.Second)
		require.ErrorIs(t, err, poller.ErrFDRange)
		assert.Contains(t, err.Error(), "fd "+itoa(fd))
		assert.Zero(t, m.Stats().Syscalls, "a system call was made for fd %d", fd)
	}
	m := poller.New(poller.WithBackend(poller.BackendSelect))
	_, err := m.WaitFD(unix.FD_SETSIZE, poller.Read, time.Second)
	require.ErrorIs(t, err, poller.ErrFDRange)
	assert.Zero(t, m.Stats().Syscalls)
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestTimeoutHonoured(t *testing.T) {
	const timeout = 30 * time.Millisecond
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)
		for _, st := range []*stepper{nil, {work: time.Millisecond}} {
			opts := []poller.Option{poller.WithBackend(b)}
			if st != nil {
				opts = append(opts, poller.WithStepper(st))
			}
			m := poller.New(opts...)
			start := time.Now()
			got, err := m.WaitFD(p.r, poller.Read, timeout)
			elapsed := time.Since(start)
			require.NoError(t, err)
			assert.Zero(t, got)
			assert.GreaterOrEqual(t, elapsed, timeout)
			assert.Less(t, elapsed, timeout+slack)

			start = time.Now()
			rr, _, _, err := m.Select([]int{p.r}, nil, nil, timeout)
			elapsed = time.Since(start)
			require.NoError(t, err)
			assert.Empty(t, rr)
			assert.GreaterOrEqual(t, elapsed, timeout)
			assert.Less(t, elapsed, timeout+slack)
		}
	})
}

func TestZeroTimeoutNeverSteps(t *testing.T) {
	p := newPipe(t)
	st := &stepper{}
	m := poller.New(poller.WithStepper(st))
	got, err := m.WaitFD(p.r, poller.Read, 0)
	require.NoError(t, err)
	assert.Zero(t, got)
	n, err := m.Poll([]unix.PollFd{{Fd: int32(p.r), Events: unix.POLLIN}}, 0)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Zero(t, st.calls.Load())
	s := m.Stats()
	assert.EqualValues(t, 2, s.ZeroPolls)
	assert.Zero(t, s.BlockingPolls)
}

func TestClosedFD(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)
		fd := p.r
		p.close(&p.r)
		m := poller.New(poller.WithBackend(b))
		got, err := m.WaitFD(fd, poller.Read, 5*time.Second)
		require.NoError(t, err)
		assert.Equal(t, poller.Invalid, got)
		assert.LessOrEqual(t, m.Stats().Syscalls, uint64(2), "no busy loop")
	})
	t.Run("Poll", func(t *testing.T) {
		p := newPipe(t)
		fd := p.r
		p.close(&p.r)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := poller.New().Poll(fds, 5*time.Second)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, int16(unix.POLLNVAL), fds[0].Revents)
	})
	t.Run("Select", func(t *testing.T) {
		p := newPipe(t)
		fd := p.r
		p.close(&p.r)
		_, _, _, err := poller.New().Select([]int{fd}, nil, nil, 5*time.Second)
		require.ErrorIs(t, err, unix.EBADF)
		var se interface{ Unwrap() error }
		assert.True(t, errors.As(err, &se), "error %v is not wrapped", err)
	})
	t.Run("negative", func(t *testing.T) {
		_, err := poller.New().WaitFD(-1, poller.Read, time.Second)
		require.ErrorIs(t, err, poller.ErrFDRange)
	})
}

func TestPollFirstStepFirst(t *testing.T) {
	// Select and Poll find ready data without stepping; WaitFD steps first.
	p := newPipe(t)
	p.write(p.w, "x")
	st := &stepper{}
	m := poller.New(poller.WithStepper(st))
	rr, _, _, err := m.Select([]int{p.r}, nil, nil, time.Second)
	require.NoError(t, err)
	assert.Equal(t, []int{p.r}, rr)
	n, err := m.Poll([]unix.PollFd{{Fd: int32(p.r), Events: unix.POLLIN}}, time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Zero(t, st.calls.Load(), "Select or Poll stepped with data ready")

	got, err := m.WaitFD(p.r, poller.Read, time.Second)
	require.NoError(t, err)
	assert.Equal(t, poller.Read, got)
	assert.EqualValues(t, 1, st.calls.Load(), "WaitFD steps once before its first poll")
}

func TestNoStepWithoutWork(t *testing.T) {
	p := newPipe(t)
	st := &stepper{more: never}
	m := poller.New(poller.WithStepper(st))
	got, err := m.WaitFD(p.r, poller.Read, 30*time.Millisecond)
	require.NoError(t, err)
	assert.Zero(t, got)
	// One step reported no work; the call then blocked instead of asking
	// again.
	assert.EqualValues(t, 1, st.calls.Load())
	s := m.Stats()
	assert.EqualValues(t, 1, s.Steps)
	assert.EqualValues(t, 1, s.BlockingPolls)
	assert.EqualValues(t, 1, s.ZeroPolls)
}

func TestStepsNeverOverrun(t *testing.T) {
	const (
		timeout = 50 * time.Millisecond
		budget  = 4 * time.Millisecond
	)
	p := newPipe(t)
	st := &stepper{work: budget}
	m := poller.New(poller.WithStepper(st), poller.WithStepBudget(budget))
	start := time.Now()
	got, err := m.WaitFD(p.r, poller.Read, timeout)
	elapsed := time.Since(start)
	require.NoError(t, err)
	assert.Zero(t, got)
	require.NotZero(t, st.calls.Load())
	for i, at := range st.starts {
		assert.LessOrEqual(t, st.budgets[i], budget)
		// Each step starts with at least a budget left before the deadline.
		// (The call fixed its deadline a little after start: allow for it.)
		assert.False(t, at.Add(budget).After(start.Add(timeout+time.Millisecond)),
			"step %d started %v after the call, with less than %v left", i, at.Sub(start), budget)
	}
	assert.Less(t, elapsed, timeout+slack)
}

func TestNoStepWhileContended(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)
		lock := gvl.New()
		lock.Acquire()
		st := &stepper{}
		waited := make(chan int64, 1)
		go func() {
			lock.Acquire()
			waited <- st.calls.Load()
			lock.Release()
		}()
		eventually(t, "the waiter to queue", lock.Contended)

		m := poller.New(poller.WithBackend(b), poller.WithGVL(lock), poller.WithStepper(st))
		got, err := m.WaitFD(p.r, poller.Read, 20*time.Millisecond)
		require.NoError(t, err)
		assert.Zero(t, got)
		select {
		case steps := <-waited:
			assert.Zero(t, steps, "steps taken while a goroutine waited for the lock")
		case <-time.After(5 * time.Second):
			t.Fatal("the waiter never got the lock: the wait did not release it")
		}
		lock.Release()
		assert.Zero(t, st.calls.Load())
		assert.EqualValues(t, 1, m.Stats().BlockingPolls)
	})
}

func TestStepsKeepLock(t *testing.T) {
	// With nobody waiting, steps and zero polls keep the lock; only the
	// blocking wait releases it.
	p := newPipe(t)
	var events []gvl.Event
	lock := gvl.New(gvl.WithHook(func(e gvl.Event) { events = append(events, e) }))
	lock.Acquire()
	defer lock.Release()
	st := &stepper{more: func(n int64) bool { return n < 3 }}
	m := poller.New(poller.WithGVL(lock), poller.WithStepper(st))
	events = nil
	_, err := m.WaitFD(p.r, poller.Read, 20*time.Millisecond)
	require.NoError(t, err)
	assert.EqualValues(t, 3, st.calls.Load())
	s := m.Stats()
	assert.EqualValues(t, 3, s.ZeroPolls)
	assert.EqualValues(t, 1, s.BlockingPolls)
	released := 0
	for _, e := range events {
		if e == gvl.EventReleased {
			released++
		}
	}
	assert.Equal(t, 1, released, "events %v", events)
}
