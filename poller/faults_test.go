package poller

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gvl"
)

// The fault matrix: every wait the package makes (Mux.WaitFD on each
// backend, Mux.Poll, Mux.Select, Loop.RunOnce on each backend) under each
// fault a kernel or a signal can produce, transient as real faults are. A
// fault that goes on forever makes any retrying caller spin; what a caller
// must never do is spin on a fault that has passed, lose the event that
// arrives meanwhile, or leak an fd or a goroutine.
//
// sys_test.go and signal_linux_test.go cover single cases (a wait that is
// always interrupted, the remaining time shrinking, a failing Wake); this
// file crosses them all.

// A waitFault is a pattern of failures of the wait calls: call n (from 1)
// fails with err if hit(n). errSpurious is a return with nothing ready.
type waitFault struct {
	name string
	err  error
	hit  func(n int) bool
}

func first3(n int) bool    { return n <= 3 }
func alternate(n int) bool { return n%2 == 1 }

var retriedFaults = []waitFault{
	{"EINTR/first3", unix.EINTR, first3},
	{"EINTR/alternate", unix.EINTR, alternate},
	{"EAGAIN/first3", unix.EAGAIN, first3},
	{"EAGAIN/alternate", unix.EAGAIN, alternate},
	{"spurious/first3", errSpurious, first3},
	{"spurious/alternate", errSpurious, alternate},
}

// waitCalls counts the wait system calls made under a fault.
type waitCalls struct {
	mu sync.Mutex
	n  int
}

func (c *waitCalls) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// injectWaits makes every wait call (poll, select, epoll_wait) follow f,
// and returns their count.
func injectWaits(t *testing.T, f waitFault) *waitCalls {
	calls := &waitCalls{}
	fault := func() error {
		calls.mu.Lock()
		defer calls.mu.Unlock()
		calls.n++
		if f.hit(calls.n) {
			return f.err
		}
		return nil
	}
	faultWaits(t, fault)
	return calls
}

// faultWaits makes every wait of the system-call table (poll, select and,
// where there is one, epoll) call fault first and fail with what it
// returns; errSpurious stands for an early return with nothing ready.
func faultWaits(t *testing.T, fault func() error) {
	real := sys
	withSys(t, func(s *sysTable) {
		s.poll = func(fds []unix.PollFd, d time.Duration) (int, error) {
			if err := fault(); err != nil {
				return spurious(err)
			}
			return real.poll(fds, d)
		}
		s.sel = func(n int, r, w, e *unix.FdSet, d time.Duration) (int, error) {
			if err := fault(); err != nil {
				return spurious(err)
			}
			return real.sel(n, r, w, e, d)
		}
		faultEpoll(s, &real, fault)
	})
}

// A waitTarget is one waiting call of the package, made ready by a byte
// in r: wait waits up to timeout and reports whether it saw r readable.
type waitTarget struct {
	name string
	// open prepares a wait on r and returns it with a cleanup.
	open func(t *testing.T, r int) (wait func(timeout time.Duration) (bool, error), stats func() Stats, done func())
}

func waitTargets() []waitTarget {
	ts := muxTargets(false)
	// The same waits by a goroutine holding a lock: their blocking waits
	// park in the netpoller where there is one (park_linux.go).
	ts = append(ts, muxTargets(true)...)
	for _, b := range Backends() {
		ts = append(ts, loopTarget(b, false))
		if b == BackendEpoll {
			// Its blocking waits park in the netpoller; on their
			// thread too, as where parking is not possible.
			ts = append(ts, loopTarget(b, true))
		}
	}
	return ts
}

// loopTarget is a Loop's RunOnce on backend b, its blocking waits made on
// their thread if onThread.
func loopTarget(b Backend, onThread bool) waitTarget {
	name := "Loop/" + b.String()
	if onThread {
		name += "/thread"
	}
	return waitTarget{name, func(t *testing.T, r int) (func(time.Duration) (bool, error), func() Stats, func()) {
		l, err := NewLoop(WithBackend(b), WithNetpoller(!onThread))
		require.NoError(t, err)
		got := false
		require.NoError(t, l.Add(r, Read, func(fd int, ev Events) {
			var buf [16]byte
			if n, _ := unix.Read(fd, buf[:]); n > 0 {
				got = true
			}
		}))
		return func(d time.Duration) (bool, error) {
			got = false
			_, err := l.RunOnce(d)
			return got, err
		}, l.Stats, func() { require.NoError(t, l.Close()) }
	}}
}

// muxTargets returns the Mux's waits, made by a goroutine holding a
// gvl.Lock if locked.
func muxTargets(locked bool) []waitTarget {
	suffix := ""
	if locked {
		suffix = "/gvl"
	}
	newMux := func(opts ...Option) (*Mux, func()) {
		if !locked {
			return New(opts...), func() {}
		}
		l := gvl.New()
		l.Acquire()
		return New(append(opts, WithGVL(l))...), func() {
			l.Release()
			closeIdleParkers() // for the fd count
		}
	}
	var ts []waitTarget
	for _, b := range Backends() {
		ts = append(ts, waitTarget{"WaitFD/" + b.String() + suffix, func(t *testing.T, r int) (func(time.Duration) (bool, error), func() Stats, func()) {
			m, done := newMux(WithBackend(b))
			return func(d time.Duration) (bool, error) {
				ev, err := m.WaitFD(r, Read, d)
				return ev&Read != 0, err
			}, m.Stats, done
		}})
	}
	ts = append(ts,
		waitTarget{"Poll" + suffix, func(t *testing.T, r int) (func(time.Duration) (bool, error), func() Stats, func()) {
			m, done := newMux()
			return func(d time.Duration) (bool, error) {
				fds := []unix.PollFd{{Fd: int32(r), Events: unix.POLLIN}}
				n, err := m.Poll(fds, d)
				return n == 1 && fds[0].Revents&unix.POLLIN != 0, err
			}, m.Stats, done
		}},
		waitTarget{"Select" + suffix, func(t *testing.T, r int) (func(time.Duration) (bool, error), func() Stats, func()) {
			m, done := newMux()
			return func(d time.Duration) (bool, error) {
				rr, _, _, err := m.Select([]int{r}, nil, nil, d)
				return len(rr) == 1, err
			}, m.Stats, done
		}},
	)
	return ts
}

// maxWaits bounds the wait calls of one bounded wait under a transient
// fault: the three failures, the real wait, and as many again for a
// restart or a Loop's wake. Anything near the thousands is a spin.
const maxWaits = 10

func TestFaultMatrixRetried(t *testing.T) {
	// Faults the waits absorb: a timeout is still honoured, a byte that
	// comes during the faults is still reported, and the number of wait
	// calls stays bounded.
	const timeout = 30 * time.Millisecond
	for _, f := range retriedFaults {
		for _, target := range waitTargets() {
			t.Run(f.name+"/"+target.name, func(t *testing.T) {
				fdsBefore := openFDs(t)
				var p [2]int
				require.NoError(t, unix.Pipe(p[:]))

				calls := injectWaits(t, f)
				wait, stats, done := target.open(t, p[0])
				start := time.Now()
				got, err := wait(timeout)
				elapsed := time.Since(start)
				require.NoError(t, err)
				assert.False(t, got, "ready with nothing written")
				assert.GreaterOrEqual(t, elapsed, timeout, "returned before the timeout")
				assert.Less(t, elapsed, timeout+time.Second)
				assert.LessOrEqual(t, calls.count(), maxWaits, "waits for one timeout: a spin")

				// A byte written while the faults go on is not lost.
				calls.mu.Lock()
				calls.n = 0
				calls.mu.Unlock()
				var wg sync.WaitGroup
				wg.Go(func() {
					time.Sleep(5 * time.Millisecond)
					unix.Write(p[1], []byte("x"))
				})
				start = time.Now()
				got, err = wait(5 * time.Second)
				wg.Wait()
				require.NoError(t, err)
				assert.True(t, got, "the byte was lost")
				assert.Less(t, time.Since(start), 5*time.Second)
				assert.LessOrEqual(t, calls.count(), maxWaits, "waits for one event: a spin")
				s := stats()
				assert.NotZero(t, s.Restarts+s.Spurious, "no fault seen")

				done()
				unix.Close(p[0])
				unix.Close(p[1])
				assert.Equal(t, fdsBefore, openFDs(t), "fds leaked")
				goleak.VerifyNone(t)
			})
		}
	}
}

func TestFaultMatrixReturned(t *testing.T) {
	// Faults a wait cannot absorb: the first wait fails with the errno,
	// wrapped, after a single call, and the next wait works and reports
	// the byte written meanwhile. EBADF from select(2) is the exception:
	// it means "a closed fd", and with none closed the wait starts again.
	for _, errno := range []unix.Errno{unix.ENOMEM, unix.EBADF, unix.EINVAL, unix.EFAULT} {
		for _, target := range waitTargets() {
			t.Run(errno.Error()+"/"+target.name, func(t *testing.T) {
				fdsBefore := openFDs(t)
				var p [2]int
				require.NoError(t, unix.Pipe(p[:]))

				calls := injectWaits(t, waitFault{errno.Error(), errno, func(n int) bool { return n == 1 }})
				wait, _, done := target.open(t, p[0])
				_, err := unix.Write(p[1], []byte("x"))
				require.NoError(t, err)
				got, err := wait(5 * time.Second)
				switch {
				case strings.HasPrefix(target.name, "WaitFD/select") && errno == unix.EBADF:
					// WaitFD's select reports EBADF as a closed fd.
					require.NoError(t, err)
				case target.name == "Loop/select" && errno == unix.EBADF:
					require.NoError(t, err)
					assert.True(t, got, "the byte was lost")
				default:
					require.ErrorIs(t, err, errno)
					var se *os.SyscallError
					assert.True(t, errors.As(err, &se), "%v is not wrapped", err)
					assert.Equal(t, 1, calls.count(), "an error was retried")
					got, err = wait(5 * time.Second)
					require.NoError(t, err)
					assert.True(t, got, "the byte was lost after the error")
				}
				done()
				unix.Close(p[0])
				unix.Close(p[1])
				assert.Equal(t, fdsBefore, openFDs(t), "fds leaked")
			})
		}
	}
}

func TestFaultWakeCalls(t *testing.T) {
	// Faults on the wake fd's read and write: a Wake still wakes the loop,
	// a drain that failed leaves at most one spurious wakeup behind (the
	// loop does not spin), and Close releases every fd.
	type ioFault struct {
		name  string
		write bool // fault the write (Wake) or the read (drain)
		err   error
		short bool // a short read: one byte asked for, as a short read leaves the rest
	}
	for _, f := range []ioFault{
		{"write/EINTR", true, unix.EINTR, false},
		{"read/EINTR", false, unix.EINTR, false},
		{"read/EAGAIN", false, unix.EAGAIN, false},
		{"read/ENOMEM", false, unix.ENOMEM, false},
		{"read/short", false, nil, true},
	} {
		for _, b := range Backends() {
			t.Run(f.name+"/"+b.String(), func(t *testing.T) {
				fdsBefore := openFDs(t)
				l, err := NewLoop(WithBackend(b))
				require.NoError(t, err)
				wake := l.wake.rfd
				if f.write {
					wake = l.wake.wfd
				}
				calls := 0
				real := sys
				withSys(t, func(s *sysTable) {
					s.write = func(fd int, p []byte) (int, error) {
						if fd == wake && f.write && calls < 3 {
							calls++
							return 0, f.err
						}
						return real.write(fd, p)
					}
					s.read = func(fd int, p []byte) (int, error) {
						if fd == wake && !f.write && calls < 1 {
							calls++
							if f.short {
								return real.read(fd, p[:1])
							}
							return 0, f.err
						}
						return real.read(fd, p)
					}
				})
				start := time.Now()
				l.Wake()
				_, err = l.RunOnce(5 * time.Second)
				require.NoError(t, err)
				assert.Less(t, time.Since(start), time.Second, "Wake did not wake the loop")

				// At most one spurious wakeup from an undrained fd, then
				// an honest timeout: no spin.
				const timeout = 20 * time.Millisecond
				waits := 0
				for {
					waits++
					start := time.Now()
					_, err = l.RunOnce(timeout)
					require.NoError(t, err)
					if time.Since(start) >= timeout {
						break
					}
					require.Less(t, waits, 3, "the loop keeps waking: a spin")
				}
				// And Wake works again.
				start = time.Now()
				l.Wake()
				_, err = l.RunOnce(5 * time.Second)
				require.NoError(t, err)
				assert.Less(t, time.Since(start), time.Second, "Wake did not wake the loop after the fault")
				require.NoError(t, l.Close())
				assert.Equal(t, fdsBefore, openFDs(t), "fds leaked")
			})
		}
	}
}

func TestFaultLoopCloseEINTR(t *testing.T) {
	// close(2) interrupted: each of the loop's fds is closed once, never
	// retried (the number may already be somebody else's), and Close
	// reports success.
	for _, b := range Backends() {
		t.Run(b.String(), func(t *testing.T) {
			fdsBefore := openFDs(t)
			l, err := NewLoop(WithBackend(b))
			require.NoError(t, err)
			closed := map[int]int{}
			real := sys.close
			withSys(t, func(s *sysTable) {
				s.close = func(fd int) error {
					closed[fd]++
					real(fd)
					return unix.EINTR
				}
			})
			require.NoError(t, l.Close())
			for fd, n := range closed {
				assert.Equal(t, 1, n, "fd %d closed %d times", fd, n)
			}
			assert.NotEmpty(t, closed)
			assert.Equal(t, fdsBefore, openFDs(t), "fds leaked")
		})
	}
}

func TestFaultAddFDFlags(t *testing.T) {
	// poll and select check an fd is open with fcntl before watching it:
	// EBADF there is Add's error, and nothing is registered.
	r, w := testPipe(t)
	for _, b := range []Backend{BackendPoll, BackendSelect} {
		t.Run(b.String(), func(t *testing.T) {
			l, err := NewLoop(WithBackend(b))
			require.NoError(t, err)
			defer l.Close()
			fail := true
			real := sys.fdFlags
			withSys(t, func(s *sysTable) {
				s.fdFlags = func(fd int) (int, error) {
					if fail {
						return 0, unix.EBADF
					}
					return real(fd)
				}
			})
			err = l.Add(r, Read, func(int, Events) {})
			require.ErrorIs(t, err, unix.EBADF)
			fail = false
			got := 0
			require.NoError(t, l.Add(r, Read, func(fd int, _ Events) {
				var buf [8]byte
				n, _ := unix.Read(fd, buf[:])
				got += n
			}))
			_, err = unix.Write(w, []byte("x"))
			require.NoError(t, err)
			_, err = l.RunOnce(5 * time.Second)
			require.NoError(t, err)
			assert.Equal(t, 1, got)
		})
	}
}

// openFDs counts this process's open fds, or skips where the system does
// not list them.
func openFDs(t *testing.T) int {
	t.Helper()
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		if ents, err := os.ReadDir(dir); err == nil {
			return len(ents)
		}
	}
	t.Skip("no /proc/self/fd or /dev/fd to count open fds")
	return 0
}
