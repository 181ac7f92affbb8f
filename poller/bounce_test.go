package poller_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// bounce has two goroutines sharing lock bounce a byte n times over two
// pipes, each reading, and waiting in m.WaitFD when the read finds
// nothing: the shape of bench's BenchmarkPipe. It reports the blocking
// waits m made.
func bounce(t *testing.T, m *poller.Mux, lock *gvl.Lock, n int) uint64 {
	t.Helper()
	ab, ba := newPipe(t), newPipe(t)
	before := m.Stats().BlockingPolls
	var wg sync.WaitGroup
	for side := range 2 {
		in, out := ba, ab
		if side == 1 {
			in, out = ab, ba
		}
		wg.Go(func() {
			lock.Acquire()
			defer lock.Release()
			var b [1]byte
			if side == 0 {
				out.write(out.w, "x")
			}
			for i := 0; i < n; {
				_, err := unix.Read(in.r, b[:])
				if err == unix.EAGAIN {
					_, err = m.WaitFD(in.r, poller.Read, 10*time.Second)
					if !assert.NoError(t, err) {
						return
					}
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				i++
				if side == 0 && i == n {
					return
				}
				out.write(out.w, "x")
			}
		})
	}
	wg.Wait()
	return m.Stats().BlockingPolls - before
}

// Goroutines bouncing work through a Mux wait hundreds of times a
// millisecond, each time while the other took the lock: such waits are
// reported to the stepper once a budget, not each (every report would
// say the same, and writes the stepper's state from another thread).
func TestBusyWaitsReportedOnceABudget(t *testing.T) {
	lock := gvl.New()
	s := &idleStepper{}
	m := poller.New(poller.WithGVL(lock), poller.WithStepper(s), poller.WithStepBudget(time.Hour))
	waits := bounce(t, m, lock, 500)
	require.Greater(t, waits, uint64(100), "the goroutines hardly waited")
	// The first busy wait, and perhaps the last one, which may find
	// nobody else took the lock.
	assert.LessOrEqual(t, s.reports.Load(), int64(2), "reports of %d waits", waits)
	assert.Zero(t, s.idle.Load(), "idle time while the other goroutine worked")
}

// countingDeferred is a Deferred stepper whose work is due in 3 s (sooner
// than bounce's waits time out, so the alarm is armed for it), counting
// how often it is asked.
type countingDeferred struct{ asked atomic.Int64 }

func (s *countingDeferred) Step(time.Duration) bool { return false }

func (s *countingDeferred) NextStep() (time.Duration, bool) {
	s.asked.Add(1)
	return 3 * time.Second, true
}

var _ gcstep.Deferred = (*countingDeferred)(nil)

// While the Mux's alarm is pending for a Deferred stepper's work, waits
// ask NextStep once a budget: the alarm asks again when it fires.
func TestPendingAlarmAskedOnceABudget(t *testing.T) {
	lock := gvl.New()
	s := &countingDeferred{}
	m := poller.New(poller.WithGVL(lock), poller.WithStepper(s), poller.WithStepBudget(2*time.Second))
	waits := bounce(t, m, lock, 500)
	require.Greater(t, waits, uint64(100), "the goroutines hardly waited")
	// The first wait arms the alarm; the second, within the budget, may
	// still ask (once stores the first time it is asked).
	assert.LessOrEqual(t, s.asked.Load(), int64(2), "NextStep for %d waits", waits)
}
