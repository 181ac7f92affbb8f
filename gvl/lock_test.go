package gvl_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gvl"
)

func TestMutualExclusion(t *testing.T) {
	const goroutines = 16
	rounds := 2000
	if testing.Short() {
		rounds = 200
	}
	for _, tc := range []struct {
		name string
		lock func() *gvl.Lock
	}{
		{"zero", func() *gvl.Lock { return new(gvl.Lock) }},
		{"new", func() *gvl.Lock { return gvl.New() }},
		// A tiny timeslice, so that timers fire, flags rise and fall and
		// Checkpoint yields all through the run.
		{"timeslice=50µs", func() *gvl.Lock { return gvl.New(gvl.WithTimeslice(50 * time.Microsecond)) }},
		{"no timeslice", func() *gvl.Lock { return gvl.New(gvl.WithTimeslice(0)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.lock()
			var inside, counter int // guarded by l
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range rounds {
						switch (g + i) % 6 {
						case 0:
							l.Acquire()
						case 1:
							if !l.TryAcquire() {
								l.Acquire()
							}
						case 2:
							l.Acquire()
							l.Yield()
						case 3:
							l.Acquire()
							l.Blocking(func() {})
						case 4:
							// Gives up now and then: cancellation races
							// handoffs all through the run.
							ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%50)*time.Microsecond)
							if l.AcquireContext(ctx) != nil {
								l.Acquire()
							}
							cancel()
						case 5:
							// Holds on for a while, at safe points.
							l.Acquire()
							for start := time.Now(); time.Since(start) < 100*time.Microsecond; {
								l.Checkpoint()
							}
						}
						inside++
						assert.Equal(t, 1, inside, "goroutines inside the lock")
						counter++
						inside--
						l.Release()
					}
				})
			}
			wg.Wait()
			t.Logf("%+v", l.Stats())
			assert.Equal(t, goroutines*rounds, counter)
			assert.False(t, l.Contended(), "Contended() after all returned")
			assert.Zero(t, l.Waiters(), "Waiters() after all returned")
			assert.True(t, l.TryAcquire(), "lock left held")
		})
	}
}

func TestZeroValueAndTryAcquire(t *testing.T) {
	var l gvl.Lock
	require.True(t, l.TryAcquire(), "TryAcquire on a new Lock")
	require.False(t, l.TryAcquire(), "TryAcquire on a held Lock")
	l.Release()
	l.Acquire()
	l.Release()
	assert.Equal(t, uint64(2), l.Stats().Acquisitions)
}

// TestContendedWaiters queues goroutines one at a time behind a holder and
// checks the counts after every step, then that they are served in the
// order they queued.
func TestContendedWaiters(t *testing.T) {
	const n = 5
	l := gvl.New()
	require.False(t, l.Contended(), "Contended() of a new lock")
	require.Zero(t, l.Waiters(), "Waiters() of a new lock")
	l.Acquire()
	require.False(t, l.Contended(), "Contended() with a holder and no waiter")
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			l.Acquire()
			order <- i
			l.Release()
		})
		waitWaiters(t, l, i+1)
		require.True(t, l.Contended(), "Contended() with %d waiters", i+1)
	}
	require.False(t, l.TryAcquire(), "TryAcquire on a held lock")
	l.Release()
	for want := range n {
		assert.Equal(t, want, recv(t, order), "the goroutine served in turn %d (FIFO)", want)
	}
	wg.Wait()
	assert.False(t, l.Contended(), "Contended() after all")
	assert.Zero(t, l.Waiters(), "Waiters() after all")
}

// TestReleaseHandsOver checks that a release with a waiter hands the lock
// over directly: the waiter count drops at Release, and the lock is never
// free for a newcomer to take in between.
func TestReleaseHandsOver(t *testing.T) {
	l := gvl.New()
	l.Acquire()
	w := queueWaiter(t, l)
	l.Release()
	assert.Zero(t, l.Waiters(), "Waiters() right after Release")
	require.False(t, l.TryAcquire(), "TryAcquire took a lock that was handed to a waiter")
	w.finish(t)
	s := l.Stats()
	assert.Equal(t, [3]uint64{1, 1, 2}, [3]uint64{s.Handoffs, s.Contended, s.Acquisitions},
		"handoffs, contended, acquisitions in %+v", s)
}

func TestMisusePanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(*gvl.Lock)
	}{
		{"Release", func(l *gvl.Lock) { l.Release() }},
		{"Release twice", func(l *gvl.Lock) { l.Acquire(); l.Release(); l.Release() }},
		{"Yield", func(l *gvl.Lock) { l.Yield() }},
		{"Blocking", func(l *gvl.Lock) { l.Blocking(func() {}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := gvl.New()
			v := panicValue(func() { tc.fn(l) })
			msg, _ := v.(string)
			assert.Regexp(t, "^gvl: ", msg, "panic value %#v", v)
			// The lock is still usable and free.
			assert.True(t, l.TryAcquire(), "lock not free after the misuse")
		})
	}
}

func TestAllocs(t *testing.T) {
	l := gvl.New()
	assert.Zero(t, testing.AllocsPerRun(100, func() { l.Acquire(); l.Release() }), "allocations by Acquire+Release")
	l.Acquire()
	defer l.Release()
	assert.Zero(t, testing.AllocsPerRun(100, func() { l.Blocking(func() {}) }), "allocations by Blocking with nobody waiting")
	assert.Zero(t, testing.AllocsPerRun(100, l.Yield), "allocations by Yield with nobody waiting")
}

func TestStatsAndHook(t *testing.T) {
	var mu sync.Mutex
	var events []gvl.Event
	l := gvl.New(gvl.WithHook(func(e gvl.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}))
	l.Acquire()
	l.Release()
	mu.Lock()
	got := fmt.Sprint(events)
	mu.Unlock()
	assert.Equal(t, "[acquired released]", got, "uncontended events")

	l.Acquire()
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Acquire()
		l.Release()
	}()
	waitWaiters(t, l, 1)
	time.Sleep(time.Millisecond) // so the wait is measurably long
	l.Release()
	recv(t, done)

	s := l.Stats()
	assert.Equal(t, [5]uint64{3, 1, 1, 0, 0}, [5]uint64{s.Acquisitions, s.Contended, s.Handoffs, s.Yields, s.Cancelled},
		"acquisitions, contended, handoffs, yields, cancelled in %+v", s)
	assert.GreaterOrEqual(t, s.WaitMax, time.Millisecond)
	assert.Equal(t, s.WaitMax, s.WaitTotal, "one wait: its total is its maximum")
	mu.Lock()
	defer mu.Unlock()
	count := map[gvl.Event]int{}
	for _, e := range events {
		count[e]++
	}
	assert.Equal(t, map[gvl.Event]int{gvl.EventAcquired: 3, gvl.EventReleased: 3, gvl.EventWaiting: 1}, count, "events %v", events)
	for _, e := range []gvl.Event{gvl.EventWaiting, gvl.EventAcquired, gvl.EventReleased} {
		assert.NotEmpty(t, e.String())
		assert.NotRegexp(t, `^gvl\.Event\(`, e.String(), "Event(%d) has no name", e)
	}
}
