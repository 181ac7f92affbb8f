package poller

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// withSys swaps the system-call table for the rest of the test. Tests that
// use it must not run in parallel with any other.
func withSys(t *testing.T, change func(s *sysTable)) {
	saved := sys
	change(&sys)
	sys.swapped = true
	t.Cleanup(func() { sys = saved })
}

func testPipe(t *testing.T) (r, w int) {
	var p [2]int
	require.NoError(t, unix.Pipe(p[:]))
	t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	return p[0], p[1]
}

func TestFaultWaitAlwaysEINTR(t *testing.T) {
	// A storm that interrupts every wait: the call still ends at its
	// deadline, reporting a timeout, instead of waiting forever.
	r, _ := testPipe(t)
	withSys(t, func(s *sysTable) {
		s.poll = func([]unix.PollFd, time.Duration) (int, error) { return 0, unix.EINTR }
	})
	m := New(WithBackend(BackendPoll))
	start := time.Now()
	got, err := m.WaitFD(r, Read, 20*time.Millisecond)
	require.NoError(t, err)
	assert.Zero(t, got)
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	assert.NotZero(t, m.Stats().Restarts)
}

func TestFaultEINTRThenReady(t *testing.T) {
	r, w := testPipe(t)
	_, err := unix.Write(w, []byte("x"))
	require.NoError(t, err)
	calls := 0
	real := sys.poll
	withSys(t, func(s *sysTable) {
		s.poll = func(fds []unix.PollFd, d time.Duration) (int, error) {
			calls++
			if calls <= 3 {
				return 0, unix.EINTR
			}
			return real(fds, d)
		}
	})
	m := New(WithBackend(BackendPoll))
	got, err := m.WaitFD(r, Read, time.Second)
	require.NoError(t, err)
	assert.Equal(t, Read, got)
	assert.EqualValues(t, 3, m.Stats().Restarts)
	assert.EqualValues(t, 4, m.Stats().Syscalls)
}

func TestFaultRemainingTimeShrinks(t *testing.T) {
	// After each EINTR the wait gets what is left, never the whole timeout
	// again.
	var timeouts []time.Duration
	withSys(t, func(s *sysTable) {
		s.poll = func(_ []unix.PollFd, d time.Duration) (int, error) {
			timeouts = append(timeouts, d)
			if len(timeouts) < 4 {
				time.Sleep(5 * time.Millisecond)
				return 0, unix.EINTR
			}
			return 1, nil
		}
	})
	r, _ := testPipe(t)
	m := New(WithBackend(BackendPoll))
	_, err := m.WaitFD(r, Read, time.Second)
	require.NoError(t, err)
	require.Len(t, timeouts, 4)
	assert.Equal(t, time.Second, timeouts[0])
	for i := 1; i < len(timeouts); i++ {
		assert.Less(t, timeouts[i], timeouts[i-1], "timeouts %v", timeouts)
	}
}

func TestFaultSpuriousAndEAGAIN(t *testing.T) {
	for _, fault := range []error{nil, unix.EAGAIN} {
		withSys(t, func(s *sysTable) {
			s.poll = func(_ []unix.PollFd, d time.Duration) (int, error) {
				time.Sleep(min(d, 2*time.Millisecond))
				return 0, fault
			}
		})
		r, _ := testPipe(t)
		m := New(WithBackend(BackendPoll))
		start := time.Now()
		got, err := m.WaitFD(r, Read, 20*time.Millisecond)
		require.NoError(t, err, "fault %v", fault)
		assert.Zero(t, got)
		assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond, "fault %v", fault)
		assert.NotZero(t, m.Stats().Spurious)
	}
}

func TestFaultEAGAINForeverBacksOff(t *testing.T) {
	// A fault that never clears, every wait failing at once with EAGAIN:
	// without a backoff the call spun on a core, making a system call
	// about every 100 ns until its deadline. With one it makes a handful.
	var calls int
	withSys(t, func(s *sysTable) {
		s.poll = func([]unix.PollFd, time.Duration) (int, error) {
			calls++
			return 0, unix.EAGAIN
		}
	})
	r, _ := testPipe(t)
	m := New(WithBackend(BackendPoll))
	got, err := m.WaitFD(r, Read, 50*time.Millisecond)
	require.NoError(t, err)
	assert.Zero(t, got)
	// 0, 50 µs, 100 µs, ... 10 ms: about a dozen pauses fill 50 ms; a
	// slower machine makes fewer calls, never more.
	assert.Less(t, calls, 40, "wait calls in 50 ms of EAGAIN")
	assert.Greater(t, calls, 1)
}

func TestFaultWaitError(t *testing.T) {
	withSys(t, func(s *sysTable) {
		s.poll = func([]unix.PollFd, time.Duration) (int, error) { return 0, unix.ENOMEM }
		s.sel = func(int, *unix.FdSet, *unix.FdSet, *unix.FdSet, time.Duration) (int, error) {
			return 0, unix.ENOMEM
		}
	})
	r, _ := testPipe(t)
	for _, b := range []Backend{BackendPoll, BackendSelect} {
		m := New(WithBackend(b))
		_, err := m.WaitFD(r, Read, time.Second)
		require.ErrorIs(t, err, unix.ENOMEM)
		var se *os.SyscallError
		assert.True(t, errors.As(err, &se), "%v is not wrapped", err)

		l, err := NewLoop(WithBackend(b))
		require.NoError(t, err)
		_, err = l.RunOnce(time.Second)
		require.ErrorIs(t, err, unix.ENOMEM)
		assert.True(t, errors.As(err, &se), "%v is not wrapped", err)
		require.NoError(t, l.Close())
	}
}

func TestFaultCloseEINTRNotRetried(t *testing.T) {
	calls := 0
	withSys(t, func(s *sysTable) {
		s.close = func(int) error { calls++; return unix.EINTR }
	})
	var c counters
	assert.NoError(t, c.close(1000))
	assert.Equal(t, 1, calls)
}

func TestFaultWakeEAGAIN(t *testing.T) {
	// A full wake fd is "already woken", not an error.
	l, err := NewLoop()
	require.NoError(t, err)
	defer l.Close()
	real := sys.write
	withSys(t, func(s *sysTable) {
		s.write = func(fd int, p []byte) (int, error) {
			if fd == l.wake.wfd {
				return 0, unix.EAGAIN
			}
			return real(fd, p)
		}
	})
	l.Wake()
	_, err = l.RunOnce(10 * time.Millisecond)
	require.NoError(t, err)
}

func TestIdleOrder(t *testing.T) {
	// Poll first or step first, and what a wait with steps looks like.
	for _, stepFirst := range []bool{false, true} {
		var trace []string
		c := &counters{}
		d := idler{
			stepper: stepFunc(func(time.Duration) bool { trace = append(trace, "step"); return len(trace) < 4 }),
			budget:  time.Millisecond,
			c:       c,
		}
		poll := func(t time.Duration) (int, error) {
			if t == 0 {
				trace = append(trace, "poll0")
			} else {
				trace = append(trace, "block")
				time.Sleep(t)
			}
			return 0, nil
		}
		n, err := d.wait(20*time.Millisecond, stepFirst, false, new(true), poll)
		require.NoError(t, err)
		assert.Zero(t, n)
		// The stepper has work for its first calls until the trace
		// holds four entries.
		if stepFirst {
			assert.Equal(t, []string{"step", "poll0", "step", "poll0", "step", "poll0", "block"}, trace)
		} else {
			assert.Equal(t, []string{"poll0", "step", "poll0", "step", "poll0", "block"}, trace)
		}
	}
}

type stepFunc func(time.Duration) bool

func (f stepFunc) Step(d time.Duration) bool { return f(d) }

func TestFaultLoopSpuriousWakeups(t *testing.T) {
	// Waits that return early with nothing, or with EINTR, every other
	// call: the Loop neither returns before its timeout nor loses the byte
	// written meanwhile.
	for _, b := range Backends() {
		t.Run(b.String(), func(t *testing.T) {
			calls := 0
			fault := func() error {
				calls++
				switch calls % 3 {
				case 1:
					return unix.EINTR
				case 2:
					return errSpurious
				}
				return nil
			}
			faultWaits(t, fault)
			r, w := testPipe(t)
			l, err := NewLoop(WithBackend(b))
			require.NoError(t, err)
			defer l.Close()
			got := 0
			require.NoError(t, l.Add(r, Read, func(fd int, _ Events) {
				var buf [8]byte
				n, _ := unix.Read(fd, buf[:])
				got += n
			}))
			start := time.Now()
			n, err := l.RunOnce(20 * time.Millisecond)
			require.NoError(t, err)
			assert.Zero(t, n)
			assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)

			_, err = unix.Write(w, []byte("x"))
			require.NoError(t, err)
			for i := 0; i < 10 && got == 0; i++ {
				_, err = l.RunOnce(time.Second)
				require.NoError(t, err)
			}
			assert.Equal(t, 1, got)
			s := l.Stats()
			assert.NotZero(t, s.Restarts)
			assert.NotZero(t, s.Spurious)
		})
	}
}

// errSpurious asks spurious for an early return with nothing ready.
var errSpurious = errors.New("spurious")

func spurious(err error) (int, error) {
	if err == errSpurious {
		return 0, nil
	}
	return 0, err
}

func TestFaultWakeWriteFails(t *testing.T) {
	// A Wake whose write fails must not leave the pending flag set, or no
	// later Wake would ever write again.
	l, err := NewLoop()
	require.NoError(t, err)
	defer l.Close()
	real := sys.write
	fail := true
	withSys(t, func(s *sysTable) {
		s.write = func(fd int, p []byte) (int, error) {
			if fd == l.wake.wfd && fail {
				return 0, unix.ENOMEM
			}
			return real(fd, p)
		}
	})
	l.Wake()
	fail = false
	l.Wake()
	start := time.Now()
	_, err = l.RunOnce(5 * time.Second)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), time.Second, "the second Wake did not wake the loop")
	assert.EqualValues(t, 1, l.Stats().Wakeups)
}
