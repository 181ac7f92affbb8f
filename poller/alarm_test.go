package poller_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// lockedStepper is a deferredStepper that also records whether each step
// ran with the lock held, as every step must.
type lockedStepper struct {
	deferredStepper
	lock     *gvl.Lock
	unlocked int // steps that found the lock free
}

func (s *lockedStepper) Step(budget time.Duration) bool {
	if s.lock.TryAcquire() {
		s.unlocked++
		s.lock.Release()
	}
	return s.deferredStepper.Step(budget)
}

// A Mux whose goroutines share a lock does its deferred work without
// cutting the waits short: a wait is not bounded by NextStep (in the
// netpoller that bound would be a read deadline moved at every wait);
// the Mux's alarm takes the lock when the work falls due and does it
// while the wait stays blocked.
func TestDeferredWorkWhileAMuxWaitBlocks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)
		lock := gvl.New()
		lock.Acquire()
		defer lock.Release()
		s := &lockedStepper{deferredStepper: deferredStepper{start: time.Now(), delay: 20 * time.Millisecond}, lock: lock}
		m := poller.New(poller.WithBackend(b), poller.WithGVL(lock), poller.WithStepper(s))

		ev, err := m.WaitFD(p.r, poller.Read, 150*time.Millisecond)
		end := time.Now()
		require.NoError(t, err)
		assert.Zero(t, ev)
		require.False(t, s.doneAt.IsZero(), "the deferred work was never done")
		assert.GreaterOrEqual(t, s.doneAt.Sub(s.start), s.delay, "done before it was due")
		assert.True(t, s.doneAt.Before(end), "done after the wait, not during it")
		assert.Zero(t, s.unlocked, "steps without the lock")
		assert.EqualValues(t, 1, m.Stats().BlockingPolls, "the wait was cut short for the work")
		assert.Positive(t, m.Stats().Steps)
	})
}

// When the work falls due while another goroutine holds the lock, it is
// done once that goroutine lets go, never beside it.
func TestDeferredWorkWaitsForTheLock(t *testing.T) {
	p := newPipe(t)
	lock := gvl.New()
	lock.Acquire()
	defer lock.Release()
	s := &lockedStepper{deferredStepper: deferredStepper{start: time.Now(), delay: 20 * time.Millisecond}, lock: lock}
	m := poller.New(poller.WithGVL(lock), poller.WithStepper(s))

	const held = 80 * time.Millisecond
	var released time.Time
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(5 * time.Millisecond) // the wait below has released the lock
		lock.Acquire()
		time.Sleep(held) // across the moment the work falls due
		released = time.Now()
		lock.Release()
		time.Sleep(30 * time.Millisecond)
		p.write(p.w, "x")
	})
	ev, err := m.WaitFD(p.r, poller.Read, 10*time.Second)
	wg.Wait()
	require.NoError(t, err)
	assert.Equal(t, poller.Read, ev)
	require.False(t, s.doneAt.IsZero(), "the deferred work was never done")
	assert.False(t, s.doneAt.Before(released), "done while another goroutine held the lock")
	assert.Zero(t, s.unlocked, "steps without the lock")
}
