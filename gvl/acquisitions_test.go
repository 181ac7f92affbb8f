package gvl_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gvl"
)

// TestAcquisitionsCountsEveryPath: every way of taking the lock counts
// once, a failed TryAcquire and a Yield with nobody waiting not at all,
// and the count always equals Stats().Acquisitions.
func TestAcquisitionsCountsEveryPath(t *testing.T) {
	l := gvl.New()
	want := uint64(0)
	check := func(step string) {
		t.Helper()
		assert.Equal(t, want, l.Acquisitions(), "Acquisitions() after %s", step)
		assert.Equal(t, want, l.Stats().Acquisitions, "Stats().Acquisitions after %s", step)
	}
	check("New")

	l.Acquire()
	want++
	check("Acquire")
	assert.False(t, l.TryAcquire())
	check("a TryAcquire that failed")
	l.Yield() // nobody waits: no handoff, no acquisition
	check("Yield alone")
	l.Blocking(func() {})
	want++ // taken back on the fast path
	check("Blocking alone")
	l.Release()

	require.True(t, l.TryAcquire())
	want++
	check("TryAcquire")
	l.Release()

	require.NoError(t, l.AcquireContext(context.Background()))
	want++
	check("AcquireContext")

	// A handoff: the releaser counts the waiter's acquisition before the
	// waiter runs, so a count read right after Release already has it.
	w := queueWaiter(t, l)
	l.Release()
	want++
	check("Release to a waiter")
	w.finish(t)
	check("the waiter's Release")
}

// TestAcquisitionsAroundBlocking is the use the accessor is for: a
// goroutine reads the count before Blocking releases the lock and again
// inside fn; the two differ exactly when somebody else took the lock
// meanwhile.
func TestAcquisitionsAroundBlocking(t *testing.T) {
	l := gvl.New()
	l.Acquire()
	defer l.Release()

	before := l.Acquisitions()
	var inside uint64
	l.Blocking(func() { inside = l.Acquisitions() })
	assert.Equal(t, before, inside, "nobody else took the lock during Blocking")

	worked := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		l.Acquire() // handed over when Blocking releases
		close(worked)
		l.Release()
	})
	waitWaiters(t, l, 1)
	before = l.Acquisitions()
	l.Blocking(func() {
		recv(t, worked)
		inside = l.Acquisitions()
	})
	wg.Wait()
	assert.Greater(t, inside, before, "another goroutine held the lock during Blocking")
}

// TestAcquisitionsConcurrent (run with -race): the count is read with no
// lock while goroutines take the lock by every path; each reader sees it
// only grow, a holder sees its own acquisition in it, and at the end it
// holds every Acquire and every Blocking's reacquisition, as Stats does.
func TestAcquisitionsConcurrent(t *testing.T) {
	const (
		workers = 4
		rounds  = 2000
	)
	l := gvl.New()
	var stop atomic.Bool
	var readers, wg sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			last := uint64(0)
			for !stop.Load() {
				n := l.Acquisitions()
				if !assert.GreaterOrEqual(t, n, last, "the count went back") {
					return
				}
				last = n
			}
		})
	}
	var holders atomic.Uint64 // acquisitions the holders made
	for range workers {
		wg.Go(func() {
			for i := range rounds {
				l.Acquire()
				holders.Add(1)
				// The holder's own acquisition is in the count.
				if !assert.GreaterOrEqual(t, l.Acquisitions(), holders.Load()) {
					l.Release()
					return
				}
				if i%2 == 0 {
					l.Blocking(func() {})
					holders.Add(1)
				}
				l.Release()
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	readers.Wait()
	want := uint64(workers * (rounds + rounds/2))
	assert.Equal(t, want, holders.Load())
	assert.Equal(t, want, l.Acquisitions())
	assert.Equal(t, want, l.Stats().Acquisitions)
}
