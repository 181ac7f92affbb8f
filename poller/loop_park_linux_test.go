package poller_test

import (
	"os"
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

// A Loop on epoll parks its blocking waits in Go's netpoller
// (park_linux.go); WithNetpoller(false) keeps them on its thread, as where
// parking is not possible. These tests hold both to one contract.

// loopWaits runs f on an epoll Loop that parks and on one that waits on
// its thread.
func loopWaits(t *testing.T, f func(t *testing.T, l *poller.Loop), opts ...poller.Option) {
	for _, onThread := range []bool{false, true} {
		name := "parked"
		if onThread {
			name = "thread"
		}
		t.Run(name, func(t *testing.T) {
			l := newLoop(t, append([]poller.Option{poller.WithBackend(poller.BackendEpoll), poller.WithNetpoller(!onThread)}, opts...)...)
			f(t, l)
			if onThread {
				assert.Zero(t, l.Stats().Parked, "a wait on the thread counted as parked")
			}
		})
	}
}

// goroutineWaiting reports whether a goroutine's stack holds fn in state
// (a prefix of the state in its header, such as "IO wait" or "syscall").
func goroutineWaiting(fn, state string) bool {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, fn) && strings.Contains(g, "["+state) {
			return true
		}
	}
	return false
}

func TestLoopParkedWaitBlocksNoThread(t *testing.T) {
	// The loop goroutine waits parked in the netpoller ("IO wait"), as a
	// goroutine reading an os.File does, not blocked in epoll_wait; and
	// the fd that becomes ready wakes it.
	p := newPipe(t)
	l := newLoop(t, poller.WithBackend(poller.BackendEpoll), poller.WithNetpoller(true))
	got := make(chan poller.Events, 1)
	require.NoError(t, l.Add(p.r, poller.Read, func(fd int, ev poller.Events) {
		drain(fd)
		got <- ev
	}))
	done := make(chan error, 1)
	go func() {
		_, err := l.RunOnce(-1)
		done <- err
	}()
	eventually(t, "the wait to park in the netpoller", func() bool {
		return goroutineWaiting("poller.(*loopParker).wait", "IO wait")
	})
	p.write(p.w, "x")
	require.NoError(t, <-done)
	assert.Equal(t, poller.Read, <-got)
	s := l.Stats()
	assert.EqualValues(t, 1, s.Parked)
	assert.EqualValues(t, 1, s.BlockingPolls)
}

func TestLoopThreadWaitBlocksItsThread(t *testing.T) {
	// The other half of the test above: a Loop told to wait on its thread
	// is blocked in the system call, so that test sees the difference.
	l := newLoop(t, poller.WithBackend(poller.BackendEpoll), poller.WithNetpoller(false))
	done := make(chan error, 1)
	go func() {
		_, err := l.RunOnce(-1)
		done <- err
	}()
	eventually(t, "the wait to block in epoll_wait", func() bool {
		return goroutineWaiting("poller.(*epollBackend).wait", "syscall")
	})
	assert.False(t, goroutineWaiting("poller.(*loopParker).wait", "IO wait"))
	l.Wake()
	require.NoError(t, <-done)
	assert.Zero(t, l.Stats().Parked)
}

func TestLoopWaitContract(t *testing.T) {
	// What a blocking wait promises, parked or on its thread: a timeout
	// honoured, readiness before and during the wait reported, Wake, a
	// timer set from another goroutine during the wait, an fd added
	// during it, and Close.
	t.Run("timeout", func(t *testing.T) {
		loopWaits(t, func(t *testing.T, l *poller.Loop) {
			p := newPipe(t)
			require.NoError(t, l.Add(p.r, poller.Read, func(int, poller.Events) { t.Error("handler called") }))
			for _, d := range []time.Duration{time.Nanosecond, time.Millisecond, 30 * time.Millisecond} {
				start := time.Now()
				n, err := l.RunOnce(d)
				elapsed := time.Since(start)
				require.NoError(t, err)
				assert.Zero(t, n)
				assert.GreaterOrEqual(t, elapsed, d)
				assert.Less(t, elapsed, d+slack)
			}
		})
	})
	t.Run("ready before, tiny timeouts", func(t *testing.T) {
		// A deadline that passes before the wait parks still looks.
		loopWaits(t, func(t *testing.T, l *poller.Loop) {
			p := newPipe(t)
			p.write(p.w, "x") // never read: stays ready
			calls := 0
			require.NoError(t, l.Add(p.r, poller.Read, func(int, poller.Events) { calls++ }))
			for i := range 100 {
				n, err := l.RunOnce(time.Duration(i%3) * time.Nanosecond)
				require.NoError(t, err)
				require.Equal(t, 1, n)
			}
			assert.Equal(t, 100, calls)
		})
	})
	t.Run("ready during", func(t *testing.T) {
		loopWaits(t, func(t *testing.T, l *poller.Loop) {
			p := newPipe(t)
			got := 0
			require.NoError(t, l.Add(p.r, poller.Read, func(fd int, _ poller.Events) { got += readAll(fd) }))
			for range 20 {
				timer := time.AfterFunc(time.Millisecond, func() { p.write(p.w, "x") })
				n, err := l.RunOnce(5 * time.Second)
				timer.Stop()
				require.NoError(t, err)
				require.Equal(t, 1, n)
			}
			assert.Equal(t, 20, got)
		})
	})
	t.Run("after a timeout", func(t *testing.T) {
		// A wait that timed out leaves its deadline behind, passed: the
		// waits after it, with a later deadline or none, still wait.
		loopWaits(t, func(t *testing.T, l *poller.Loop) {
			p := newPipe(t)
			got := 0
			require.NoError(t, l.Add(p.r, poller.Read, func(fd int, _ poller.Events) { got += readAll(fd) }))
			for _, d := range []time.Duration{-1, 5 * time.Second} {
				n, err := l.RunOnce(time.Millisecond)
				require.NoError(t, err)
				require.Zero(t, n)
				time.Sleep(2 * time.Millisecond)
				before := l.Stats()
				timer := time.AfterFunc(5*time.Millisecond, func() { p.write(p.w, "x") })
				n, err = l.RunOnce(d)
				timer.Stop()
				require.NoError(t, err)
				require.Equal(t, 1, n)
				after := l.Stats()
				assert.Zero(t, after.Spurious-before.Spurious, "the wait after a timeout returned early")
				assert.EqualValues(t, 1, after.BlockingPolls-before.BlockingPolls)
			}
			assert.Equal(t, 2, got)
		})
	})
	t.Run("wake", func(t *testing.T) {
		loopWaits(t, func(t *testing.T, l *poller.Loop) {
			for range 20 {
				timer := time.AfterFunc(time.Millisecond, l.Wake)
				start := time.Now()
				_, err := l.RunOnce(5 * time.Second)
				timer.Stop()
				require.NoError(t, err)
				require.Less(t, time.Since(start), time.Second, "Wake did not wake the wait")
			}
		})
	})
	t.Run("timer from another goroutine", func(t *testing.T) {
		loopWaits(t, func(t *testing.T, l *poller.Loop) {
			fired := make(chan struct{})
			time.AfterFunc(2*time.Millisecond, func() {
				l.AfterFunc(time.Millisecond, func() { close(fired) })
			})
			start := time.Now()
			for {
				_, err := l.RunOnce(5 * time.Second)
				require.NoError(t, err)
				select {
				case <-fired:
					assert.Less(t, time.Since(start), time.Second)
					return
				default:
				}
				require.Less(t, time.Since(start), 5*time.Second, "the timer never fired")
			}
		})
	})
	t.Run("fd added during", func(t *testing.T) {
		loopWaits(t, func(t *testing.T, l *poller.Loop) {
			p := newPipe(t)
			p.write(p.w, "x")
			called := false
			time.AfterFunc(2*time.Millisecond, func() {
				assert.NoError(t, l.Add(p.r, poller.Read, func(int, poller.Events) { called = true }))
			})
			_, err := l.RunOnce(5 * time.Second)
			require.NoError(t, err)
			assert.True(t, called, "the fd added during the wait was not reported by it")
		})
	})
	t.Run("close during", func(t *testing.T) {
		loopWaits(t, func(t *testing.T, l *poller.Loop) {
			time.AfterFunc(2*time.Millisecond, func() { assert.NoError(t, l.Close()) })
			_, err := l.RunOnce(5 * time.Second)
			require.ErrorIs(t, err, poller.ErrClosed)
		})
	})
	t.Run("with a lock", func(t *testing.T) {
		// The wait releases the lock while parked, and holds it again
		// on return.
		lock := gvl.New()
		loopWaits(t, func(t *testing.T, l *poller.Loop) {
			lock.Acquire()
			defer lock.Release()
			took := make(chan struct{})
			go func() {
				lock.Acquire()
				close(took)
				lock.Release()
				l.Wake()
			}()
			_, err := l.RunOnce(5 * time.Second)
			require.NoError(t, err)
			select {
			case <-took:
			default:
				t.Fatal("the lock was not released during the wait")
			}
		}, poller.WithGVL(lock))
	})
}

func TestLoopParkedCloseFreesFDs(t *testing.T) {
	// The netpoller's duplicate of the epoll fd is closed with the loop,
	// whether it waited or not, and whether Close came during a wait.
	before := openFDs(t)
	for i := range 10 {
		l, err := poller.NewLoop(poller.WithBackend(poller.BackendEpoll), poller.WithNetpoller(true))
		require.NoError(t, err)
		if i%2 == 0 {
			time.AfterFunc(time.Millisecond, func() { l.Close() })
			_, err = l.RunOnce(5 * time.Second)
			require.ErrorIs(t, err, poller.ErrClosed)
			continue
		}
		_, err = l.RunOnce(time.Millisecond)
		require.NoError(t, err)
		require.NoError(t, l.Close())
	}
	assert.Equal(t, before, openFDs(t), "fds leaked")
}

func TestLoopParkedUnderSignals(t *testing.T) {
	// A signal storm aimed at the waiting goroutine's thread: a parked
	// wait is not in a system call to interrupt, and still honours its
	// timeout and reports an fd that becomes ready.
	const timeout = 100 * time.Millisecond
	p := newPipe(t)
	l := newLoop(t, poller.WithBackend(poller.BackendEpoll), poller.WithNetpoller(true))
	got := 0
	require.NoError(t, l.Add(p.r, poller.Read, func(fd int, _ poller.Events) { got += readAll(fd) }))
	runOnceTimesOut(t, l, timeout)

	var n int
	var err error
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(30 * time.Millisecond)
		p.write(p.w, "x")
	})
	underSignals(t, func() { n, err = l.RunOnce(5 * time.Second) })
	wg.Wait()
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, 1, got)
	assert.NotZero(t, l.Stats().Parked)
}

// readAll reads the nonblocking fd until it is empty and returns how many
// bytes it read.
func readAll(fd int) int {
	var buf [512]byte
	total := 0
	for {
		n, _ := unix.Read(fd, buf[:])
		if n <= 0 {
			return total
		}
		total += n
	}
}

// BenchmarkLoopHandoff bounces a byte between a goroutine and a Loop: the
// goroutine writes a pipe and reads the answer through os.File (Go's
// netpoller), the loop's handler answers. One op is a round trip, in which
// the loop blocks once and is woken by the goroutine: what the parked wait
// changes, against the wait on the loop's thread.
func BenchmarkLoopHandoff(b *testing.B) {
	for _, netpoller := range []bool{true, false} {
		name := "netpoller"
		if !netpoller {
			name = "thread"
		}
		b.Run(name, func(b *testing.B) {
			ping, pong := newPipe(b), newPipe(b)
			l, err := poller.NewLoop(poller.WithBackend(poller.BackendEpoll), poller.WithNetpoller(netpoller))
			require.NoError(b, err)
			defer l.Close()
			var buf [1]byte
			require.NoError(b, l.Add(ping.r, poller.Read, func(fd int, _ poller.Events) {
				if n, _ := unix.Read(fd, buf[:]); n == 1 {
					unix.Write(pong.w, buf[:])
				}
			}))
			// The goroutine's ends, in the netpoller (they are nonblocking).
			pingW := os.NewFile(uintptr(ping.w), "ping")
			pongR := os.NewFile(uintptr(pong.r), "pong")
			ping.w, pong.r = -1, -1 // closed through the files
			defer pingW.Close()
			defer pongR.Close()
			done := make(chan struct{})
			go func() {
				defer l.Wake()
				defer close(done)
				var b1 [1]byte
				for range b.N {
					if _, err := pingW.Write([]byte{'x'}); err != nil {
						return
					}
					if _, err := pongR.Read(b1[:]); err != nil {
						return
					}
				}
			}()
			before := l.Stats()
			b.ResetTimer()
			for {
				select {
				case <-done:
					b.StopTimer()
					after := l.Stats()
					b.ReportMetric(float64(after.Parked-before.Parked)/float64(b.N), "parked/op")
					b.ReportMetric(float64(after.Syscalls-before.Syscalls)/float64(b.N), "loop-syscalls/op")
					return
				default:
				}
				if _, err := l.RunOnce(-1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
