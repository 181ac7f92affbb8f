package poller_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/poller"
)

// rlimitEnv names the case a re-executed test binary runs with a lowered
// RLIMIT_NOFILE (see TestRlimit); urandomEnv the demo binary it runs.
const (
	rlimitEnv  = "IDLEMUX_RLIMIT_CASE"
	urandomEnv = "IDLEMUX_RLIMIT_URANDOM"
)

// TestRlimit runs each case of TestRlimitChild in a child process (this
// test binary again) that lowers its own RLIMIT_NOFILE, so that this
// process keeps its fds: NewLoop and Add out of fds, a poll Loop watching
// more fds than the limit, and the urandom demo under a low limit must
// fail with a clear error, never a panic, and leak no fd.
func TestRlimit(t *testing.T) {
	cases := []string{"newloop", "add", "poll"}
	var demo string
	if !testing.Short() {
		if _, err := exec.LookPath("go"); err == nil {
			demo = filepath.Join(t.TempDir(), "urandom")
			out, err := exec.Command("go", "build", "-o", demo, "github.com/idlemux/idlemux/examples/urandom").CombinedOutput()
			require.NoError(t, err, "building the demo: %s", out)
			cases = append(cases, "urandom")
		} else {
			t.Log("no go command: the demo is not run")
		}
	}
	for _, c := range cases {
		t.Run(c, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestRlimitChild$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), rlimitEnv+"="+c, urandomEnv+"="+demo)
			out, err := cmd.CombinedOutput()
			assert.NotContains(t, string(out), "panic:")
			require.NoError(t, err, "child:\n%s", out)
			require.Contains(t, string(out), "--- PASS: TestRlimitChild", "child:\n%s", out)
			t.Logf("child:\n%s", out)
		})
	}
}

// lowerNOFILE sets the soft and hard RLIMIT_NOFILE to n. The hard limit
// too: a Go program raises its soft limit to the hard one at startup, so
// the demo would otherwise undo it.
func lowerNOFILE(t *testing.T, n uint64) {
	var lim unix.Rlimit
	setRlim(&lim.Cur, n)
	setRlim(&lim.Max, n)
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lim))
}

// setRlim sets a field of unix.Rlimit, uint64 on Linux and darwin, int64
// on freebsd.
func setRlim[T ~int64 | ~uint64](f *T, n uint64) { *f = T(n) }

// exhaust takes every free fd number and returns a function that frees k
// of them (and, called with a negative k, all).
func exhaust(t *testing.T) (free func(k int)) {
	var held []int
	for {
		fd, err := unix.Dup(0)
		if err != nil {
			require.ErrorIs(t, err, unix.EMFILE)
			break
		}
		held = append(held, fd)
	}
	free = func(k int) {
		if k < 0 || k > len(held) {
			k = len(held)
		}
		for _, fd := range held[len(held)-k:] {
			unix.Close(fd)
		}
		held = held[:len(held)-k]
	}
	t.Cleanup(func() { free(-1) })
	return free
}

func TestRlimitChild(t *testing.T) {
	c := os.Getenv(rlimitEnv)
	if c == "" {
		t.Skip("run by TestRlimit in a child process")
	}
	switch c {
	case "newloop":
		// With no fd free, one free (epoll needs two: the epoll fd and
		// the wake eventfd), and two free.
		lowerNOFILE(t, 64)
		for _, b := range poller.Backends() {
			for free := range 3 {
				p := newPipe(t)
				// Counted outside the exhaustion: reading the fd
				// directory takes an fd.
				before := openFDs(t)
				release := exhaust(t)
				release(free)
				l, err := poller.NewLoop(poller.WithBackend(b))
				if err != nil {
					t.Logf("%v with %d free fds: %v", b, free, err)
					require.ErrorIs(t, err, unix.EMFILE)
					var se *os.SyscallError
					require.True(t, errors.As(err, &se), "%v names no system call", err)
					release(-1)
					assert.Equal(t, before, openFDs(t), "%v: a failed NewLoop leaked an fd", b)
				} else {
					// One-shot calls and Wake need no fd, even now.
					free0 := exhaust(t)
					m := poller.New(poller.WithBackend(b))
					p.write(p.w, "x")
					ev, err := m.WaitFD(p.r, poller.Read, 5*time.Second)
					require.NoError(t, err)
					assert.Equal(t, poller.Read, ev)
					l.Wake()
					_, err = l.RunOnce(5 * time.Second)
					require.NoError(t, err)
					require.NoError(t, l.Close())
					free0(-1)
				}
				if free >= 2 {
					require.NoError(t, err, "%v: NewLoop with %d free fds", b, free)
				}
				release(-1)
				p.close(&p.r)
				p.close(&p.w)
			}
		}
	case "add":
		// Add needs no fd: a Loop made before the fds ran out still
		// watches more, and delivers their events.
		lowerNOFILE(t, 64)
		for _, b := range poller.Backends() {
			p := newPipe(t)
			l := newLoop(t, poller.WithBackend(b))
			release := exhaust(t)
			got := 0
			require.NoError(t, l.Add(p.r, poller.Read, func(fd int, _ poller.Events) {
				var buf [8]byte
				n, _ := unix.Read(fd, buf[:])
				got += n
			}))
			p.write(p.w, "x")
			_, err := l.RunOnce(5 * time.Second)
			require.NoError(t, err)
			assert.Equal(t, 1, got, "%v", b)
			release(-1)
		}
	case "poll":
		// ppoll(2) refuses more fds than RLIMIT_NOFILE with EINVAL: a
		// poll Loop that watches more, and Mux.Poll given more, fail
		// with that error, wrapped, instead of spinning or panicking.
		// epoll and select do not care.
		p := newPipe(t)
		var fds []int
		for range 40 {
			fd, err := unix.Dup(p.r)
			require.NoError(t, err)
			fds = append(fds, fd)
		}
		t.Cleanup(func() {
			for _, fd := range fds {
				unix.Close(fd)
			}
		})
		loops := map[poller.Backend]*poller.Loop{}
		for _, b := range poller.Backends() {
			l := newLoop(t, poller.WithBackend(b))
			for _, fd := range fds {
				require.NoError(t, l.Add(fd, poller.Read, func(int, poller.Events) {}))
			}
			loops[b] = l
		}
		lowerNOFILE(t, 32)
		for b, l := range loops {
			_, err := l.RunOnce(10 * time.Millisecond)
			if b == poller.BackendPoll {
				require.ErrorIs(t, err, unix.EINVAL, "%v", b)
				var se *os.SyscallError
				require.True(t, errors.As(err, &se), "%v names no system call", err)
				t.Logf("%v watching %d fds under a limit of 32: %v", b, len(fds)+1, err)
			} else {
				require.NoError(t, err, "%v", b)
			}
		}
		pfds := make([]unix.PollFd, len(fds))
		for i, fd := range fds {
			pfds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		}
		_, err := poller.New().Poll(pfds, 10*time.Millisecond)
		require.ErrorIs(t, err, unix.EINVAL)
	case "urandom":
		// From the highest limit down: a process can only lower its
		// own. The demo inherits the limit (soft and hard) at exec.
		demo := os.Getenv(urandomEnv)
		for _, r := range []struct {
			limit   uint64
			readers string
			ok      bool
		}{
			{24, "1", true}, {20, "10", false}, {17, "2", false},
		} {
			lowerNOFILE(t, r.limit)
			cmd := exec.Command(demo, "-len", "1000000", "-readers", r.readers, "-mode", "off,idle")
			out, err := cmd.CombinedOutput()
			s := strings.TrimSpace(string(out))
			t.Logf("limit %d, -readers %s: %v\n%s", r.limit, r.readers, err, s)
			assert.NotContains(t, s, "panic:")
			assert.NotContains(t, s, "goroutine ")
			if r.ok {
				assert.NoError(t, err)
				continue
			}
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "limit %d: %v", r.limit, err)
			assert.Equal(t, 2, ee.ExitCode(), "a refusal is exit status 2, not a crash")
			assert.True(t, strings.HasPrefix(s, "urandom: -readers "+r.readers+": the open-file limit is "+itoa(int(r.limit))),
				"not one clear line: %q", s)
			assert.NotContains(t, s, "\n", "not one clear line")
		}
	default:
		t.Fatalf("unknown case %q", c)
	}
}
