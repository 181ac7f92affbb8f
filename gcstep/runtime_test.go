package gcstep

import (
	"math"
	"strings"
	"testing"
	"time"
)

const (
	kib = 1 << 10
	mib = 1 << 20
	// minG is the default collection threshold, which the rule tests
	// step around.
	minG = DefaultMinGarbage
	ms   = time.Millisecond
)

func newTest(t *testing.T, opts ...Option) (*world, *Runtime) {
	t.Helper()
	w := newWorld()
	w.r.allocs = 10 * mib
	w.r.cycles = 3
	return w, newRuntime(w.env(), opts...)
}

func TestIdleProgramRunsNoCycle(t *testing.T) {
	w, rt := newTest(t)
	for i := range 1_000_000 {
		w.t += time.Microsecond
		if rt.Step(ms) {
			t.Fatalf("step %d: more = true with nothing to do", i)
		}
	}
	equal(t, "steps", rt.Stats().Steps, 1_000_000)
	equal(t, "inline cycles", w.gcs, 0)
	equal(t, "background cycles", w.nudges, 0)
	_, armed := rt.NextStep()
	equal(t, "release armed", armed, false)
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
		{"large live heap: below half of it", 64 * mib, 31 * mib, 0},
		{"large live heap: half of it", 8 * mib, 4 * mib, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, rt := newTest(t, WithCPUCap(1))
			w.r.live = tt.live
			w.alloc(tt.alloc)
			w.gcCost = 0
			rt.Step(time.Second) // the model fits a second even at 64 MiB
			equal(t, "inline cycles", w.gcs, tt.want)
		})
	}
}

func TestRearmsOnlyAfterAllocation(t *testing.T) {
	w, rt := newTest(t)
	w.alloc(2 * mib)
	equal(t, "more after the cycle", rt.Step(ms), false)
	mustEqual(t, "inline cycles", w.gcs, 1)
	for range 1000 {
		w.t += 10 * ms
		rt.Step(ms)
	}
	equal(t, "inline cycles without new allocation", w.gcs, 1)
	w.alloc(mib)
	w.t += 10 * ms
	rt.Step(ms)
	equal(t, "inline cycles after allocation", w.gcs, 2)
	s := rt.Stats()
	equal(t, "Stats.CyclesInline", s.CyclesInline, 2)
	equal(t, "Stats.AllocatedBetween", s.AllocatedBetween, 3*mib)
	equal(t, "Stats.LastAllocatedBetween", s.LastAllocatedBetween, mib)
}

func TestCycleRunByRuntimeResetsTheCount(t *testing.T) {
	w, rt := newTest(t)
	w.alloc(3 * mib)
	w.r.cycles++ // the runtime collected on its own
	equal(t, "more", rt.Step(ms), false)
	equal(t, "inline cycles", w.gcs, 0)
	w.alloc(minG - 1)
	rt.Step(ms)
	equal(t, "inline cycles below the threshold since the runtime's", w.gcs, 0)
	w.alloc(1)
	rt.Step(ms)
	equal(t, "inline cycles at the threshold", w.gcs, 1)
}

func TestZeroBudgetOnlyLooks(t *testing.T) {
	for _, budget := range []time.Duration{0, -1, -time.Hour} {
		w, rt := newTest(t)
		equal(t, "more with nothing due", rt.Step(budget), false)
		w.alloc(mib)
		equal(t, "more with a cycle due", rt.Step(budget), true)
		equal(t, "cycles on a zero budget", w.gcs+w.nudges, 0)
		rt.Step(ms)
		equal(t, "inline cycles", w.gcs, 1)
		equal(t, "more after the cycle", rt.Step(budget), false)
	}
}

func TestInlineOnlyWhenTheEstimateFits(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(1), WithBackground(false))
	w.alloc(mib)
	// Before any measurement the estimate is the model: modelFixed on
	// an empty heap; 0.9 of this budget is less.
	rt.Step(modelFixed)
	equal(t, "inline cycles", w.gcs, 0)
	equal(t, "Stats.DeclinedBudget", rt.Stats().DeclinedBudget, 1)
	rt.Step(2 * modelFixed)
	equal(t, "inline cycles with a larger budget", w.gcs, 1)
}

func TestCostEstimateLearnsAndRelaxes(t *testing.T) {
	// The clock jumps seconds ahead with nothing allocated: without
	// WithReleaseDelay(0) that step would be the slow tier's release.
	w, rt := newTest(t, WithCPUCap(1), WithBackground(false), WithReleaseDelay(0))

	// One cycle sixteen times slower than the model (a cycle that waited
	// for a busy core) is a tail event: the estimate stays where the
	// median of the recent cycles puts it, and the next cycle runs
	// inline.
	w.gcCost = 16 * modelFixed
	w.alloc(mib)
	rt.Step(ms)
	mustEqual(t, "inline cycles", w.gcs, 1)
	est := rt.Stats().CostEstimate
	check(t, est < 2*modelFixed, "estimate %v: one slow cycle must not move it", est)
	w.gcCost = modelFixed
	w.alloc(mib)
	rt.Step(ms)
	mustEqual(t, "inline cycles after one slow one", w.gcs, 2)

	// A streak of slow cycles moves it only once it fills all but
	// costRank of the window (the fast cycle above and the priors are
	// the rest): then the estimate follows them, and a cycle that no
	// longer fits the budget does not run inline.
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
	equal(t, "slow cycles in a row before the estimate moved", slow, costWindow-costRank-1)
	est = rt.Stats().CostEstimate
	check(t, est > 8*modelFixed, "estimate %v after a run of slow cycles", est)
	w.alloc(mib)
	gcs := w.gcs
	rt.Step(ms)
	mustEqual(t, "inline cycles once the estimate exceeds the budget", w.gcs, gcs)
	check(t, rt.Stats().DeclinedBudget > 0, "no declined cycle counted")

	// Without measurements a pessimistic estimate relaxes to the model,
	// and so does the evidence behind it.
	w.t += 20 * factorHalfLife
	w.gcCost = modelFixed
	rt.Step(ms)
	equal(t, "inline cycles once the estimate relaxed", w.gcs, gcs+1)
	est = rt.Stats().CostEstimate
	check(t, est < 2*modelFixed, "estimate %v after a cycle as fast as the model", est)
}

func TestBackgroundWhenTheEstimateDoesNotFit(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(1))
	w.r.live = 64 * mib // the model says 64 ms
	w.alloc(32 * mib)
	equal(t, "more", rt.Step(ms), false)
	equal(t, "inline cycles", w.gcs, 0)
	mustEqual(t, "background cycles", w.nudges, 1)
	equal(t, "GOGC while nudged", w.gogc, nudgedGOGC)
	equal(t, "Stats.CyclesBackground", rt.Stats().CyclesBackground, 1)

	// Until the cycle completes, steps do nothing more.
	w.alloc(32 * mib)
	rt.Step(ms)
	equal(t, "background cycles while one is pending", w.nudges, 1)

	// The cycle completes; the cleanup restores GOGC.
	w.r.cycles++
	w.nudgeDone()
	equal(t, "GOGC restored", w.gogc, 100)
}

func TestNudgeRestoredByTheNextStep(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(1))
	w.gogc = -1 // GOGC=off
	w.r.live = 64 * mib
	w.alloc(32 * mib)
	rt.Step(ms)
	mustEqual(t, "GOGC while nudged", w.gogc, nudgedGOGC)
	w.r.cycles++
	rt.Step(ms)
	equal(t, "GOGC restored", w.gogc, -1)
	w.gogc = 50
	w.nudgeDone() // a late cleanup of an old nudge changes nothing
	equal(t, "GOGC after a late cleanup", w.gogc, 50)
}

func TestNudgeKeepsGOGCTheProgramSet(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(1))
	w.r.live = 64 * mib
	w.alloc(32 * mib)
	rt.Step(ms)
	w.gogc = 200 // debug.SetGCPercent(200) by the program meanwhile
	w.r.cycles++
	w.nudgeDone()
	equal(t, "GOGC", w.gogc, 200)
}

func TestCPUCapHolds(t *testing.T) {
	for _, cpuCap := range []float64{0.01, 0.05, 0.3, 1} {
		w, rt := newTest(t, WithCPUCap(cpuCap), WithBackground(false))
		w.gcCost = 200 * time.Microsecond
		for w.t < 100*time.Second {
			w.alloc(mib) // a program that allocates and is idle often
			rt.Step(ms)
			w.t += 100 * time.Microsecond
		}
		s := rt.Stats()
		// The bucket starts full: one window's worth on top of the share.
		allowed := time.Duration(cpuCap * float64(w.t+defaults().capWindow))
		check(t, s.CycleTime <= allowed, "cap %v: spent %v, allowed %v", cpuCap, s.CycleTime, allowed)
		if cpuCap < 0.5 { // above, the loop itself leaves less than the cap
			check(t, s.CycleTime >= allowed*8/10, "cap %v: spent %v of %v: the share must be used", cpuCap, s.CycleTime, allowed)
			check(t, s.DeclinedCap > 0, "cap %v: no cycle declined", cpuCap)
		}
	}
}

func TestCPUCapChargesBackgroundCycles(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(0.01), WithReleaseDelay(0)) // bucket: 1 ms; no release tier while the clock jumps
	w.r.live = 64 * mib                                        // estimate 64 ms: more than the bucket
	w.alloc(32 * mib)
	rt.Step(ms)
	mustEqual(t, "background cycles from a full bucket", w.nudges, 1)
	w.gcCPU += 64 * ms // as dear as estimated
	w.r.cycles++
	w.nudgeDone()
	rt.Step(ms) // sees the cycle: garbage counts from here
	w.alloc(32 * mib)
	w.t += time.Second
	rt.Step(ms)
	equal(t, "background cycles while in debt", w.nudges, 1)
	equal(t, "Stats.DeclinedCap", rt.Stats().DeclinedCap, 1)
	w.t += 10 * time.Second
	rt.Step(ms)
	equal(t, "background cycles once the debt is paid", w.nudges, 2)
}

func TestReleaseAfterIdleStretch(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(time.Second))
	w.alloc(2 * mib)
	rt.Step(ms)
	d, armed := rt.NextStep()
	mustEqual(t, "armed by allocation", armed, true)
	// A second from the step that saw the allocation, less the inline
	// cycle that step ran.
	equal(t, "NextStep", d, time.Second-w.gcCost)

	// Still allocating half way: the stretch starts again.
	w.t += 500 * ms
	w.alloc(kib)
	rt.Step(ms)
	d, _ = rt.NextStep()
	equal(t, "NextStep after more allocation", d, time.Second)
	equal(t, "inline cycles", w.gcs, 1)
	w.t += 999 * ms
	rt.Step(ms)
	equal(t, "releases before the delay", w.releases, 0)

	// Due: a zero budget only says so; a step makes the release.
	w.t += ms
	d, armed = rt.NextStep()
	equal(t, "NextStep when due", d, time.Duration(0))
	equal(t, "armed when due", armed, true)
	equal(t, "more on a zero budget", rt.Step(0), true)
	equal(t, "releases on a zero budget", w.releases, 0)
	equal(t, "more after the release", rt.Step(ms), false)
	equal(t, "releases", w.releases, 1)
	s := rt.Stats()
	equal(t, "Stats.Releases", s.Releases, 1)
	equal(t, "Stats.ReleasedBytes", s.ReleasedBytes, 3<<20)

	// Once per idle stretch: steps without allocation release nothing.
	for range 100 {
		w.t += 100 * ms
		rt.Step(ms)
	}
	equal(t, "releases while idle", w.releases, 1)
	_, armed = rt.NextStep()
	equal(t, "armed while idle", armed, false)
	w.alloc(2 * mib)
	rt.Step(ms)
	_, armed = rt.NextStep()
	equal(t, "armed by the next stretch", armed, true)
	rt.Close()
	_, armed = rt.NextStep()
	equal(t, "armed after Close", armed, false)
}

func TestReleaseNeedsAllocation(t *testing.T) {
	tests := []struct {
		name  string
		delay time.Duration
		alloc uint64
		want  bool
	}{
		{"little allocation", time.Second, minG - 1, false},
		{"enough allocation", time.Second, minG, true},
		{"tier disabled", 0, 8 * mib, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, rt := newTest(t, WithReleaseDelay(tt.delay))
			w.alloc(tt.alloc)
			rt.Step(ms)
			_, armed := rt.NextStep()
			equal(t, "armed", armed, tt.want)
		})
	}
}

func TestConcurrentStepDoesNothing(t *testing.T) {
	w, rt := newTest(t)
	var inner []bool
	w.onGC = func() {
		// Another goroutine steps while this one is in a cycle.
		inner = append(inner, rt.Step(ms), rt.Step(0))
	}
	w.alloc(mib)
	rt.Step(ms)
	equal(t, "inner steps", len(inner), 2)
	for i, more := range inner {
		equal(t, "more from a concurrent step", more, false)
		_ = i
	}
	equal(t, "inline cycles", w.gcs, 1)
}

func TestCloseRestoresGOGC(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(1))
	w.r.live = 64 * mib
	w.alloc(32 * mib)
	rt.Step(ms)
	mustEqual(t, "GOGC while nudged", w.gogc, nudgedGOGC)
	rt.Close()
	equal(t, "GOGC after Close", w.gogc, 100)
	w.alloc(32 * mib)
	equal(t, "more after Close", rt.Step(time.Hour), false)
	equal(t, "background cycles", w.nudges, 1)
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
		{"negative ratio", WithLiveRatio(-1)},
		{"NaN ratio", WithLiveRatio(math.NaN())},
		{"infinite ratio", WithLiveRatio(math.Inf(1))},
		{"zero garbage", WithMinGarbage(0)},
		{"negative delay", WithReleaseDelay(-time.Second)},
		{"nil option", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				check(t, strings.HasPrefix(msg, "gcstep: "), "panic value %#v, want a string starting with %q", r, "gcstep: ")
			}()
			newRuntime(newWorld().env(), tt.opt)
		})
	}
}

func TestOptionsInRangeAccepted(t *testing.T) {
	_, rt := newTest(t, WithCPUCap(1), WithCPUCap(0.001), WithLiveRatio(0),
		WithMinGarbage(1), WithReleaseDelay(0), WithBackground(false))
	equal(t, "cap", rt.cfg.cpuCap, 0.001)
	equal(t, "min garbage", rt.cfg.minGarbage, 1)
	equal(t, "background", rt.cfg.background, false)
	equal(t, "release delay", rt.cfg.releaseDelay, 0)
}

func TestZeroBudgetHonestAboutTheCap(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(0.001)) // bucket: 1 ms
	w.gcCost = 5 * ms
	w.alloc(mib)
	rt.Step(ms)
	mustEqual(t, "inline cycles", w.gcs, 1)
	w.alloc(mib)
	equal(t, "more while the cap is spent", rt.Step(0), false)
	w.t += 10 * time.Second
	equal(t, "more once the cap allows", rt.Step(0), true)
}

func TestBackgroundCycleChargedWhatItUsed(t *testing.T) {
	w, rt := newTest(t, WithCPUCap(0.5)) // bucket: 50 ms
	w.r.live = 16 * mib                  // estimate: about 16 ms
	w.gcCPU = time.Hour
	w.alloc(32 * mib)
	rt.Step(ms)
	mustEqual(t, "background cycles", w.nudges, 1)
	est := rt.Stats().Charged
	check(t, est > 16*ms && est < 17*ms, "charged %v in advance, want the estimate", est)
	w.gcCPU += 5 * ms // the cycle was cheaper than estimated
	w.r.cycles++
	w.nudgeDone()
	equal(t, "Stats.Charged", rt.Stats().Charged, 5*ms)

	// The refund lets the next one through at once.
	rt.Step(ms)
	w.alloc(32 * mib)
	rt.Step(ms)
	mustEqual(t, "background cycles", w.nudges, 2)
	w.gcCPU += 500 * ms // much dearer: the debt blocks the next
	w.r.cycles++
	rt.Step(ms)
	equal(t, "Stats.Charged", rt.Stats().Charged, 505*ms)
	w.alloc(32 * mib)
	w.t += 500 * ms // earns 250 ms of a debt of about 450
	rt.Step(ms)
	equal(t, "background cycles while in debt", w.nudges, 2)
}

func TestBackgroundStartsAtHalfTheGarbage(t *testing.T) {
	tests := []struct {
		name       string
		budget     time.Duration
		background bool
		alloc      uint64
		gcs, bgs   int
	}{
		{"fits: waits for the threshold", ms, true, minG / 2, 0, 0},
		{"fits: inline at the threshold", ms, true, minG, 1, 0},
		{"does not fit: background at half", time.Microsecond, true, minG / 2, 0, 1},
		{"does not fit: nothing below half", time.Microsecond, true, minG/2 - 1, 0, 0},
		{"no background: nothing at half", time.Microsecond, false, minG / 2, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, rt := newTest(t, WithCPUCap(1), WithBackground(tt.background))
			w.alloc(tt.alloc)
			rt.Step(tt.budget)
			equal(t, "inline cycles", w.gcs, tt.gcs)
			equal(t, "background cycles", w.nudges, tt.bgs)
		})
	}
}

func TestCapEarnedFromIdleTime(t *testing.T) {
	// Bucket: 50 ms. Each cycle costs 40 ms, far above the model, but the
	// estimate (the median of nine, at most four of them slow here) stays
	// at the model: only the cap stops cycles here.
	w, rt := newTest(t, WithCPUCap(0.5), WithBackground(false), WithReleaseDelay(0))
	w.gcCost = 40 * ms
	rt.Idled(0) // not a report: the cap is still earned from wall time
	rt.Idled(-ms)
	w.alloc(mib)
	rt.Step(time.Second)
	mustEqual(t, "inline cycles from the full bucket", w.gcs, 1)
	w.alloc(mib)
	w.t += time.Second // wall time earns the bucket back
	rt.Step(time.Second)
	mustEqual(t, "inline cycles after a second of wall time", w.gcs, 2)

	// From the first report on, only reported idle time earns: a loop busy
	// for a second between idle moments earned nothing.
	rt.Idled(2 * ms)
	w.alloc(mib)
	rt.Step(time.Second) // 10 ms + 1 ms left: one more
	mustEqual(t, "inline cycles", w.gcs, 3)
	w.alloc(mib)
	w.t += time.Second
	rt.Step(time.Second) // 29 ms in debt
	equal(t, "inline cycles after a busy second", w.gcs, 3)
	equal(t, "Stats.DeclinedCap", rt.Stats().DeclinedCap, 1)
	rt.Idled(60 * ms) // earns 30 ms
	rt.Step(time.Second)
	equal(t, "inline cycles once idle time paid the debt", w.gcs, 4)
}
