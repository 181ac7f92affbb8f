package gvl_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gvl"
)

// TestYieldFIFO: goroutines that take turns through Yield run round robin,
// in the order they queued; a yielder never gets back in ahead of anyone.
func TestYieldFIFO(t *testing.T) {
	const n, rounds = 4, 5
	l := gvl.New()
	var log []int // guarded by l
	l.Acquire()
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() {
			l.Acquire()
			for range rounds {
				log = append(log, i)
				l.Yield()
			}
			l.Release()
		})
		waitWaiters(t, l, i)
	}
	for range rounds {
		log = append(log, 0)
		l.Yield()
	}
	l.Release()
	wg.Wait()

	var want []int
	for range rounds {
		for i := range n {
			want = append(want, i)
		}
	}
	assert.Equal(t, want, log, "turns")
	// Every Yield finds somebody queued, even the last one (the main
	// goroutine waits in its own last Yield); the final Releases hand over
	// n-1 more times.
	s := l.Stats()
	assert.Equal(t, uint64(n*rounds), s.Yields, "yields in %+v", s)
	assert.Equal(t, uint64(n*rounds+n-1), s.Handoffs, "handoffs in %+v", s)
}

func TestYieldNobodyWaiting(t *testing.T) {
	l := gvl.New()
	l.Acquire()
	l.Yield()
	require.False(t, l.TryAcquire(), "Yield with nobody waiting left the lock free")
	l.Release()
	s := l.Stats()
	assert.Zero(t, s.Yields, "yields in %+v", s)
	assert.Zero(t, s.Handoffs, "handoffs in %+v", s)
}

// TestYieldKeepsCount: during a Yield the yielder is a waiter, and the
// count says so.
func TestYieldKeepsCount(t *testing.T) {
	l := gvl.New()
	l.Acquire()
	got := make(chan int, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		l.Acquire()
		got <- l.Waiters() // the main goroutine, queued by Yield
		l.Release()
	})
	waitWaiters(t, l, 1)
	l.Yield()
	assert.Equal(t, 1, recv(t, got), "Waiters() seen by the new holder: the yielder")
	l.Release()
	wg.Wait()
}

// TestCheckpointNoStarvation: a holder that never lets go but calls
// Checkpoint lets a waiter in once the timeslice has passed.
func TestCheckpointNoStarvation(t *testing.T) {
	for _, gomaxprocs := range []string{"default", "1"} {
		t.Run("GOMAXPROCS="+gomaxprocs, func(t *testing.T) {
			if gomaxprocs == "1" {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			}
			l := gvl.New(gvl.WithTimeslice(time.Millisecond))
			l.Acquire()
			var got atomic.Bool
			var wg sync.WaitGroup
			wg.Go(func() {
				l.Acquire()
				got.Store(true)
				l.Release()
			})
			deadline := time.Now().Add(timeout)
			for !got.Load() {
				require.False(t, time.Now().After(deadline), "waiter did not get the lock in %v of Checkpoint", timeout)
				l.Checkpoint() // spins: the holder never blocks
			}
			l.Release()
			wg.Wait()
			s := l.Stats()
			assert.Equal(t, uint64(1), s.Yields, "yields in %+v", s)
		})
	}
}

// TestShouldYield: the flag rises once a waiter has waited a timeslice,
// and falls when the lock changes hands.
func TestShouldYield(t *testing.T) {
	l := gvl.New(gvl.WithTimeslice(time.Millisecond))
	l.Acquire()
	require.False(t, l.ShouldYield(), "ShouldYield() with nobody waiting")
	proceed := make(chan struct{})
	got := make(chan bool)
	var wg sync.WaitGroup
	wg.Go(func() {
		l.Acquire()
		got <- l.ShouldYield()
		<-proceed
		l.Release()
	})
	deadline := time.Now().Add(timeout)
	for !l.ShouldYield() {
		require.False(t, time.Now().After(deadline), "ShouldYield() still false %v after a waiter queued", timeout)
		time.Sleep(100 * time.Microsecond)
	}
	l.Release()
	assert.False(t, recv(t, got), "ShouldYield() for the new holder with nobody waiting")
	close(proceed)
	wg.Wait()
}

// TestShouldYieldTimesliceBounds: the flag rises no sooner than a
// timeslice after a waiter queued behind a holder that keeps the lock, and
// rises again for the next waiter after the lock has been quiet for longer
// than a slice, when nobody was waiting and the lock's timer had stopped.
func TestShouldYieldTimesliceBounds(t *testing.T) {
	const slice = 20 * time.Millisecond
	l := gvl.New(gvl.WithTimeslice(slice))
	for round := range 2 {
		l.Acquire()
		start := time.Now()
		w := queueWaiter(t, l)
		deadline := time.Now().Add(timeout)
		for !l.ShouldYield() {
			require.False(t, time.Now().After(deadline), "round %d: ShouldYield() still false %v after a waiter queued", round, timeout)
			time.Sleep(100 * time.Microsecond)
		}
		assert.GreaterOrEqual(t, time.Since(start), slice, "round %d: ShouldYield() rose before a timeslice had passed", round)
		l.Release()
		w.finish(t)
		require.False(t, l.ShouldYield(), "round %d: ShouldYield() of a free lock", round)
		time.Sleep(3 * slice) // nobody waits: the timer runs out
	}
}

// TestShouldYieldAfterHandoff: a goroutine that gets the lock from Yield
// and keeps it is asked to yield for the yielder, which waits at the head of
// the queue from the handoff on: no sooner than a slice after it, and no
// later than the promised one and a half slices, give or take a quarter
// for late timers. The handoff comes right after the lock's timer started
// for the waiter before, the worst case for the timer to notice the new
// head.
func TestShouldYieldAfterHandoff(t *testing.T) {
	const slice = 200 * time.Millisecond
	l := gvl.New(gvl.WithTimeslice(slice))
	l.Acquire()
	rose := make(chan time.Time, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		l.Acquire()
		deadline := time.Now().Add(timeout)
		for !l.ShouldYield() && time.Now().Before(deadline) {
			time.Sleep(100 * time.Microsecond)
		}
		rose <- time.Now()
		l.Release()
	})
	waitWaiters(t, l, 1)
	start := time.Now()
	l.Yield()
	got := recv(t, rose).Sub(start)
	l.Release()
	wg.Wait()
	assert.GreaterOrEqual(t, got, slice, "ShouldYield() rose before a timeslice had passed")
	assert.Less(t, got, slice*7/4, "ShouldYield() rose %v after the handoff, want 1 to 1.5 slices", got)
}

// TestShouldYieldStaysDownWhileHandingOver: holders that hand the lock over
// again and again are never asked to yield, however long they keep at it,
// though somebody is always waiting.
func TestShouldYieldStaysDownWhileHandingOver(t *testing.T) {
	// Generous: a false rise needs one waiter at the head for a whole slice
	// while the lock changes hands every few microseconds; a slice of
	// 100 ms outlasts the stalls a loaded machine gives a thread.
	const slice, run = 100 * time.Millisecond, 5 * 100 * time.Millisecond
	l := gvl.New(gvl.WithTimeslice(slice))
	var stop, rose atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			l.Acquire()
			for !stop.Load() {
				if l.ShouldYield() {
					rose.Store(true)
				}
				l.Yield()
			}
			l.Release()
		})
	}
	waitWaiters(t, l, 1)
	time.Sleep(run)
	stop.Store(true)
	wg.Wait()
	assert.False(t, rose.Load(), "ShouldYield() rose for holders that hand over at every turn")
	assert.Greater(t, l.Stats().Yields, uint64(2), "the holders took no turns")
}

func TestTimesliceDisabled(t *testing.T) {
	l := gvl.New(gvl.WithTimeslice(0))
	l.Acquire()
	var wg sync.WaitGroup
	wg.Go(func() {
		l.Acquire()
		l.Release()
	})
	waitWaiters(t, l, 1)
	time.Sleep(20 * time.Millisecond)
	assert.False(t, l.ShouldYield(), "ShouldYield() with timeslices disabled")
	l.Checkpoint() // must not yield
	assert.Equal(t, 1, l.Waiters(), "Checkpoint yielded with timeslices disabled")
	l.Release()
	wg.Wait()
}
