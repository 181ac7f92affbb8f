package poller_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// deferredStepper has one piece of work that falls due a fixed delay after
// it is made, as the runtime stepper's release of memory to the OS does.
type deferredStepper struct {
	start  time.Time
	delay  time.Duration
	steps  int
	doneAt time.Time // when the due work was done; zero before
}

func (s *deferredStepper) Step(budget time.Duration) bool {
	s.steps++
	if s.doneAt.IsZero() && budget > 0 && time.Since(s.start) >= s.delay {
		s.doneAt = time.Now()
	}
	return false
}

func (s *deferredStepper) NextStep() (time.Duration, bool) {
	if !s.doneAt.IsZero() {
		return 0, false
	}
	return max(s.delay-time.Since(s.start), 0), true
}

var _ gcstep.Deferred = (*deferredStepper)(nil)

func TestDeferredWorkWakesABlockedWait(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)

		lock := gvl.New()
		lock.Acquire()
		defer lock.Release()

		t.Run("Loop", func(t *testing.T) {
			s := &deferredStepper{start: time.Now(), delay: 20 * time.Millisecond}
			l := newLoop(t, poller.WithBackend(b), poller.WithGVL(lock), poller.WithStepper(s))
			require.NoError(t, l.Add(p.r, poller.Read, func(int, poller.Events) {}))
			n, err := l.RunOnce(200 * time.Millisecond)
			require.NoError(t, err)
			assert.Zero(t, n)
			require.False(t, s.doneAt.IsZero(), "the deferred work was never done")
			assert.GreaterOrEqual(t, s.doneAt.Sub(s.start), s.delay, "done before it was due")
			// The wait went on after the work: the call still ran to
			// its timeout, and made a second blocking wait for it.
			assert.GreaterOrEqual(t, l.Stats().BlockingPolls, uint64(2))
		})

		t.Run("WaitFD", func(t *testing.T) {
			s := &deferredStepper{start: time.Now(), delay: 20 * time.Millisecond}
			m := poller.New(poller.WithBackend(b), poller.WithGVL(lock), poller.WithStepper(s))
			ev, err := m.WaitFD(p.r, poller.Read, 200*time.Millisecond)
			require.NoError(t, err)
			assert.Zero(t, ev)
			require.False(t, s.doneAt.IsZero(), "the deferred work was never done")
			assert.GreaterOrEqual(t, s.doneAt.Sub(s.start), s.delay, "done before it was due")
		})

		t.Run("due after the timeout", func(t *testing.T) {
			s := &deferredStepper{start: time.Now(), delay: time.Hour}
			m := poller.New(poller.WithBackend(b), poller.WithGVL(lock), poller.WithStepper(s))
			ev, err := m.WaitFD(p.r, poller.Read, 30*time.Millisecond)
			require.NoError(t, err)
			assert.Zero(t, ev)
			assert.True(t, s.doneAt.IsZero())
			assert.Equal(t, uint64(1), m.Stats().BlockingPolls, "a wait cut short for work not due")
		})
	})
}
