package gcstep

import (
	"cmp"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run against the real runtime. They assert what the policy
// did, never how long it took.

var sink []byte

// garbage allocates n bytes that are dead at once.
func garbage(n int) {
	for i := 0; i < n; i += 16 << 10 {
		sink = make([]byte, 16<<10)
	}
	sink = nil
}

func gogc() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestRuntimeCollectsAfterAllocation(t *testing.T) {
	// GOGC=off: the runtime would otherwise collect on its own, and no
	// rule of the stepper may depend on the heap goal.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	rt := NewRuntime(WithReleaseDelay(0), WithCPUCap(1), eager)
	defer rt.Close()
	rt.Step(time.Hour) // start from a known state
	before := rt.Stats()
	cycles := gcCycles()
	garbage(4 << 20)
	rt.Step(time.Hour) // an hour fits any estimate: the cycle runs inline
	s := rt.Stats()
	equal(t, "inline cycles", s.CyclesInline-before.CyclesInline, 1)
	check(t, gcCycles() > cycles, "the runtime counted no cycle")
	check(t, s.LastAllocatedBetween > 0, "LastAllocatedBetween is zero")
	check(t, s.CycleTime > 0 && s.StepTime >= s.CycleTime, "CycleTime %v, StepTime %v", s.CycleTime, s.StepTime)
	check(t, s.CostEstimate > 0, "no cost estimate")
}

func TestRuntimeIdleRunsNoCycle(t *testing.T) {
	rt := NewRuntime(WithReleaseDelay(0), WithCPUCap(1), eager)
	defer rt.Close()
	garbage(2 << 20)
	rt.Step(time.Hour) // collect what the test binary left behind
	rt.wg.Wait()       // and return it, if that step started a trim
	before := rt.Stats()
	n := 1_000_000
	if testing.Short() {
		n = 10_000
	}
	for range n {
		if rt.Step(time.Hour) {
			t.Fatal("more = true with nothing allocated")
		}
	}
	s := rt.Stats()
	equal(t, "steps", s.Steps-before.Steps, uint64(n))
	equal(t, "cycles inline", s.CyclesInline, before.CyclesInline)
	equal(t, "cycles started", s.CyclesBackground, before.CyclesBackground)
}

func TestRuntimeStepAllocatesNothing(t *testing.T) {
	rt := NewRuntime(WithReleaseDelay(0))
	defer rt.Close()
	allocs := testing.AllocsPerRun(1000, func() { rt.Step(time.Millisecond) })
	equal(t, "allocations per step", allocs, 0)
}

func TestRuntimeBackgroundCycleRestoresGOGC(t *testing.T) {
	old := debug.SetGCPercent(300)
	defer debug.SetGCPercent(old)
	// Free pages left by the tests before would take the garbage as
	// far as the pacer's trigger, and the stepper would leave the
	// cycle to the pacer (DeclinedCushion). The runtime may keep a few
	// MiB free even after FreeOSMemory (3 MiB with the suite run three
	// times): GOGC 300's runway leaves room for them.
	debug.FreeOSMemory()
	rt := NewRuntime(WithReleaseDelay(0), WithCPUCap(1), eager, WithMarkSlack(0.25))
	defer rt.Close()
	garbage(2 << 20)
	time.Sleep(10 * time.Millisecond) // held for longer than a cycle marks
	rt.Step(time.Nanosecond)          // no estimate fits a nanosecond
	if st := rt.Stats(); st.CyclesBackground != 1 {
		// Rare here; the stats say which price or rule declined.
		t.Fatalf("cycles started: got %d, want 1; stats %+v", st.CyclesBackground, st)
	}
	// With WithMarkSlack the cycle marks with a stand-in (see
	// inliner.start); the first dispatch after it has ended puts the
	// program's GOGC back.
	deadline := time.Now().Add(10 * time.Second)
	for {
		garbage(64 << 10) // the runtime starts the cycle at an allocation
		rt.Lull()
		p := gogc()
		if p == 300 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d after 10 s", p)
		}
		runtime.Gosched()
	}
}

func TestRuntimeReleasesMemoryWhenIdle(t *testing.T) {
	rt := NewRuntime(WithReleaseDelay(20 * time.Millisecond))
	defer rt.Close()
	garbage(8 << 20)
	rt.Step(time.Millisecond)
	d, armed := rt.NextStep()
	require.True(t, armed, "NextStep: no release armed after 8 MiB of garbage")
	// What an event loop does: sleep until NextStep says, then step.
	// Garbage made meanwhile (by the test framework) starts the stretch
	// again, so try a few times. The release runs on a goroutine of its
	// own: the step that starts it returns at once.
	for i := 0; rt.Stats().QuietPeriods == 0 && i < 100; i++ {
		time.Sleep(d)
		rt.Step(time.Millisecond)
		if d, armed = rt.NextStep(); !armed {
			break
		}
	}
	require.EqualValues(t, 1, rt.Stats().QuietPeriods)
	require.Eventually(t, func() bool { return rt.Stats().Releases == 1 }, 10*time.Second, time.Millisecond)
	assert.Positive(t, rt.Stats().ReleaseTime)
}

// The reproduction of issue 11: garbage made after a cycle the runtime ran
// and before the next step used to be invisible, and no cycle ran.
func TestRuntimeCountsGarbageAfterTheRuntimesCycle(t *testing.T) {
	rt := NewRuntime()
	defer rt.Close()
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	garbage(64 << 20)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		rt.Step(5 * time.Millisecond)
		if s := rt.Stats(); s.CyclesInline+s.CyclesBackground > 0 {
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	s := rt.Stats()
	require.Positive(t, s.CyclesInline+s.CyclesBackground, "no cycle for 64 MiB of garbage: %+v", s)
	assert.GreaterOrEqual(t, s.LastAllocatedBetween, uint64(60<<20), "garbage counted")
}

// A started cycle restores the program's GOGC at once; at GOGC=off it
// leaves a stand-in with a finite goal until the cycle has ended (see
// inliner), and settle puts off back then.
func TestRuntimeStartsABackgroundCycleAndRestoresGOGCAtOnce(t *testing.T) {
	for _, percent := range []int{-1, 150} {
		old := debug.SetGCPercent(percent)
		in := newInliner()
		in.cycle(100*time.Millisecond, markGoal{}) // a known state
		cycles := gcCycles()
		garbage(2 << 20)
		w, started := in.start(100*time.Millisecond, markGoal{})
		now := gogc()
		require.Eventually(t, func() bool { return gcCycles() > cycles }, 10*time.Second, time.Millisecond)
		in.settle(nil, false)
		after := gogc()
		debug.SetGCPercent(old)
		assert.True(t, started)
		assert.False(t, w.kept)
		assert.Equal(t, percent, w.before)
		if percent < 0 && noMemoryLimit() {
			assert.Positive(t, now, "GOGC right after the start: the stand-in")
		} else {
			assert.EqualValues(t, percent, now, "GOGC right after the start")
		}
		assert.EqualValues(t, percent, after, "GOGC once the cycle has ended")
	}
}

// A started cycle given slack marks with a stand-in GOGC whose heap goal
// is slack above the heap; readings meanwhile report the program's GOGC
// and goal, and the program's GOGC is back once the cycle has ended,
// unless the program set its own meanwhile.
func TestStartedCycleMarksWithinItsSlack(t *testing.T) {
	for _, own := range []int{0, 150} {
		old := debug.SetGCPercent(100)
		in := newInliner()
		in.cycle(100*time.Millisecond, markGoal{}) // a known state
		m := newMetricsReader()
		var before, during reading
		m.read(&before)
		cycles := gcCycles()
		garbage(1 << 20) // under GOGC=100's 4 MiB goal: no cycle of the runtime's
		_, started := in.start(100*time.Millisecond, markGoal{slack: 256 << 10})
		standIn := gogc()
		m.read(&during)
		in.programs(&during)
		if own != 0 {
			debug.SetGCPercent(own)
		}
		require.Eventually(t, func() bool { return gcCycles() > cycles }, 10*time.Second, time.Millisecond)
		in.settle(nil, false)
		after := debug.SetGCPercent(old)
		require.True(t, started)
		assert.Greater(t, standIn, int64(nudgedGOGC), "GOGC while the cycle marks")
		assert.Less(t, standIn, int64(100), "GOGC while the cycle marks")
		assert.Equal(t, 100, during.gogc, "GOGC read while the cycle marks")
		assert.Equal(t, before.goal, during.goal, "heap goal read while the cycle marks")
		assert.Equal(t, cmp.Or(own, 100), after, "GOGC once the cycle has ended")
	}
}

// markGOGC is the least GOGC whose heap goal reaches slack above the
// heap, where the runtime's 4 MiB minimum sets the goal and where the
// live heap does.
func TestMarkGOGCSetsTheGoalSlackAboveTheHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	var keep [][]byte
	for _, live := range []int{0, 16 << 20} {
		for range live / (64 << 10) {
			keep = append(keep, make([]byte, 64<<10))
		}
		runtime.GC()
		in := newInliner()
		metrics.Read(in.m)
		const slack = 1 << 20
		target := in.m[3].Value.Uint64() + slack
		g := markGOGC(in.m, slack)
		// No allocation between setting GOGC and reading the goal: the
		// heap may be over the new trigger.
		debug.SetGCPercent(g)
		metrics.Read(in.s)
		goal := in.s[1].Value.Uint64()
		debug.SetGCPercent(g - 1)
		metrics.Read(in.s)
		below := in.s[1].Value.Uint64()
		debug.SetGCPercent(100)
		assert.GreaterOrEqual(t, goal, target, "live %d MiB: the goal at GOGC=%d", live>>20, g)
		if g > nudgedGOGC+1 {
			assert.Less(t, below, target, "live %d MiB: the goal at GOGC=%d", live>>20, g-1)
		}
	}
	runtime.KeepAlive(keep)
	debug.FreeOSMemory() // 16 MiB of free pages would be the next tests' cushion
}

func TestRuntimeInlineCycleRestoresGOGC(t *testing.T) {
	for _, percent := range []int{-1, 150} {
		old := debug.SetGCPercent(percent)
		rt := NewRuntime(WithReleaseDelay(0), WithCPUCap(1), eager)
		rt.Step(time.Hour) // start from a known state
		before := rt.Stats().CyclesInline
		cycles := gcCycles()
		garbage(2 << 20)
		rt.Step(time.Hour)
		rt.Close()
		now := debug.SetGCPercent(old)
		equal(t, "GOGC after an inline cycle", now, percent)
		if st := rt.Stats(); st.CyclesInline-before != 1 {
			t.Errorf("GOGC=%d: inline cycles: got %d, want 1; stats %+v", percent, st.CyclesInline-before, st)
		}
		check(t, gcCycles() > cycles, "GOGC=%d: the runtime counted no cycle", percent)
	}
}

func TestInlinerCollects(t *testing.T) {
	// What the inline cycle leaves: the garbage is unreachable and, once
	// swept, no longer counted as live.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	in := newInliner()
	in.cycle(100*time.Millisecond, markGoal{}) // whatever the test binary left
	live := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	keep := make([][]byte, 64) // 1 MiB, live until the KeepAlive below
	for i := range keep {
		keep[i] = make([]byte, 16<<10)
	}
	in.cycle(100*time.Millisecond, markGoal{})
	withKeep := live()
	runtime.KeepAlive(keep)
	in.cycle(100*time.Millisecond, markGoal{})
	check(t, live()+(512<<10) < withKeep, "live heap %d after dropping 1 MiB, %d before", live(), withKeep)
}

func TestInlinerWaitsForTheSweepNotForRuntimeGC(t *testing.T) {
	// Back-to-back cycles: each starts while the last one's garbage may
	// not all be swept, which blocks the trigger; yielding to the
	// background sweeper lets the next cycle start without runtime.GC.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	forced := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	in := newInliner()
	in.cycle(100*time.Millisecond, markGoal{})
	f0, c0 := forced(), gcCycles()
	const n = 20
	for range n {
		garbage(1 << 20)
		in.cycle(100*time.Millisecond, markGoal{})
	}
	equal(t, "cycles", gcCycles()-c0, n)
	// How many needed runtime.GC depends on how soon the sweeper gets a
	// processor (under the race detector, on a loaded machine, it may
	// not within the 50 ms each step here allows); that some did not is
	// what the test asks.
	check(t, forced()-f0 < n, "all %d cycles fell back to runtime.GC", n)
}

// What a sync.Pool holds survives one cycle in the pool's victim cache: a
// release collects twice, so that a burst's pooled buffers are freed and
// returned too.
func TestReleaseFreesWhatPoolsHold(t *testing.T) {
	heap := func() uint64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	var pool sync.Pool
	runtime.GC()
	buf := make([]byte, 8<<20)
	pool.Put(&buf)
	before := heap()
	realEnv().release()
	after := heap()
	runtime.KeepAlive(&pool)
	assert.GreaterOrEqual(t, int64(before)-int64(after), int64(7<<20), "heap objects %d before the release, %d after", before, after)
}

// markHeap is a live heap of a million pointers, which takes milliseconds
// to mark: a cycle started over it is still marking while the test
// allocates.
func markHeap() []*[4]int {
	live := make([]*[4]int, 1<<20)
	for i := range live {
		live[i] = new([4]int)
	}
	return live
}

// A started cycle armed with an allowance marks at the program's goal
// until the program has allocated that much during its mark, then with a
// stand-in whose goal is its slack above the heap, and is overdue (see
// Runtime.awaitMark); the program's GOGC is back once the cycle has
// ended. One whose allowance is never used up keeps the program's goal
// throughout, and one of a program at GOGC=off offStandIn's (see
// TestOffCyclesLeaveMetadataPagesSmall), overdue all the same. An inline
// cycle that outlives its budget goes on as a started one does; one that
// ends within it has nothing left to take a goal for.
func TestStartedCycleTakesItsGoalPastItsAllowance(t *testing.T) {
	live := markHeap()
	for _, c := range []struct {
		own     int
		after   uint64
		inline  time.Duration // an inline cycle with this budget, not a started one
		set     bool
		overdue bool
	}{
		{100, 1 << 20, 0, true, true},
		{100, 1 << 40, 0, false, false},
		{-1, 1 << 20, 0, false, true},
		{100, 1 << 20, time.Microsecond, true, true}, // it outlives its budget
		{100, 1 << 20, 10 * time.Second, false, false},
	} {
		old := debug.SetGCPercent(c.own)
		in := newInliner()
		runtime.GC() // no cycle in flight
		// Past the trigger at GOGC=1 (the kick's), a few hundred KiB
		// above this live heap, so that the kick starts the cycle.
		garbage(2 << 20)
		cycles := gcCycles()
		g := markGoal{slack: 256 << 10, after: c.after}
		started := true
		if c.inline > 0 {
			in.cycle(c.inline, g)
			if c.set {
				require.Equal(t, cycles, gcCycles(), "the inline cycle ended within %v", c.inline)
			}
		} else {
			_, started = in.start(100*time.Millisecond, g)
		}
		first := gogc()
		lowest, set, ended, overdue := first, false, false, false
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			ended = gcCycles() > cycles
			if ended {
				break
			}
			garbage(64 << 10)
			set = in.settle(nil, false) || set
			overdue = overdue || in.overdue == cycles+1
			if g := gogc(); gcCycles() == cycles {
				lowest = min(lowest, g) // not yet put back
			}
		}
		require.Eventually(t, func() bool { return gcCycles() > cycles }, 10*time.Second, time.Millisecond)
		in.settle(nil, false)
		after := debug.SetGCPercent(old)
		require.True(t, started)
		require.True(t, ended || c.inline > 0 && !c.set, "own %d, after %d: the cycle did not end", c.own, c.after)
		want := int64(c.own)
		if c.own < 0 {
			want = offStandIn
		}
		assert.Equal(t, want, first, "own %d, after %d: GOGC right after the start", c.own, c.after)
		assert.Equal(t, c.set, set, "own %d, after %d, inline %v: the goal set", c.own, c.after, c.inline)
		assert.Equal(t, c.overdue, overdue, "own %d, after %d, inline %v: overdue", c.own, c.after, c.inline)
		if c.set {
			assert.Less(t, lowest, int64(c.own), "own %d: GOGC once the allowance was used up", c.own)
			assert.Greater(t, lowest, int64(nudgedGOGC), "own %d: GOGC once the allowance was used up", c.own)
		} else {
			assert.Equal(t, first, lowest, "own %d, after %d, inline %v: GOGC while the cycle marked (set %v)", c.own, c.after, c.inline, set)
		}
		assert.Equal(t, c.own, after, "own %d, after %d: GOGC once the cycle has ended", c.own, c.after)
	}
	runtime.KeepAlive(live)
}

// await sleeps while a cycle marks: it returns once the cycle has ended,
// or once its budget is spent.
func TestAwaitReturnsWhenTheMarkEnds(t *testing.T) {
	live := markHeap()
	in := newInliner()
	runtime.GC() // no cycle in flight
	garbage(2 << 20)
	cycles := gcCycles()
	_, started := in.start(100*time.Millisecond, markGoal{})
	require.True(t, started)
	d := in.await(10*time.Second, cycles)
	assert.Greater(t, gcCycles(), cycles, "the count after the wait")
	assert.Less(t, d, 10*time.Second, "the wait for a cycle that ended")
	now := gcCycles()
	d = in.await(2*time.Millisecond, now)
	if gcCycles() == now {
		assert.GreaterOrEqual(t, d, 2*time.Millisecond, "the wait with no cycle marking")
	}
	in.settle(nil, true)
	runtime.KeepAlive(live)
}

// By default a Runtime's started cycle takes its goal once the program
// has allocated half its pile during the mark, from a dispatch (Lull):
// Stats.MarkGoals counts it, and the program's GOGC is back after the
// cycle.
func TestRuntimeStartedCycleTakesItsGoalAtADispatch(t *testing.T) {
	old := debug.SetGCPercent(300)
	defer debug.SetGCPercent(old)
	live := markHeap()
	debug.FreeOSMemory() // see TestRuntimeBackgroundCycleRestoresGOGC
	rt := NewRuntime(WithReleaseDelay(0), WithCPUCap(1), eager)
	defer rt.Close()
	garbage(2 << 20)
	time.Sleep(10 * time.Millisecond)
	cycles := gcCycles()
	rt.Step(time.Nanosecond) // no estimate fits a nanosecond
	if st := rt.Stats(); st.CyclesBackground != 1 {
		t.Fatalf("cycles started: got %d, want 1; stats %+v", st.CyclesBackground, st)
	}
	lowest := gogc()
	for deadline := time.Now().Add(10 * time.Second); gcCycles() == cycles && time.Now().Before(deadline); {
		garbage(64 << 10)
		rt.Lull()
		lowest = min(lowest, gogc())
	}
	require.Eventually(t, func() bool {
		garbage(64 << 10)
		rt.Lull()
		return gogc() == 300
	}, 10*time.Second, time.Millisecond, "GOGC not back after the cycle")
	assert.EqualValues(t, 1, rt.Stats().MarkGoals)
	assert.Less(t, lowest, int64(300), "GOGC while the cycle marked past its allowance")
	runtime.KeepAlive(live)
}
