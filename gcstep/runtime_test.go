package gcstep

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	kib = 1 << 10
	mib = 1 << 20
	// minG is the default collection threshold, which the rule tests
	// step around.
	minG = DefaultMinGarbage
	ms   = time.Millisecond
)

// eager prices memory so high that every cycle pays as soon as
// WithMinGarbage allows and any time has passed: newTest's default, for
// the tests of the mechanics around a cycle (the cap, the estimate,
// GOGC). The tests of the prices set their own rate.
var eager = WithExchangeRate(1e12)

func newTest(t *testing.T, opts ...Option) (*world, *Runtime) {
	t.Helper()
	w := newWorld()
	w.r.allocs = 10 * mib
	w.r.cycles = 3
	return w, newRuntime(w.env(), append([]Option{eager}, opts...)...)
}

func TestIdleProgramRunsNoCycle(t *testing.T) {
	w, rt := newTest(t)
	for i := range 1_000_000 {
		w.t += time.Microsecond
		require.False(t, rt.Step(ms), "step %d: more = true with nothing to do", i)
	}
	assert.EqualValues(t, 1_000_000, rt.Stats().Steps)
	assert.Zero(t, w.gcs, "inline cycles")
	assert.Zero(t, w.starts, "background cycles")
	_, armed := rt.NextStep()
	assert.False(t, armed, "release armed")
}

func TestCollectsOnceAllocatedEnough(t *testing.T) {
	tests := []struct {
		name  string
		live  uint64
		alloc uint64
		want  int
	}{
		{"below MinGarbage", 0, minG - 1, 0},
		{"at MinGarbage", 0, minG, 1},
		{"small live heap: MinGarbage rules", minG, minG, 1},
		// Nothing else collects (the goal is out of reach, as with
		// GOGC=off): garbage allocated by a program that stopped
		// allocating would stay for ever, whatever the heap.
		{"large live heap, allocation stopped", 64 * mib, 31 * mib, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, rt := newTest(t, WithCPUCap(1))
			w.r.live = tt.live
			w.alloc(tt.alloc)
			w.gcCost = 0
			rt.Step(time.Second) // the model fits a second even at 64 MiB
			assert.Equal(t, tt.want, w.gcs, "inline cycles")
		})
	}
}

func TestRearmsOnlyAfterAllocation(t *testing.T) {
	w, rt := newTest(t)
	w.alloc(2 * mib)
	assert.False(t, rt.Step(ms), "more after the cycle")
	require.Equal(t, 1, w.gcs, "inline cycles")
	for range 1000 {
		w.t += 10 * ms
		rt.Step(ms)
	}
	w.run() // the release of the quiet stretch
	assert.Equal(t, 1, w.gcs, "inline cycles without new allocation")
	w.alloc(mib)
	w.t += 10 * ms
	rt.Step(ms)
	assert.Equal(t, 2, w.gcs, "inline cycles after allocation")
	s := rt.Stats()
	assert.EqualValues(t, 2, s.CyclesInline)
	assert.EqualValues(t, 3*mib, s.AllocatedBetween)
	assert.EqualValues(t, mib, s.LastAllocatedBetween)
}

func TestCycleRunByRuntimeResetsTheCount(t *testing.T) {
	w, rt := newTest(t)
	w.alloc(3 * mib)
	rt.Step(0) // the step looks after the allocation...
	w.collected()
	assert.False(t, rt.Step(ms), "more")
	assert.Zero(t, w.gcs, "inline cycles")
	w.alloc(minG - 1)
	rt.Step(ms)
	assert.Zero(t, w.gcs, "inline cycles below the threshold since the runtime's")
	w.alloc(1)
	rt.Step(ms)
	assert.Equal(t, 1, w.gcs, "inline cycles at the threshold")
}

// The bug of issue 11: garbage made between a cycle the runtime ran and
// the next step was never counted. Here the program allocates 64 MiB after
// the runtime's cycle and before any step: it must be collected.
func TestGarbageAfterTheRuntimesCycleCounts(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(0))
	w.collected() // runtime.GC(), then debug.SetGCPercent(-1)
	w.alloc(64 * mib)
	for range 30_000 { // Step(5ms) every 100 µs for 3 s
		w.t += 100 * time.Microsecond
		rt.Step(5 * ms)
		if w.gcs > 0 {
			break
		}
	}
	s := rt.Stats()
	assert.Equal(t, 1, w.gcs, "inline cycles")
	assert.EqualValues(t, 64*mib, s.LastAllocatedBetween)

	// Garbage not yet swept after a cycle is not new garbage: the
	// allocation since the last look bounds it.
	w, rt = newTest(t, WithReleaseDelay(0))
	w.alloc(mib)
	rt.Step(0)
	w.r.cycles++ // a cycle whose garbage is still unswept
	w.r.live = 0
	rt.Step(ms)
	assert.Zero(t, w.gcs, "inline cycles for unswept garbage")
}

func TestZeroBudgetOnlyLooks(t *testing.T) {
	for _, budget := range []time.Duration{0, -1, -time.Hour} {
		w, rt := newTest(t)
		assert.False(t, rt.Step(budget), "more with nothing due")
		w.alloc(mib)
		assert.True(t, rt.Step(budget), "more with a cycle due")
		assert.Zero(t, w.gcs+w.starts, "cycles on a zero budget")
		rt.Step(ms)
		assert.Equal(t, 1, w.gcs, "inline cycles")
		assert.False(t, rt.Step(budget), "more after the cycle")
	}
}

func TestInlineOnlyWhenTheEstimateFits(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(1), WithBackground(false))
	w.alloc(mib)
	// Before any measurement the estimate is the model: modelFixed on
	// an empty heap; 0.9 of this budget is less.
	rt.Step(modelFixed)
	assert.Zero(t, w.gcs, "inline cycles")
	assert.EqualValues(t, 1, rt.Stats().DeclinedBudget)
	rt.Step(2 * modelFixed)
	assert.Equal(t, 1, w.gcs, "inline cycles with a larger budget")
}

func TestCostEstimateLearnsAndRelaxes(t *testing.T) {
	w, rt := newTest(t, eager, WithCPUCap(1), WithBackground(false), WithReleaseDelay(0))

	// One cycle sixteen times slower than the model is a tail event: the
	// estimate stays where the median of the recent cycles puts it.
	w.gcCost = 16 * modelFixed
	w.alloc(mib)
	rt.Step(ms)
	require.Equal(t, 1, w.gcs)
	assert.Less(t, rt.Stats().CostEstimate, 2*modelFixed, "one slow cycle must not move it")
	w.gcCost = modelFixed
	w.alloc(mib)
	rt.Step(ms)
	require.Equal(t, 2, w.gcs, "inline cycles after one slow one")

	// A streak of slow cycles moves it once it fills all but costRank of
	// the window; then a cycle that no longer fits does not run inline.
	w.gcCost = 16 * modelFixed
	slow := 0
	for slow < costWindow {
		w.alloc(mib)
		rt.Step(ms)
		slow++
		if float64(rt.Stats().CostEstimate) > planFactor*float64(ms) {
			break
		}
	}
	assert.Equal(t, costWindow-costRank-1, slow, "slow cycles in a row before the estimate moved")
	assert.Greater(t, rt.Stats().CostEstimate, 8*modelFixed)
	w.alloc(mib)
	gcs := w.gcs
	rt.Step(ms)
	require.Equal(t, gcs, w.gcs, "inline cycles once the estimate exceeds the budget")
	assert.Positive(t, rt.Stats().DeclinedBudget)

	// Without measurements a pessimistic estimate relaxes to the model.
	w.t += 20 * factorHalfLife
	w.gcCost = modelFixed
	rt.Step(ms)
	assert.Equal(t, gcs+1, w.gcs, "inline cycles once the estimate relaxed")
	assert.Less(t, rt.Stats().CostEstimate, 2*modelFixed)
}

func TestBackgroundCycleDoesNotHoldGOGC(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(1))
	w.r.live, w.liveAfter = 64*mib, 64*mib // the model says 64 ms
	w.alloc(32 * mib)
	w.t += time.Second // held long enough to pay for what a background cycle misses while it marks
	assert.False(t, rt.Step(ms), "more")
	assert.Zero(t, w.gcs, "inline cycles")
	require.Equal(t, 1, w.starts, "background cycles")
	assert.Equal(t, 100, w.gogc, "GOGC once the cycle started")
	assert.EqualValues(t, 1, rt.Stats().CyclesBackground)

	// Until the cycle completes, steps start no other.
	w.alloc(32 * mib)
	rt.Step(ms)
	assert.Equal(t, 1, w.starts, "background cycles while one is pending")
	w.collected()
	rt.Step(0) // a look
	w.alloc(32 * mib)
	w.t += time.Second // held long enough to pay for what a background cycle misses while it marks
	rt.Step(ms)
	assert.Equal(t, 2, w.starts, "background cycles once it completed")

	// A cycle that never completes (it could not start after all, under
	// GOGC=off nobody else collects) is given up after a while.
	w.alloc(32 * mib)
	w.t += 2 * backgroundTimeout
	rt.Step(ms)
	assert.Equal(t, 3, w.starts, "background cycles after one that never completed")
}

func TestBackgroundCycleThatCouldNotStart(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(1))
	w.r.live, w.liveAfter = 64*mib, 64*mib
	w.noStart = true
	w.alloc(32 * mib)
	w.t += time.Second // held long enough to pay for what a background cycle misses while it marks
	rt.Step(ms)
	assert.Zero(t, rt.Stats().CyclesBackground)
	assert.Zero(t, rt.Stats().Charged, "charged for a cycle that did not start")
	w.noStart = false
	rt.Step(ms)
	assert.EqualValues(t, 1, rt.Stats().CyclesBackground, "the next step starts it")
}

// Issue 13, item 1: a program that saves and restores GOGC inside a
// step's window reads the step's value and would put it back for good.
func TestProgramSaveRestoreInsideAWindow(t *testing.T) {
	for _, kind := range []string{"background", "inline"} {
		t.Run(kind, func(t *testing.T) {
			w, rt := newTest(t, WithCPUCap(1))
			if kind == "background" {
				w.r.live, w.liveAfter = 64*mib, 64*mib
			}
			var saved int
			w.inWindow = func() { saved = w.setGOGC(200) } // old := debug.SetGCPercent(200)
			w.alloc(32 * mib)
			w.t += time.Second // held long enough to pay for what a background cycle misses while it marks
			rt.Step(ms)
			w.inWindow = nil
			require.Equal(t, 1, w.gcs+w.starts)
			assert.Equal(t, 200, w.gogc, "the program's own setting inside the window is kept")
			assert.Equal(t, nudgedGOGC, saved, "the program read the step's value")

			w.setGOGC(saved) // later: debug.SetGCPercent(old)
			rt.Step(ms)
			assert.Equal(t, 100, w.gogc, "GOGC after the program restored what it read")
			assert.EqualValues(t, 1, rt.Stats().GOGCRepaired)

			// A program that moves on to a value of its own is left alone.
			w.setGOGC(300)
			rt.Step(ms)
			w.setGOGC(nudgedGOGC)
			rt.Step(ms)
			assert.Equal(t, nudgedGOGC, w.gogc, "a GOGC the program set later, outside any window")
		})
	}
}

func TestGOGCRestoredAtEveryGOGC(t *testing.T) {
	for _, gogc := range []int{-1, 50, 100, 400} {
		for _, live := range []uint64{0, 64 * mib} { // inline, background
			w, rt := newTest(t, WithCPUCap(1))
			w.gogc = gogc
			w.r.live = live
			w.alloc(64 * mib)
			w.t += time.Second // held long enough to pay for what a background cycle misses while it marks
			rt.Step(ms)
			require.Equal(t, 1, w.gcs+w.starts)
			assert.Equal(t, gogc, w.gogc, "GOGC %d after a step, live %d", gogc, live)
		}
	}
}

func TestCPUCapHolds(t *testing.T) {
	for _, cpuCap := range []float64{0.01, 0.05, 0.3, 1} {
		w, rt := newTest(t, eager, WithCPUCap(cpuCap), WithBackground(false))
		w.farLimit() // a pile with no bound of its own: only the cap stops cycles
		w.gcCost = 200 * time.Microsecond
		for w.t < 100*time.Second {
			w.alloc(mib) // a program that allocates and is idle often
			rt.Step(ms)
			w.t += 100 * time.Microsecond
		}
		s := rt.Stats()
		// The bucket starts full: one window's worth on top of the share.
		allowed := time.Duration(cpuCap * float64(w.t+defaults().capWindow))
		assert.LessOrEqual(t, s.CycleTime, allowed, "cap %v", cpuCap)
		if cpuCap < 0.5 { // above, the loop itself leaves less than the cap
			assert.GreaterOrEqual(t, s.CycleTime, allowed*8/10, "cap %v: the share must be used", cpuCap)
			assert.Positive(t, s.DeclinedCap, "cap %v: no cycle declined", cpuCap)
		}
	}
}

func TestCPUCapChargesBackgroundCycles(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(0.01), WithReleaseDelay(0)) // bucket: 1 ms
	w.r.live, w.liveAfter = 64*mib, 64*mib                     // estimate 64 ms: more than the bucket
	w.alloc(32 * mib)
	w.t += time.Second // held long enough to pay for what a background cycle misses while it marks
	rt.Step(ms)
	require.Equal(t, 1, w.starts, "background cycles from a full bucket")
	w.gcCPU += 64 * ms // as dear as estimated
	w.collected()
	rt.Step(ms) // sees the cycle: garbage counts from here
	w.alloc(32 * mib)
	w.t += time.Second
	rt.Step(ms)
	assert.Equal(t, 1, w.starts, "background cycles while in debt")
	assert.EqualValues(t, 1, rt.Stats().DeclinedCap)
	w.t += 10 * time.Second
	rt.Step(ms)
	assert.Equal(t, 2, w.starts, "background cycles once the debt is paid")
}

func TestConcurrentSteps(t *testing.T) {
	w, rt := newTest(t)
	var inner bool
	var zero sync.WaitGroup
	w.onGC = func() {
		// Another goroutine steps while this one is in a cycle: with a
		// budget it leaves the work to this one at once...
		inner = rt.Step(ms)
		// ...with a zero budget it waits for this step to end, and
		// answers from what it then sees.
		zero.Go(func() { rt.Step(0) })
	}
	w.alloc(mib)
	rt.Step(ms)
	zero.Wait()
	assert.False(t, inner, "more from a concurrent step")
	assert.EqualValues(t, 2, rt.Stats().Steps, "steps counted: this one and the zero-budget one")
	assert.Equal(t, 1, w.gcs, "inline cycles")
}

func TestCloseEndsSteps(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(1))
	rt.Close()
	w.alloc(32 * mib)
	assert.False(t, rt.Step(time.Hour), "more after Close")
	assert.Zero(t, w.gcs+w.starts)
	_, armed := rt.NextStep()
	assert.False(t, armed)
}

func TestOptionsOutOfRangePanic(t *testing.T) {
	tests := []struct {
		name string
		opt  Option
	}{
		{"negative cap", WithCPUCap(-0.1)},
		{"zero cap", WithCPUCap(0)},
		{"cap above one", WithCPUCap(1.5)},
		{"NaN cap", WithCPUCap(math.NaN())},
		{"zero rate", WithExchangeRate(0)},
		{"negative rate", WithExchangeRate(-1)},
		{"NaN rate", WithExchangeRate(math.NaN())},
		{"infinite rate", WithExchangeRate(math.Inf(1))},
		{"zero garbage", WithMinGarbage(0)},
		{"negative delay", WithReleaseDelay(-time.Second)},
		{"negative slack", WithMarkSlack(-0.25)},
		{"NaN slack", WithMarkSlack(math.NaN())},
		{"infinite slack", WithMarkSlack(math.Inf(1))},
		{"negative allowance", WithMarkAllowance(-0.5)},
		{"NaN allowance", WithMarkAllowance(math.NaN())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				assert.Regexp(t, "^gcstep: ", msg)
			}()
			newRuntime(newWorld().env(), tt.opt)
		})
	}
}

func TestNilOptionSkipped(t *testing.T) {
	_, rt := newTest(t, nil, WithCPUCap(0.5), nil)
	assert.Equal(t, 0.5, rt.cfg.cpuCap)
}

func TestOptionsInRangeAccepted(t *testing.T) {
	_, rt := newTest(t, WithCPUCap(1), WithCPUCap(0.001), WithExchangeRate(1e-9), WithExchangeRate(1e9),
		WithMinGarbage(1), WithReleaseDelay(0), WithBackground(false), WithMarkSlack(0.25))
	assert.Equal(t, 0.001, rt.cfg.cpuCap)
	assert.Equal(t, 0.25, rt.cfg.markSlack)
	for _, share := range []float64{0, 0.5, math.Inf(1)} {
		_, rt := newTest(t, WithMarkAllowance(share))
		assert.Equal(t, share, rt.cfg.markAllowance)
	}
	assert.EqualValues(t, 1, rt.cfg.minGarbage)
	assert.Equal(t, 1e9, rt.cfg.exchange)
	assert.False(t, rt.cfg.background)
	assert.Zero(t, rt.cfg.releaseDelay)
}

func TestZeroBudgetHonestAboutTheCap(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(0.001)) // bucket: 0.1 ms
	w.gcCost = 5 * ms
	w.alloc(mib)
	rt.Step(ms)
	require.Equal(t, 1, w.gcs)
	w.alloc(mib)
	assert.False(t, rt.Step(0), "more while the cap is spent")
	w.t += 10 * time.Second
	assert.True(t, rt.Step(0), "more once the cap allows")
}

func TestBackgroundCycleChargedWhatItUsed(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(0.5))   // bucket: 50 ms
	w.farLimit()                           // only the cap stops cycles
	w.r.live, w.liveAfter = 16*mib, 16*mib // estimate: about 16 ms, half of it before one was measured
	w.gcCPU = time.Hour
	w.alloc(32 * mib)
	w.t += time.Second // held long enough to pay for what a background cycle misses while it marks
	rt.Step(ms)
	require.Equal(t, 1, w.starts)
	est := rt.Stats().Charged
	assert.True(t, est > 8*ms && est < 9*ms, "charged %v in advance, want the estimate", est)
	w.gcCPU += 5 * ms // the cycle was cheaper than estimated
	w.collected()
	rt.Step(ms)
	assert.Equal(t, 5*ms, rt.Stats().Charged)

	w.alloc(32 * mib)
	w.t += time.Second // held long enough to pay for what a background cycle misses while it marks
	rt.Step(ms)
	require.Equal(t, 2, w.starts)
	w.gcCPU += 500 * ms // much dearer: the debt blocks the next
	w.collected()
	rt.Step(ms)
	assert.Equal(t, 505*ms, rt.Stats().Charged)
	w.alloc(32 * mib)
	w.t += 500 * ms // earns 250 ms of a debt of about 450
	rt.Step(ms)
	assert.Equal(t, 2, w.starts, "background cycles while in debt")
}

func TestCapEarnedFromIdleTime(t *testing.T) {
	// Bucket: 50 ms. Each cycle costs 40 ms, far above the model, but the
	// estimate (the median of nine) stays at the model: only the cap
	// stops cycles here.
	w, rt := newTest(t, WithCPUCap(0.5), WithBackground(false), WithReleaseDelay(0))
	w.gcCost = 40 * ms
	rt.Idled(0) // not a report: the cap is still earned from wall time
	rt.Idled(-ms)
	w.alloc(mib)
	rt.Step(time.Second)
	require.Equal(t, 1, w.gcs, "inline cycles from the full bucket")
	w.alloc(mib)
	w.t += time.Second // wall time earns the bucket back
	rt.Step(time.Second)
	require.Equal(t, 2, w.gcs, "inline cycles after a second of wall time")

	// From the first report on, only reported idle time earns.
	rt.Idled(2 * ms)
	w.alloc(mib)
	rt.Step(time.Second) // 10 ms + 1 ms left: one more
	require.Equal(t, 3, w.gcs)
	w.alloc(mib)
	w.t += time.Second
	rt.Step(time.Second) // 29 ms in debt
	assert.Equal(t, 3, w.gcs, "inline cycles after a busy second")
	assert.EqualValues(t, 1, rt.Stats().DeclinedCap)
	rt.Idled(60 * ms) // earns 30 ms
	rt.Step(time.Second)
	assert.Equal(t, 4, w.gcs, "inline cycles once idle time paid the debt")
}

func TestOverrunsCounted(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(1))
	w.gcCost = 3 * ms // the estimate said 0.25 ms
	w.alloc(mib)
	rt.Step(ms)
	s := rt.Stats()
	assert.EqualValues(t, 1, s.Overruns)
	assert.Equal(t, 2*ms, s.OverrunTime)
}

// On a machine where every cycle costs more than the budget, the relaxed
// estimate keeps letting one run, and each overruns: the relaxation backs
// off. Once cycles are cheap again it comes back within about a second.
func TestSlowMachineBacksOffTheRelaxation(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(1), WithBackground(false), WithReleaseDelay(0))
	w.gcCost = 5 * modelFixed // 1.25 ms: over the budget
	run := func(d time.Duration) {
		for end := w.t + d; w.t < end; {
			w.alloc(minG)
			rt.Step(ms)
			w.t += 100 * time.Microsecond
		}
	}
	run(10 * time.Second)
	s := rt.Stats()
	// A fixed 50 ms half-life retried every few ms: thousands of cycles.
	assert.Less(t, w.gcs, 50, "cycles on a slow machine")
	assert.Greater(t, w.gcs, 5, "it must keep trying")
	assert.Equal(t, s.Overruns, uint64(w.gcs), "every one of them overran")

	w.gcCost = modelFixed / 2
	slow := w.gcs
	run(1500 * time.Millisecond)
	assert.Greater(t, w.gcs-slow, 100, "cycles once they are cheap again")
}

// An inline cycle still marking when its step's budget ran out goes on
// concurrently: no other cycle starts or is waited for until it completes,
// and the collector's CPU meanwhile is charged to the cap.
func TestInlineCycleThatOutlivesItsStep(t *testing.T) {
	w, rt := newTest(t, eager, WithCPUCap(1), WithReleaseDelay(0))
	w.unended = true
	w.alloc(mib)
	rt.Step(ms)
	require.Equal(t, 1, w.gcs)
	charged := rt.Stats().Charged
	for range 10 {
		w.alloc(mib)
		w.t += ms
		rt.Step(ms)
	}
	assert.Equal(t, 1, w.gcs, "inline cycles while one is marking")
	assert.Zero(t, w.starts, "background cycles while one is marking")

	w.gcCPU += 3 * ms // what the collector used to finish it
	w.collected()
	w.unended = false
	rt.Step(ms)
	s := rt.Stats()
	assert.Equal(t, charged+3*ms, s.Charged, "the collector's CPU after the step is charged")
	assert.Equal(t, 1, w.gcs, "the completing step counts garbage from the cycle's end")
	w.alloc(mib)
	rt.Step(ms)
	// The cycle it measured cost 31 times the model in CPU: the next one
	// may be priced cheaper in the background.
	assert.Equal(t, 2, w.gcs+w.starts, "cycles once it completed")
}
