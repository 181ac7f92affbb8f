package poller_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// idleStepper records the idle time its caller reports.
type idleStepper struct {
	idle    atomic.Int64
	reports atomic.Int64
}

func (s *idleStepper) Step(time.Duration) bool { return false }

func (s *idleStepper) Idled(d time.Duration) {
	s.idle.Add(int64(d))
	s.reports.Add(1)
}

var _ gcstep.IdleObserver = (*idleStepper)(nil)

func TestBlockingWaitsReportIdleTime(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)
		lock := gvl.New()
		lock.Acquire()
		defer lock.Release()

		t.Run("Loop", func(t *testing.T) {
			s := &idleStepper{}
			l := newLoop(t, poller.WithBackend(b), poller.WithGVL(lock), poller.WithStepper(s))
			require.NoError(t, l.Add(p.r, poller.Read, func(int, poller.Events) {}))
			start := time.Now()
			n, err := l.RunOnce(20 * time.Millisecond)
			elapsed := time.Since(start)
			require.NoError(t, err)
			assert.Zero(t, n)
			st := l.Stats()
			assert.Equal(t, int64(st.BlockingPolls), s.reports.Load(), "one report per blocking wait")
			assert.Equal(t, st.BlockedTime, time.Duration(s.idle.Load()), "reported idle time and Stats.BlockedTime differ")
			assert.Positive(t, st.BlockedTime)
			assert.LessOrEqual(t, st.BlockedTime, elapsed)
		})

		t.Run("WaitFD", func(t *testing.T) {
			s := &idleStepper{}
			m := poller.New(poller.WithBackend(b), poller.WithGVL(lock), poller.WithStepper(s))
			_, err := m.WaitFD(p.r, poller.Read, 5*time.Millisecond)
			require.NoError(t, err)
			assert.Equal(t, m.Stats().BlockedTime, time.Duration(s.idle.Load()))
			assert.Positive(t, s.reports.Load())
		})

		t.Run("zero timeouts are not idle", func(t *testing.T) {
			s := &idleStepper{}
			m := poller.New(poller.WithBackend(b), poller.WithGVL(lock), poller.WithStepper(s))
			for range 10 {
				_, err := m.WaitFD(p.r, poller.Read, 0)
				require.NoError(t, err)
			}
			assert.Zero(t, s.reports.Load())
			assert.Zero(t, m.Stats().BlockedTime)
		})

		t.Run("through a Chain", func(t *testing.T) {
			s := &idleStepper{}
			m := poller.New(poller.WithBackend(b), poller.WithStepper(gcstep.Chain(s)))
			_, err := m.WaitFD(p.r, poller.Read, time.Millisecond)
			require.NoError(t, err)
			assert.Positive(t, s.reports.Load())
		})
	})
}
