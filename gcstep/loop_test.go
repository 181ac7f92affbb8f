package gcstep

import (
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serve makes the loop l of world w go through n events, each after an
// idle gap, allocating alloc bytes per event, as package poller reports
// them: a blocking wait that ended with work, the handler's allocation,
// then Lull at the next idle moment and, if it says so, a step.
func serve(w *world, l *Loop, n int, gap time.Duration, alloc uint64) {
	for range n {
		w.t += gap
		l.Waited(gap, true)
		w.alloc(alloc)
		w.t += 10 * time.Microsecond // the handler
		if l.Lull() {
			start := w.t
			l.Step(ms)
			l.Stepped(w.t-start, w.t-start > gap)
		}
		w.run() // a trim's release, on its goroutine
	}
}

func TestLullTooShortForACycle(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(0), WithExchangeRate(DefaultExchangeRate))
	w.setPacer(100)
	l := rt.Loop()
	// A request/response burst: 20 µs between requests, each 256 KiB.
	// At that rate a cycle of ours pays only past the pacer's goal.
	serve(w, l, 300, 20*time.Microsecond, 256*kib)
	assert.Zero(t, w.gcs, "inline cycles in 20 µs lulls")
	assert.Zero(t, w.starts, "background cycles in a busy loop")
	assert.Positive(t, w.pacerCycles, "the pacer's own cycles")
	assert.Positive(t, rt.Stats().DeclinedPacer)
	assert.False(t, l.Lull(), "Lull in a burst of short gaps")
	// Lull said no after the first step: a look a recheck in the 9 ms
	// burst, not a zero-timeout poll and a step after each of the 300
	// requests.
	assert.LessOrEqual(t, rt.Stats().Steps, uint64(300*30*time.Microsecond/recheck)+3)
}

func TestBusyLoopLeavesCyclesToThePacer(t *testing.T) {
	// A large live heap and a program allocating fast: the pacer's
	// cycle at the heap goal is cheaper than any of ours.
	w, rt := newTest(t, WithReleaseDelay(0), WithCPUCap(1), WithExchangeRate(DefaultExchangeRate))
	w.r.live, w.liveAfter = 64*mib, 64*mib
	w.setPacer(100)
	l := rt.Loop()
	serve(w, l, 2000, 5*time.Microsecond, 512*kib)
	assert.Zero(t, w.starts+w.gcs, "cycles of ours")
	assert.Positive(t, w.pacerCycles, "the pacer's")
}

func TestQuietEmptiesTheGapOnce(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	l := rt.Loop()
	serve(w, l, 300, 20*time.Microsecond, 256*kib)
	// The burst is over: the loop is about to block.
	d, ok := l.NextStep()
	require.True(t, ok, "nothing to empty after a burst")
	assert.Equal(t, 20*ms, d, "quiet period")
	assert.False(t, l.Step(ms), "more before the quiet period")
	assert.Zero(t, w.spawnCount)

	w.t += d
	l.Waited(d, false) // the wait ended for NextStep, not for work
	assert.False(t, l.Step(ms), "more after starting the release")
	require.Equal(t, 1, w.spawnCount, "release started")
	assert.Zero(t, w.releases, "the release does not run in the step")
	w.releaseCost = int(3 * ms)
	w.run()
	assert.Equal(t, 1, w.releases)
	s := rt.Stats()
	assert.EqualValues(t, 1, s.QuietPeriods)
	assert.EqualValues(t, 1, s.Releases)
	assert.EqualValues(t, 3<<20, s.ReleasedBytes)
	assert.Equal(t, 23*ms, s.LastReleaseAfterQuiet)

	// Once per quiet stretch: nothing more to wake up for.
	_, ok = l.NextStep()
	assert.False(t, ok, "NextStep after the release")
	for range 100 {
		w.t += 100 * ms
		l.Step(ms)
	}
	assert.Equal(t, 1, w.spawnCount, "releases in one quiet stretch")

	// The next burst re-arms it.
	serve(w, l, 10, 20*time.Microsecond, 256*kib)
	_, ok = l.NextStep()
	assert.True(t, ok)
}

// A cgroup's CPU quota stops every thread of the process at once: a loop
// blocked for its quiet period's wakeup sleeps through it, its wait times
// out, and its producer, stopped too, writes again a moment later. Such a
// stretch looks quiet and ends at once. The release of the first one
// finds that out, and the next ones are not released, where stretches
// that go on after their release keep theirs.
func TestReleaseLearnsWhatAStretchLeft(t *testing.T) {
	for _, rest := range []time.Duration{100 * time.Microsecond, 500 * ms} {
		w, rt := newTest(t, WithReleaseDelay(20*ms), WithExchangeRate(DefaultExchangeRate))
		w.fault = 10 * time.Microsecond // this machine's price
		l := rt.Loop()
		for range 8 {
			serve(w, l, 50, 20*time.Microsecond, 256*kib)
			d, ok := l.NextStep()
			require.True(t, ok, "rest %v: nothing to empty after a burst", rest)
			frozen := d + 25*ms // the quota's stop outlasts the wait
			w.t += frozen
			l.Waited(frozen, false)
			l.Step(ms)
			w.releaseCost = int(ms)
			w.run()
			w.t += rest
			l.Waited(rest, true)
		}
		s := rt.Stats()
		t.Logf("rest %v: %d releases of 8 stretches", rest, s.QuietPeriods)
		if rest < ms {
			assert.LessOrEqual(t, s.QuietPeriods, uint64(2), "releases of stretches that end as they are released")
		} else {
			assert.EqualValues(t, 8, s.QuietPeriods, "releases of stretches that go on")
		}
	}
}

func TestQuietWithoutAllocationWakesNobody(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	l := rt.Loop()
	serve(w, l, 100, 20*time.Microsecond, 0) // handlers allocate nothing
	_, ok := l.NextStep()
	assert.False(t, ok, "a wakeup for a program that allocated nothing")
	w.t += time.Second
	l.Step(ms)
	assert.Zero(t, w.spawnCount+w.gcs+w.starts)
}

func TestNextStepReadsTheHeapOnceARecheck(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	l := rt.Loop()
	// Two goroutines bouncing a byte: a wait every 10 µs, each asking
	// NextStep, and a few bytes allocated a wait: less than a release's
	// worth in all.
	reads := w.reads
	for range 1000 {
		w.t += 10 * time.Microsecond
		l.Waited(0, true)
		w.alloc(24)
		_, ok := l.NextStep()
		require.True(t, ok, "the program allocates: maybe a release")
	}
	assert.LessOrEqual(t, w.reads-reads, 11, "heap readings in 10 ms: more than one a millisecond")

	// It goes quiet: the step at the quiet period's end reads the heap,
	// finds too little garbage for a release, and nobody is woken again.
	d, ok := l.NextStep()
	require.True(t, ok)
	w.t += d
	l.Waited(d, false)
	assert.False(t, l.Step(ms))
	assert.Zero(t, w.spawnCount, "a release of 24 KB")
	_, ok = l.NextStep()
	assert.False(t, ok, "a second wakeup in one quiet stretch")
}

func TestNextStepSeesAllocationAfterTheRecheck(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	l := rt.Loop()
	serve(w, l, 100, 20*time.Microsecond, 0) // nothing allocated
	_, ok := l.NextStep()
	require.False(t, ok)
	// Then a burst that allocates a release's worth, longer than a
	// recheck: its last wait is bounded by the release.
	for range 100 {
		w.t += 20 * time.Microsecond
		l.Waited(20*time.Microsecond, true)
		w.alloc(8 * kib)
	}
	_, ok = l.NextStep()
	assert.True(t, ok, "no release after 800 KiB of garbage")
}

func TestQuietPeriodAdaptsToTheLoopsGaps(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	l := rt.Loop()
	// A loop ticking every 10 ms is not quiet after 20 ms.
	serve(w, l, 20, 10*ms, 64*kib)
	d, ok := l.NextStep()
	require.True(t, ok)
	assert.Equal(t, quietFactor*10*ms, d+w.t-l.lastWork)
}

func TestSharedRuntimeQuietWhenEveryLoopIs(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	a, b := rt.Loop(), rt.Loop()
	serve(w, a, 50, 20*time.Microsecond, 256*kib)
	serve(w, b, 50, 20*time.Microsecond, 256*kib)
	// a goes quiet; b keeps working.
	for range 30 {
		serve(w, b, 1, ms, 0)
		a.Step(ms)
	}
	assert.Zero(t, w.spawnCount, "released while a loop worked")
	// a, quiet, is told when b will be.
	da, ok := a.NextStep()
	require.True(t, ok)
	db, _ := b.NextStep()
	assert.Equal(t, db, da)
	w.t += da
	a.Waited(da, false)
	a.Step(ms)
	b.Step(ms)
	assert.Equal(t, 1, w.spawnCount, "one release for the two loops")
	w.run()

	// A closed handle is not waited for.
	c := rt.Loop()
	serve(w, c, 5, 20*time.Microsecond, 256*kib)
	c.Close()
	assert.False(t, c.Step(ms))
	serve(w, a, 5, 20*time.Microsecond, 256*kib)
	d, ok := a.NextStep()
	require.True(t, ok)
	w.t += d
	a.Step(ms)
	assert.Equal(t, 2, w.spawnCount)
	w.run()
}

// The same cycle is priced with the delay it imposes on the loop that
// would run it: inline in a loop whose gaps cover it, in the background
// from a loop whose next event would wait behind it.
func TestInlinePricedWithTheLoopsDelay(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(0), WithExchangeRate(DefaultExchangeRate))
	busy, idle := rt.Loop(), rt.Loop()
	serve(w, busy, 20, 10*time.Microsecond, 0)
	serve(w, idle, 20, 300*time.Microsecond, 0)
	w.alloc(mib)
	w.t += 50 * ms // held long enough to pay for a cycle
	busy.Step(ms)
	assert.Zero(t, w.gcs, "inline cycle from the busy loop")
	assert.Equal(t, 1, w.starts, "background cycle from the busy loop")
	w.collected()
	w.alloc(mib)
	w.t += 50 * ms
	idle.Step(ms)
	assert.Equal(t, 1, w.gcs, "inline cycle from the idle loop")
}

func TestStepsThatDelayedWorkCounted(t *testing.T) {
	_, rt := newTest(t)
	l := rt.Loop()
	l.Stepped(300*time.Microsecond, true)
	l.Stepped(2*time.Microsecond, false)
	rt.Stepped(100*time.Microsecond, true)
	s := rt.Stats()
	assert.EqualValues(t, 2, s.StepsDelayedWork)
	assert.Equal(t, 400*time.Microsecond, s.DelayedWorkTime)
}

// Several loops, each on its own goroutine, share one Runtime over the
// real runtime: run with -race.
//
// The loops say they consume streams, and step with a budget no cycle
// under the race detector on a loaded machine exceeds, so that whether a
// cycle runs does not hang on the cost estimate of the moment (without,
// a race-detector cycle of 1.5 ms against gaps of at most 50 µs left some
// runs with nothing done); the shared paths run all the same.
func TestSharedRuntimeConcurrentLoops(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // the pacer's cycles would leave ours nothing
	rt := NewRuntime(WithReleaseDelay(time.Millisecond), WithStreams(true), WithExchangeRate(1e12))
	defer rt.Close()
	var wg sync.WaitGroup
	var sinkMu sync.Mutex
	for range 4 {
		l := rt.Loop()
		wg.Go(func() {
			defer l.Close()
			var keep [][]byte
			for i := range 2000 {
				l.Waited(time.Duration(i%50)*time.Microsecond, i%7 != 0)
				keep = append(keep, make([]byte, 4<<10))
				if len(keep) > 64 {
					keep = keep[:0]
				}
				if l.Lull() {
					start := time.Now()
					l.Step(50 * time.Millisecond)
					l.Stepped(time.Since(start), i%3 == 0)
				}
				if d, ok := l.NextStep(); ok && d == 0 {
					l.Step(time.Millisecond)
				}
				if i%100 == 0 {
					_ = rt.Stats()
					runtime.Gosched()
				}
			}
			sinkMu.Lock()
			keepSink = keep
			sinkMu.Unlock()
		})
	}
	wg.Wait()
	s := rt.Stats()
	assert.Positive(t, s.Steps)
	assert.Positive(t, s.CyclesInline+s.CyclesBackground+s.QuietPeriods, "the shared Runtime did nothing: %+v", s)
}

var keepSink [][]byte

// Issue 13, item 6: the release used to run inside a Step, holding the
// Runtime's mutex for as long as debug.FreeOSMemory took. Now a step only
// starts it: while it runs, steps, Stats and NextStep go on.
func TestReleaseDoesNotHoldTheRuntime(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	l := rt.Loop()
	serve(w, l, 50, 20*time.Microsecond, 256*kib)
	w.t += 20 * ms
	l.Step(ms)
	require.Len(t, w.spawned, 1, "release started")
	// The release is in flight (its goroutine has not run).
	w.alloc(mib)
	assert.False(t, l.Step(ms))
	assert.Zero(t, rt.Stats().Releases)
	_, ok := l.NextStep()
	assert.False(t, ok, "a second release while one runs")
	done := make(chan struct{})
	go func() { defer close(done); w.run() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the release could not finish")
	}
	assert.EqualValues(t, 1, rt.Stats().Releases)
}

// A stream consumer whose cycles cost more than its step budget: Lull
// says no, so the loop blocks at once instead of polling again for a step
// that would decline. Once the estimate relaxes into the budget, it says
// yes, and the cycle that runs teaches the estimate again.
func TestLullNoWhenTheCycleDoesNotFitTheBudget(t *testing.T) {
	w, rt := newTest(t, WithStreams(true), WithBackground(false), WithReleaseDelay(0))
	l := rt.Loop()
	assert.True(t, l.Lull(), "before any step the budget is unknown")
	w.gcCost = 5 * modelFixed // 1.25 ms, over the 1 ms budget
	for i := 0; float64(rt.Stats().CostEstimate) <= planFactor*float64(ms); i++ {
		require.Less(t, i, 1000, "the estimate never learnt the slow cycles")
		serve(w, l, 1, 100*time.Microsecond, 64*kib)
	}
	gcs, steps := w.gcs, rt.Stats().Steps
	serve(w, l, 100, 100*time.Microsecond, 64*kib) // 10 ms: the estimate stays over
	assert.Equal(t, gcs, w.gcs, "cycles while the estimate is over the budget")
	// One look a recheck, not a zero-timeout poll and a step at every
	// idle moment.
	assert.LessOrEqual(t, rt.Stats().Steps, steps+uint64(10*ms/recheck)+1, "steps while the estimate is over the budget")
	w.t += 10 * maxHalfLife
	assert.True(t, l.Lull(), "once the estimate relaxed")
}

// A release is priced by what it frees for the rest of the quiet stretch
// against the faults that bring the pages back: with quiet stretches of
// 40 ms, worth it where a fault costs a microsecond and not where it costs
// twenty; with stretches of a second, worth it on both. The first stretch,
// before any was measured, is taken for a long one.
func TestReleasePricedByTheFaultsThatBringItBack(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fault    time.Duration
		gap      time.Duration
		releases bool
	}{
		{"faults of 20 µs, quiet for 40 ms", 20 * time.Microsecond, 40 * ms, false},
		{"faults of 1 µs, quiet for 40 ms", time.Microsecond, 40 * ms, true},
		{"faults of 20 µs, quiet for a second", 20 * time.Microsecond, time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, rt := newTest(t, WithExchangeRate(DefaultExchangeRate), WithReleaseDelay(20*ms))
			w.fault = tc.fault
			w.releaseCost = int(3 * ms)
			w.r.live, w.liveAfter, w.r.objects = 4*mib, 4*mib, 4*mib
			l := rt.Loop()
			var after []int // releases by the end of each quiet stretch
			for range 6 {
				w.r.free = 4 * mib // the burst's heap, free again after it
				serve(w, l, 100, 20*time.Microsecond, 64*kib)
				end := w.t + tc.gap
				for {
					d, ok := l.NextStep()
					if !ok || w.t+d >= end {
						break
					}
					w.t += d
					l.Waited(d, false)
					l.Step(ms)
					w.run()
				}
				w.t = end
				after = append(after, w.releases)
			}
			assert.Equal(t, 1, after[0], "releases in the first stretch")
			got := after[len(after)-1] - after[1]
			if tc.releases {
				assert.Equal(t, len(after)-2, got, "releases once the stretches were measured")
			} else {
				assert.Zero(t, got, "releases once the stretches were measured")
				assert.Positive(t, rt.Stats().DeclinedRelease)
			}
			assert.Equal(t, tc.fault, rt.Stats().FaultPrice)
		})
	}
}

// busy makes loop l of world w handle n events with work always ready:
// no blocking wait, no idle moment, only the zero-timeout poll that Lull
// asks for finding the next event, and then Busy, as package poller does.
func busy(w *world, l *Loop, n int, alloc uint64) {
	for range n {
		w.alloc(alloc)
		w.t += 10 * time.Microsecond // the handler
		if l.Lull() {
			l.Busy()
		}
	}
}

// A loop that is never idle, in a program with no heap goal, would pile
// its garbage up without bound: Busy starts cycles, never an inline one.
// With a pacer it leaves the garbage to the pacer and does not read the
// heap.
func TestBusyLoopCollectsWithoutAHeapGoal(t *testing.T) {
	for _, procs := range []int{1, 2} {
		w, rt := newTest(t, WithReleaseDelay(0), WithExchangeRate(DefaultExchangeRate))
		w.procs = procs
		w.bgDelay, w.bgCost = 300*time.Microsecond, 300*time.Microsecond
		l := rt.Loop()
		busy(w, l, 20000, 16*kib) // 312 MiB
		s := rt.Stats()
		assert.Zero(t, w.gcs, "GOMAXPROCS=%d: inline cycles in a busy loop", procs)
		assert.Greater(t, s.BusyCycles, uint64(10), "GOMAXPROCS=%d: cycles started while busy", procs)
		assert.Equal(t, s.BusyCycles, s.CyclesBackground, "GOMAXPROCS=%d", procs)
		assert.Less(t, w.peak, uint64(16*mib), "GOMAXPROCS=%d: the heap's peak", procs)
	}

	for _, procs := range []int{1, 2} {
		w, rt := newTest(t, WithReleaseDelay(0), WithExchangeRate(DefaultExchangeRate))
		w.procs = procs
		w.setPacer(100)
		reads := w.reads
		busy(w, rt.Loop(), 20000, 16*kib)
		assert.Zero(t, w.gcs, "GOMAXPROCS=%d: inline cycles in a busy loop with a pacer", procs)
		assert.Positive(t, w.pacerCycles, "GOMAXPROCS=%d", procs)
		// The Runtime was made before the pacer: one look finds the goal.
		assert.LessOrEqual(t, w.reads-reads, 1, "GOMAXPROCS=%d: heap readings by Busy with a pacer", procs)
		assert.Zero(t, rt.Stats().BusyCycles, "GOMAXPROCS=%d: cycles started while busy with a pacer", procs)
	}
}

// A loop seldom idle earns little of the CPU cap, and under GOGC=off the
// stepper is the only collector: its pile must stay within what GOGC=100
// would allow (the live heap, at least 4 MiB) whatever the cap says.
func TestSeldomIdleLoopBoundsAGOGCOffHeap(t *testing.T) {
	for _, procs := range []int{1, 2} {
		w, rt := newTest(t, WithReleaseDelay(0))
		w.procs = procs
		w.bgDelay, w.bgCost = time.Millisecond, 2*time.Millisecond
		l := rt.Loop()
		for range 30000 { // 469 MiB, idle 1 µs of every 11
			w.alloc(16 * kib)
			w.t += 10 * time.Microsecond
			l.Waited(time.Microsecond, true)
			w.t += time.Microsecond
			if l.Lull() {
				l.Busy()
			}
		}
		s := rt.Stats()
		assert.Positive(t, s.Backstops, "GOMAXPROCS=%d: cycles past the cap", procs)
		// 96 here: one per 4.9 MiB. At most one per 4 MiB, and what the
		// cap pays for besides.
		assert.LessOrEqual(t, s.CyclesBackground, uint64(469/4+20), "GOMAXPROCS=%d: cycles", procs)
		assert.Less(t, w.peak, uint64(8*mib), "GOMAXPROCS=%d: the heap's peak: 4 MiB, and what a cycle's mark phase and a look's delay add at this rate", procs)
	}
}

// A stream whose loop falls behind for a while (another process took its
// CPU, or the producer ran ahead) finds work ready at every wait: no idle
// moment for many milliseconds. Where a pacer collects, Busy leaves that
// stretch to it: no cycle of ours is started while the loop has work, and
// the heap is not read. The pacer's pile then stays resident for the rest
// of a stream that is never quiet, as measured here: the price of not
// starting cycles beside busy work, which on this machine's seldom-idle
// loops cost 1.1-1.4x the plain loop's CPU for no lower peak
// (doc/policy.md, "Busy loops").
func TestBusyStretchLeavesThePileToThePacer(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(0), WithExchangeRate(DefaultExchangeRate))
	w.setPacer(100)
	w.bgDelay, w.bgCost = 300*time.Microsecond, 300*time.Microsecond
	l := rt.Loop()
	serve(w, l, 2000, 100*time.Microsecond, 16*kib) // a paced stream: 32 MiB in 0.2 s
	require.Positive(t, w.gcs+w.starts, "cycles of ours in the stream")
	require.Zero(t, w.pacerCycles, "the pacer's cycles in the stream")
	peak, reads := w.peak, w.reads
	w.peak = 0
	for range 1000 { // 41 ms behind: 16 MiB, with work ready at every wait
		w.alloc(16 * kib)
		w.t += 40 * time.Microsecond // the handler
		if l.Lull() {
			l.Busy()
		}
	}
	s := rt.Stats()
	t.Logf("while busy: %d cycles of ours started, %d of the pacer's, peak %d KiB (%d KiB before), %d heap readings", s.BusyCycles, w.pacerCycles, w.peak/kib, peak/kib, w.reads-reads)
	assert.Zero(t, s.BusyCycles, "cycles started while busy")
	assert.Positive(t, w.pacerCycles, "the pacer's cycles while busy")
	assert.Zero(t, w.reads-reads, "heap readings while busy")
	assert.LessOrEqual(t, w.peak, w.r.goal, "the heap's peak while busy: the pacer's goal")
	pacer := w.pacerCycles
	w.peak = 0
	serve(w, l, 2000, 100*time.Microsecond, 16*kib)
	after := rt.Stats()
	ours := after.CyclesInline + after.CyclesBackground - s.CyclesInline - s.CyclesBackground
	t.Logf("after: %d cycles of ours, %d of the pacer's, %d idle moments declined for its pile, %d trims, peak %d KiB", ours, w.pacerCycles-pacer, after.DeclinedCushion, after.Trims, w.peak/kib)
	// The pacer's pages hold the pile: a cycle of ours would lower
	// nothing, and none runs.
	assert.Positive(t, after.DeclinedCushion, "idle moments declined for the resident pile")
	assert.Zero(t, ours, "cycles of ours beside the resident pile")
	assert.LessOrEqual(t, w.peak, w.r.goal, "the heap's peak after: the pacer's goal")
}

// pacedBursts makes loop l of world w read n bursts of a stream paced by
// its producer: 128 KiB in 16 KiB chunks, each read into a fresh buffer
// with the next chunk ready (Busy, as package poller reports it), then an
// idle moment and a blocking wait of gap. A loop that wakes does what
// package poller does with a Deferred: it ends each wait at NextStep
// (never before a tenth of a step budget) and steps, for as long as the
// gap lasts. It reports the wakes.
func pacedBursts(w *world, l *Loop, n int, gap time.Duration, wakes bool) (woke int) {
	for range n {
		wait := gap
		for {
			d, ok := l.NextStep()
			if !wakes || !ok || max(d, ms/10) >= wait {
				break
			}
			d = max(d, ms/10)
			w.t += d
			l.Waited(d, false)
			start := w.t
			l.Step(ms)
			l.Stepped(w.t-start, false)
			wait -= w.t - start + d
			woke++
		}
		w.t += max(wait, 0)
		l.Waited(max(wait, 0), true)
		for i := range 8 {
			w.alloc(16 * kib)
			w.t += 20 * time.Microsecond // the handler
			if i < 7 {
				if l.Lull() {
					l.Busy()
				}
				continue
			}
			if l.Lull() {
				start := w.t
				l.Step(ms)
				l.Stepped(w.t-start, false)
			}
		}
	}
	return woke
}

// A cycle priced at an idle moment falls due in the loop's next blocking
// wait, and NextStep says when: a loop that wakes for it collects on
// time, where one that blocks on lets the pile grow until the next
// burst's idle moment (doc/policy.md, "On time"). The piles compared are
// what the cycles collect on average: the highest pile is the same
// either way here, set by the few started cycles whose mark lets the
// next burst's garbage through.
func TestNextStepWakesTheLoopWhenACycleFallsDue(t *testing.T) {
	piles := map[bool]uint64{}
	for _, wakes := range []bool{false, true} {
		// At this rate and these prices a cycle falls due inside the
		// gap between two bursts, which is what the test is about.
		w, rt := newTest(t, WithReleaseDelay(0), WithExchangeRate(1.5))
		w.setPacer(100)
		w.gcCost = 300 * time.Microsecond
		w.bgDelay, w.bgCost = 300*time.Microsecond, 300*time.Microsecond
		l, other := rt.Loop(), rt.Loop()
		pacedBursts(w, l, 200, 1100*time.Microsecond, wakes) // prices learned
		before := rt.Stats()
		woke := pacedBursts(w, l, 1000, 1100*time.Microsecond, wakes)
		s := rt.Stats()
		cycles := s.CyclesInline + s.CyclesBackground - before.CyclesInline - before.CyclesBackground
		require.Positive(t, cycles, "wakes %v: cycles of ours", wakes)
		assert.Zero(t, w.pacerCycles, "wakes %v: the pacer's cycles", wakes)
		piles[wakes] = (s.AllocatedBetween - before.AllocatedBetween) / cycles
		if wakes {
			assert.Positive(t, woke, "wakes for a cycle")
			// The wait is priced at the faster of the allocation
			// rates, the burst's here, so a wake may come early and
			// be followed by one more, a tenth of a budget later at
			// the least: no spinning.
			assert.LessOrEqual(t, uint64(woke), 2*cycles, "wakes for %d cycles", cycles)
		}
		_, ok := other.NextStep()
		assert.False(t, ok, "wakes %v: NextStep of a loop that priced no cycle", wakes)
		t.Logf("wakes %v: %d cycles, %d wakes, %d KiB a cycle; %+v", wakes, cycles, woke, piles[wakes]>>10, s)
	}
	assert.Less(t, piles[true], piles[false]*9/10, "the pile a cycle collects with wakes against without")
}
