package poller_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

func newLoop(t *testing.T, opts ...poller.Option) *poller.Loop {
	t.Helper()
	l, err := poller.NewLoop(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

func TestLoopReady(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		for _, c := range readyCases {
			t.Run(c.name, func(t *testing.T) {
				fd, ask := c.setup(t)
				l := newLoop(t, poller.WithBackend(b))
				var got poller.Events
				calls := 0
				require.NoError(t, l.Add(fd, ask, func(gotFD int, ev poller.Events) {
					assert.Equal(t, fd, gotFD)
					got = ev
					calls++
				}))
				n, err := l.RunOnce(5 * time.Second)
				require.NoError(t, err)
				assert.Equal(t, 1, n)
				assert.Equal(t, 1, calls)
				want := c.expect(b)
				assert.Equal(t, want, got&want, "got %v, want %v included", got, want)
				assert.Zero(t, got&^(ask|poller.Hangup|poller.Error), "got %v, asked %v", got, ask)
				require.NoError(t, l.Remove(fd))
			})
		}
	})
}

func TestLoopTimeout(t *testing.T) {
	const timeout = 30 * time.Millisecond
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)
		l := newLoop(t, poller.WithBackend(b))
		require.NoError(t, l.Add(p.r, poller.Read, func(int, poller.Events) { t.Error("handler called") }))
		start := time.Now()
		n, err := l.RunOnce(timeout)
		elapsed := time.Since(start)
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.GreaterOrEqual(t, elapsed, timeout)
		assert.Less(t, elapsed, timeout+slack)
		n, err = l.RunOnce(0)
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}

func TestLoopErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)
		l := newLoop(t, poller.WithBackend(b))
		h := func(int, poller.Events) {}
		require.NoError(t, l.Add(p.r, poller.Read, h))
		require.ErrorIs(t, l.Add(p.r, poller.Read, h), poller.ErrRegistered)
		require.ErrorIs(t, l.Modify(p.w, poller.Write), poller.ErrNotRegistered)
		require.ErrorIs(t, l.Remove(p.w), poller.ErrNotRegistered)
		require.ErrorIs(t, l.Add(-1, poller.Read, h), poller.ErrFDRange)

		q := newPipe(t)
		closed := q.r
		q.close(&q.r)
		err := l.Add(closed, poller.Read, h)
		require.ErrorIs(t, err, unix.EBADF)
		var se *os.SyscallError
		require.True(t, errors.As(err, &se), "%v is not an *os.SyscallError", err)

		require.NoError(t, l.Modify(p.r, poller.Read|poller.Write))
		require.NoError(t, l.Remove(p.r))
		require.ErrorIs(t, l.Remove(p.r), poller.ErrNotRegistered)

		require.NoError(t, l.Close())
		require.ErrorIs(t, l.Close(), poller.ErrClosed)
		require.ErrorIs(t, l.Add(p.w, poller.Write, h), poller.ErrClosed)
		require.ErrorIs(t, l.Modify(p.w, poller.Write), poller.ErrClosed)
		require.ErrorIs(t, l.Remove(p.w), poller.ErrClosed)
		_, err = l.RunOnce(0)
		require.ErrorIs(t, err, poller.ErrClosed)
		require.ErrorIs(t, l.Run(context.Background()), poller.ErrClosed)
		l.Wake() // harmless
	})
	t.Run("select/FD_SETSIZE", func(t *testing.T) {
		l := newLoop(t, poller.WithBackend(poller.BackendSelect))
		before := l.Stats().Syscalls
		err := l.Add(unix.FD_SETSIZE, poller.Read, func(int, poller.Events) {})
		require.ErrorIs(t, err, poller.ErrFDRange)
		assert.Contains(t, err.Error(), itoa(unix.FD_SETSIZE))
		assert.Equal(t, before, l.Stats().Syscalls)
	})
}

func TestLoopClosedFD(t *testing.T) {
	// An fd closed behind the loop's back: select and poll report it
	// Invalid once and the loop drops it; epoll forgets it by itself. In
	// every case the loop then sleeps instead of spinning.
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)
		l := newLoop(t, poller.WithBackend(b))
		var got []poller.Events
		require.NoError(t, l.Add(p.r, poller.Read, func(_ int, ev poller.Events) { got = append(got, ev) }))
		fd := p.r
		p.close(&p.r)
		for range 3 {
			_, err := l.RunOnce(20 * time.Millisecond)
			require.NoError(t, err)
		}
		s := l.Stats()
		budget := uint64(12)
		if s.Parked > 0 {
			// A parked wait that times out makes four calls (look,
			// arm, disarm, drain) where a wait on the thread makes
			// one, and the parker's instance two more to set up.
			assert.LessOrEqual(t, s.Parked, uint64(3), "the loop spins: %+v", s)
			budget += 2 + 3*3
		}
		assert.LessOrEqual(t, s.Syscalls, budget, "the loop spins: %+v", s)
		if b == poller.BackendEpoll {
			assert.Empty(t, got)
			require.ErrorIs(t, l.Remove(fd), unix.EBADF)
		} else {
			assert.Equal(t, []poller.Events{poller.Invalid}, got)
			require.ErrorIs(t, l.Remove(fd), poller.ErrNotRegistered)
		}
	})
}

func TestLoopCloseWhileBlocked(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		before := openFDs(t)
		l, err := poller.NewLoop(poller.WithBackend(b))
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() { done <- l.Run(context.Background()) }()
		eventually(t, "Run to block", func() bool { return l.Stats().BlockingPolls > 0 })
		require.NoError(t, l.Close())
		select {
		case err := <-done:
			require.ErrorIs(t, err, poller.ErrClosed)
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not wake Run")
		}
		require.ErrorIs(t, l.Close(), poller.ErrClosed)
		assert.Equal(t, before, openFDs(t), "fds leaked")
	})
}

func TestLoopCloseFreesFDs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		before := openFDs(t)
		for range 10 {
			l, err := poller.NewLoop(poller.WithBackend(b))
			require.NoError(t, err)
			_, err = l.RunOnce(0)
			require.NoError(t, err)
			require.NoError(t, l.Close())
		}
		assert.Equal(t, before, openFDs(t), "fds leaked")
	})
}

// openFDs counts this process's open fds, or skips where the system does
// not list them.
var openFDs = poller.OpenFDs

func TestLoopRunContext(t *testing.T) {
	l := newLoop(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	eventually(t, "Run to block", func() bool { return l.Stats().BlockingPolls > 0 })
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling the context did not end Run")
	}
}

func TestLoopTimers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		l := newLoop(t, poller.WithBackend(b))
		var order []int
		for _, ms := range []int{30, 10, 20} {
			l.AfterFunc(time.Duration(ms)*time.Millisecond, func() { order = append(order, ms) })
		}
		stopped := l.AfterFunc(15*time.Millisecond, func() { t.Error("stopped timer fired") })
		assert.True(t, stopped.Stop())
		assert.False(t, stopped.Stop())
		start := time.Now()
		for len(order) < 3 && time.Since(start) < 5*time.Second {
			_, err := l.RunOnce(-1)
			require.NoError(t, err)
		}
		assert.Equal(t, []int{10, 20, 30}, order)
		assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
		assert.EqualValues(t, 3, l.Stats().Timers)

		fired := 0
		tm := l.AfterFunc(time.Hour, func() { fired++ })
		assert.True(t, tm.Reset(0))
		n, err := l.RunOnce(5 * time.Second)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, 1, fired)
		assert.False(t, tm.Stop())
	})
}

func TestLoopTimerFromOtherGoroutine(t *testing.T) {
	// A timer added while the loop blocks with no deadline wakes it.
	l := newLoop(t)
	fired := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := l.RunOnce(-1)
		done <- err
	}()
	eventually(t, "RunOnce to block", func() bool { return l.Stats().BlockingPolls > 0 })
	l.AfterFunc(time.Millisecond, func() { close(fired) })
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the new timer did not wake the loop")
	}
	if l.Stats().Timers == 0 {
		// Woken for the timer, which was not due yet: run again.
		_, err := l.RunOnce(5 * time.Second)
		require.NoError(t, err)
	}
	select {
	case <-fired:
	default:
		t.Fatal("timer did not fire")
	}
}

func TestLoopTimerLateByAtMostABudget(t *testing.T) {
	const (
		budget = 5 * time.Millisecond
		due    = 40 * time.Millisecond
	)
	st := &stepper{work: budget}
	l := newLoop(t, poller.WithStepper(st), poller.WithStepBudget(budget))
	var firedAt time.Time
	start := time.Now()
	l.AfterFunc(due, func() { firedAt = time.Now() })
	for firedAt.IsZero() && time.Since(start) < 5*time.Second {
		_, err := l.RunOnce(-1)
		require.NoError(t, err)
	}
	require.False(t, firedAt.IsZero())
	assert.NotZero(t, st.calls.Load())
	for i, at := range st.starts {
		assert.False(t, at.Add(budget).After(start.Add(due).Add(time.Millisecond)),
			"step %d started %v in, with less than a budget before the timer", i, at.Sub(start))
	}
	assert.Less(t, firedAt.Sub(start), due+budget+slack)
}

func TestLoopWakeCoalesces(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		l := newLoop(t, poller.WithBackend(b))
		before := l.Stats()
		const goroutines, calls = 50, 200
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range calls {
					l.Wake()
				}
			})
		}
		wg.Wait()
		n, err := l.RunOnce(5 * time.Second)
		require.NoError(t, err)
		assert.Zero(t, n, "a wakeup is not a handler call")
		s := l.Stats()
		assert.EqualValues(t, goroutines*calls, s.WakeCalls-before.WakeCalls)
		assert.EqualValues(t, 1, s.Wakeups-before.Wakeups)
		// One write to wake, one wait, one read to drain.
		assert.LessOrEqual(t, s.Syscalls-before.Syscalls, uint64(3))
		// Drained: the next wait does not return at once.
		n, err = l.RunOnce(10 * time.Millisecond)
		require.NoError(t, err)
		assert.Zero(t, n)
		assert.EqualValues(t, 1, l.Stats().Wakeups-before.Wakeups)
	})
}

func TestLoopWakeUnblocks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		l := newLoop(t, poller.WithBackend(b))
		done := make(chan error, 1)
		go func() {
			_, err := l.RunOnce(-1)
			done <- err
		}()
		eventually(t, "RunOnce to block", func() bool { return l.Stats().BlockingPolls > 0 })
		l.Wake()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("Wake did not unblock RunOnce")
		}
	})
}

func TestLoopAddWhileBlocked(t *testing.T) {
	// An fd added from another goroutine while the loop blocks is watched
	// by that very wait (poll and select are woken to rebuild their sets).
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)
		p.write(p.w, "x")
		l := newLoop(t, poller.WithBackend(b))
		called := make(chan struct{}, 1)
		done := make(chan error, 1)
		go func() {
			for {
				_, err := l.RunOnce(-1)
				if err != nil {
					done <- err
					return
				}
				select {
				case <-called:
					done <- nil
					return
				default:
				}
			}
		}()
		eventually(t, "RunOnce to block", func() bool { return l.Stats().BlockingPolls > 0 })
		require.NoError(t, l.Add(p.r, poller.Read, func(int, poller.Events) {
			select {
			case called <- struct{}{}:
			default:
			}
		}))
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("the fd added during the wait was never reported")
		}
	})
}

func TestLoopReentrantHandlers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		t.Run("remove-other", func(t *testing.T) {
			// Both ready in one batch; whichever runs first removes the
			// other, whose event, already collected, must be dropped.
			p, q := newPipe(t), newPipe(t)
			p.write(p.w, "x")
			q.write(q.w, "x")
			l := newLoop(t, poller.WithBackend(b))
			calls := 0
			require.NoError(t, l.Add(p.r, poller.Read, func(int, poller.Events) {
				calls++
				assert.NoError(t, l.Remove(q.r))
			}))
			require.NoError(t, l.Add(q.r, poller.Read, func(int, poller.Events) {
				calls++
				assert.NoError(t, l.Remove(p.r))
			}))
			n, err := l.RunOnce(5 * time.Second)
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			assert.Equal(t, 1, calls)
		})
		t.Run("remove-self-and-readd", func(t *testing.T) {
			p := newPipe(t)
			p.write(p.w, "x")
			l := newLoop(t, poller.WithBackend(b))
			first, second := 0, 0
			require.NoError(t, l.Add(p.r, poller.Read, func(fd int, _ poller.Events) {
				first++
				assert.NoError(t, l.Remove(fd))
				assert.NoError(t, l.Add(fd, poller.Read, func(int, poller.Events) { second++ }))
			}))
			_, err := l.RunOnce(5 * time.Second)
			require.NoError(t, err)
			assert.Equal(t, 1, first)
			assert.Equal(t, 0, second)
			_, err = l.RunOnce(5 * time.Second)
			require.NoError(t, err)
			assert.Equal(t, 1, first)
			assert.Equal(t, 1, second)
		})
		t.Run("reused-number", func(t *testing.T) {
			// The handler of p closes q's read end and puts a new pipe's
			// read end, likely under the same number, in its place; q's
			// old event in the batch must not reach the new handler.
			p, q := newPipe(t), newPipe(t)
			p.write(p.w, "x")
			q.write(q.w, "x")
			l := newLoop(t, poller.WithBackend(b))
			stale := 0
			var handlerQ poller.Handler = func(int, poller.Events) {}
			var fresh *fdPair
			require.NoError(t, l.Add(p.r, poller.Read, func(int, poller.Events) {
				if fresh != nil {
					return
				}
				assert.NoError(t, l.Remove(q.r))
				q.close(&q.r)
				fresh = newPipe(t)
				assert.NoError(t, l.Add(fresh.r, poller.Read, func(int, poller.Events) { stale++ }))
			}))
			require.NoError(t, l.Add(q.r, poller.Read, func(fd int, ev poller.Events) { handlerQ(fd, ev) }))
			_, err := l.RunOnce(5 * time.Second)
			require.NoError(t, err)
			assert.Zero(t, stale, "an event of the removed fd reached the new registration")
		})
		t.Run("modify", func(t *testing.T) {
			s := newSocketpair(t)
			s.write(s.w, "x")
			l := newLoop(t, poller.WithBackend(b))
			var got []poller.Events
			require.NoError(t, l.Add(s.r, poller.Read|poller.Write, func(fd int, ev poller.Events) {
				got = append(got, ev)
				assert.NoError(t, l.Modify(fd, poller.Write))
			}))
			for range 2 {
				_, err := l.RunOnce(5 * time.Second)
				require.NoError(t, err)
			}
			assert.Equal(t, []poller.Events{poller.Read | poller.Write, poller.Write}, got)
		})
	})
}

func TestLoopAddFileKeepsNonblocking(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	l := newLoop(t)
	var got []byte
	fd, err := l.AddFile(r, poller.Read, func(int, poller.Events) {
		buf := make([]byte, 16)
		n, err := r.Read(buf)
		assert.NoError(t, err)
		got = append(got, buf[:n]...)
	})
	require.NoError(t, err)
	flags, err := fcntlFlags(r)
	require.NoError(t, err)
	assert.NotZero(t, flags&unix.O_NONBLOCK, "AddFile switched the file to blocking mode")
	_, err = w.Write([]byte("hi"))
	require.NoError(t, err)
	n, err := l.RunOnce(5 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, "hi", string(got))
	require.NoError(t, l.Remove(fd))

	r.Close()
	_, err = l.AddFile(r, poller.Read, func(int, poller.Events) {})
	require.ErrorIs(t, err, os.ErrClosed)
}

func fcntlFlags(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var flags int
	var ferr error
	if err := rc.Control(func(fd uintptr) { flags, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil {
		return 0, err
	}
	return flags, ferr
}

func TestLoopStepsOfferedAgainAfterEvents(t *testing.T) {
	p := newPipe(t)
	st := &stepper{more: never}
	l := newLoop(t, poller.WithStepper(st))
	require.NoError(t, l.Add(p.r, poller.Read, func(fd int, _ poller.Events) {
		var buf [8]byte
		unix.Read(fd, buf[:])
	}))
	for range 3 {
		_, err := l.RunOnce(5 * time.Millisecond)
		require.NoError(t, err)
	}
	assert.EqualValues(t, 1, st.calls.Load(), "stepper asked again with nothing new")
	p.write(p.w, "x")
	n, err := l.RunOnce(5 * time.Second)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = l.RunOnce(5 * time.Millisecond)
	require.NoError(t, err)
	assert.EqualValues(t, 2, st.calls.Load(), "stepper not offered work after events")
}

func TestLoopNoStepWhileContended(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		lock := gvl.New()
		lock.Acquire()
		st := &stepper{}
		l := newLoop(t, poller.WithBackend(b), poller.WithGVL(lock), poller.WithStepper(st))
		waited := make(chan int64, 1)
		go func() {
			lock.Acquire()
			waited <- st.calls.Load()
			lock.Release()
		}()
		eventually(t, "the waiter to queue", lock.Contended)
		_, err := l.RunOnce(20 * time.Millisecond)
		require.NoError(t, err)
		select {
		case steps := <-waited:
			assert.Zero(t, steps)
		case <-time.After(5 * time.Second):
			t.Fatal("the waiter never got the lock")
		}
		lock.Release()
		assert.Zero(t, st.calls.Load())
	})
}

func TestLoopStepsWhileIdle(t *testing.T) {
	lock := gvl.New()
	lock.Acquire()
	defer lock.Release()
	st := &stepper{more: func(n int64) bool { return n < 5 }}
	l := newLoop(t, poller.WithGVL(lock), poller.WithStepper(st))
	_, err := l.RunOnce(50 * time.Millisecond)
	require.NoError(t, err)
	assert.EqualValues(t, 5, st.calls.Load())
	s := l.Stats()
	assert.EqualValues(t, 5, s.Steps)
	assert.EqualValues(t, 6, s.ZeroPolls, "one poll first, one after every step")
	assert.EqualValues(t, 1, s.BlockingPolls)
}

func TestLoopHighFD(t *testing.T) {
	// An fd at FD_SETSIZE or above: epoll and poll watch it, select refuses
	// it with an error naming it, before any system call touches an fd_set.
	p := newPipe(t)
	high, err := unix.FcntlInt(uintptr(p.r), unix.F_DUPFD_CLOEXEC, unix.FD_SETSIZE+100)
	if err != nil {
		t.Skipf("cannot dup above FD_SETSIZE (RLIMIT_NOFILE too low?): %v", err)
	}
	defer unix.Close(high)
	p.write(p.w, "x")
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		l := newLoop(t, poller.WithBackend(b))
		calls := 0
		err := l.Add(high, poller.Read, func(int, poller.Events) { calls++ })
		if b == poller.BackendSelect {
			require.ErrorIs(t, err, poller.ErrFDRange)
			assert.Contains(t, err.Error(), itoa(high))
			return
		}
		require.NoError(t, err)
		n, err := l.RunOnce(5 * time.Second)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, 1, calls)

		m := poller.New(poller.WithBackend(b))
		ev, err := m.WaitFD(high, poller.Read, 5*time.Second)
		require.NoError(t, err)
		assert.Equal(t, poller.Read, ev)
	})
}
