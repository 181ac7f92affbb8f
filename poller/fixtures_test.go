package poller_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/poller"
)

// fdPair is the two ends of a pipe or socketpair, both nonblocking. The
// test closes an end through close, so that the cleanup never closes a
// number that was closed and perhaps reused meanwhile.
type fdPair struct {
	t    testing.TB
	r, w int // for a socketpair, either end: r is one, w the other
}

func newPipe(t testing.TB) *fdPair {
	t.Helper()
	var p [2]int
	require.NoError(t, unix.Pipe(p[:]))
	return newPair(t, p)
}

func newSocketpair(t testing.TB) *fdPair {
	t.Helper()
	p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	return newPair(t, p)
}

func newPair(t testing.TB, p [2]int) *fdPair {
	for _, fd := range p {
		unix.CloseOnExec(fd)
		require.NoError(t, unix.SetNonblock(fd, true))
	}
	f := &fdPair{t: t, r: p[0], w: p[1]}
	t.Cleanup(func() {
		f.close(&f.r)
		f.close(&f.w)
	})
	return f
}

// close closes *fd once and sets it to -1.
func (f *fdPair) close(fd *int) {
	if *fd >= 0 {
		unix.Close(*fd)
		*fd = -1
	}
}

func (f *fdPair) write(fd int, s string) {
	f.t.Helper()
	n, err := unix.Write(fd, []byte(s))
	require.NoError(f.t, err)
	require.Equal(f.t, len(s), n)
}

// stepper is a gcstep.Stepper that counts its calls and records the
// budgets it got; more decides what each call reports.
type stepper struct {
	calls   atomic.Int64
	budgets []time.Duration
	starts  []time.Time
	more    func(call int64) bool
	work    time.Duration // how long each step takes (sleeping)
}

func (s *stepper) Step(budget time.Duration) bool {
	n := s.calls.Add(1)
	s.budgets = append(s.budgets, budget)
	s.starts = append(s.starts, time.Now())
	if s.work > 0 {
		time.Sleep(min(s.work, budget))
	}
	if s.more == nil {
		return true
	}
	return s.more(n)
}

var _ gcstep.Stepper = (*stepper)(nil)

func never(int64) bool { return false }

// forEachBackend runs f as a subtest per backend available here.
func forEachBackend(t *testing.T, f func(t *testing.T, b poller.Backend)) {
	for _, b := range poller.Backends() {
		t.Run(b.String(), func(t *testing.T) { f(t, b) })
	}
}

// eventually waits up to 5 s for cond, failing the test with what.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// slack is how late a timed wait may return before a test complains: the
// machine is shared and noisy, so only gross misses count.
const slack = time.Second
