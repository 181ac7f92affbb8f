package gcstep

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Runtime is a Stepper over the Go runtime's collector. Go has no API for
// a partial cycle, so each step decides whether a whole cycle is worth
// running now, and how:
//
//  1. It reads runtime/metrics (five samples, no allocation, no
//     stop-the-world; runtime.ReadMemStats is never called, it stops the
//     world).
//  2. It collects only when it pays: at least WithMinGarbage bytes, and at
//     least WithLiveRatio of the live heap, allocated since the last cycle.
//     A cycle the runtime ran on its own resets the count, so a step after
//     one does nothing. Only allocation re-arms the rule: a program that
//     allocates nothing gets no cycle however often it calls Step.
//  3. It estimates what a cycle costs here and now (a model linear in the
//     live heap, scaled by a factor learnt from the cycles it timed) and
//     runs the cycle inline only when the estimate fits in nine tenths of
//     the budget (V8's idle-time handler plans the same way, with a margin
//     because estimates are noisy). Inline means the step starts the
//     cycle and waits, parked, for its mark phase; the garbage is then
//     swept by the runtime's background sweeper, or by the next
//     allocations before they take new memory (see inliner for why not
//     runtime.GC, which also sweeps, and spins while it waits). On an
//     idle caller that is the point: the cycle runs while nothing else
//     needs the caller, and the memory is free before the next burst
//     allocates.
//  4. A cycle that does not fit is started in the background (see
//     WithBackground): the pacer is lowered so the runtime starts a
//     concurrent cycle at the next allocation, and restored when it ends.
//  5. Both kinds of cycle draw on a CPU cap (WithCPUCap): a step declines
//     when idle collection has used its share of the caller's idle time,
//     which the caller reports through Idled (the IdleObserver interface;
//     package poller reports every wait that blocked), or, from a caller
//     that reports none, of wall time. Inline cycles are charged their
//     wall time, background ones the collector's CPU time they caused.
//  6. A slower tier returns free memory to the operating system once the
//     program has allocated nothing for WithReleaseDelay, once per idle
//     stretch (see WithReleaseDelay). It runs in a Step, like everything
//     else: a caller that blocks while idle learns from NextStep (the
//     Deferred interface) when to wake up and step, as package poller's
//     Mux and Loop do.
//
// Step is safe for concurrent use: a call made while another goroutine is
// stepping returns false at once without doing anything, since the other
// caller is already doing the work there is. Idled, NextStep and Stats may
// be called at any time.
//
// A Runtime changes the process's GOGC for moments: to 1 % while an inline
// cycle starts, and while a background cycle runs. It puts back what it
// found, or what the program set meanwhile. Use one Runtime per process
// (Chain it with other steppers): two would each put back what the other
// had set.
type Runtime struct {
	env env
	cfg config

	mu sync.Mutex // guards everything below
	r  reading    // the last reading, reused so that a step allocates nothing

	seenCycles uint64 // cycle count at the last look
	baseAllocs uint64 // allocs when a cycle was last seen to complete

	tokens   time.Duration // CPU-cap bucket: collection time still allowed
	tokensAt time.Duration // when tokens was last refilled

	// idle is the idle time reported by Idled since the last refill, in
	// nanoseconds, and idleFed whether any was ever reported: from then
	// on the bucket is refilled from idle time, not wall time. Atomic,
	// not under mu: Idled is called after every blocking wait, also while
	// another goroutine steps.
	idle    atomic.Int64
	idleFed atomic.Bool

	// ratios holds the cost ratios (measured / modelled inline cycle
	// time) of the last costWindow inline cycles, oldest overwritten
	// first, starting as costWindow priors of 1 (the model); factor is
	// their median (see costRank), the learnt cost factor.
	ratios   [costWindow]float64
	nextRat  int           // the slot the next measurement overwrites
	factor   float64       // median of ratios
	factorAt time.Duration // when the last ratio was measured

	nudged      bool          // a background cycle was requested and GOGC is lowered
	nudgeGen    uint64        // identifies the nudge a cleanup belongs to
	nudgeGOGC   int           // GOGC to restore
	nudgeCycles uint64        // cycle count when the nudge was made
	nudgeCPU    time.Duration // env.gcCPU when the nudge was made
	nudgeCharge time.Duration // what the nudge was charged in advance

	activityAllocs uint64        // allocs when allocation was last seen
	activityAt     time.Duration // when allocation was last seen
	releasedAllocs uint64        // allocs at the last release to the OS
	closed         bool

	stats Stats
}

// Stats counts what a Runtime did. All counts are cumulative since
// NewRuntime.
type Stats struct {
	Steps            uint64        // calls to Step, including those that did nothing
	CyclesInline     uint64        // cycles run inside Step (see inliner)
	CyclesBackground uint64        // cycles started for the runtime to run concurrently
	DeclinedBudget   uint64        // cycles due but not run: too costly for the budget, background off
	DeclinedCap      uint64        // cycles due but not run: the CPU cap was spent
	StepTime         time.Duration // wall time spent inside Step
	CycleTime        time.Duration // of which in inline cycles

	// Charged is the time charged against the CPU cap: the wall time of
	// inline cycles, and the collector's CPU time (marking on idle Ps
	// excepted) from the start of each background cycle to its end.
	Charged time.Duration

	// AllocatedBetween is the total of the bytes allocated between the
	// previous cycle and each cycle this Runtime ran or started;
	// divided by the number of those cycles it is the garbage collected
	// per idle cycle. LastAllocatedBetween is the last such amount.
	AllocatedBetween     uint64
	LastAllocatedBetween uint64
	// LiveAfterCycle is the live heap, in bytes, found by the last cycle
	// this Runtime saw complete.
	LiveAfterCycle uint64
	// CostEstimate is the current estimate of an inline cycle's cost at
	// the live heap of LiveAfterCycle.
	CostEstimate time.Duration

	Releases      uint64        // times the slow tier returned memory to the OS
	ReleasedBytes uint64        // bytes the slow tier returned to the OS
	ReleaseTime   time.Duration // time spent returning memory, cycle included
}

// The cost model of an inline cycle before any is measured: measured on a
// 2-core machine, a cycle takes 0.2 ms to 4 ms on an almost empty heap
// (depending on whether the other core is busy) and about 1 ms more per
// MiB of pointer-dense live heap.
const (
	modelFixed   = 250 * time.Microsecond
	modelPerByte = float64(time.Millisecond) / (1 << 20)
	// planFactor is the part of the budget an inline cycle may plan to use.
	planFactor = 0.9
	// factorHalfLife is how fast a pessimistic cost factor (> 1) relaxes
	// back to the model when no inline cycle runs to measure it. Slow
	// cycles come in streaks (a busy machine, a burst of scheduling
	// delay) that pass within milliseconds; a pessimistic estimate that
	// outlived them sent the rest of a short run to background cycles,
	// which on the urandom demo held more memory for more time. At 50 ms
	// a factor of 16 is back under 4 in 100 ms, and a machine that stays
	// slow costs one overrunning probe cycle per ~100 ms.
	factorHalfLife = 50 * time.Millisecond
	// costWindow is how many recent inline cycles the factor is taken
	// from, and costRank which of them, in ascending order: the median
	// of nine. Inline cycle times have a tail that is not the cycle's own
	// work but the scheduler's: a mark phase waits for every P to reach a
	// safe point, and a P whose goroutine is in a system call is handed
	// to a thread the kernel must first schedule. Measured on the urandom
	// demo's loop (2 cores, inline cycles as inliner runs them): p50
	// 0.25-0.38 ms, p90 0.55-1.5 ms, p99 4-6 ms. A mean follows the tail;
	// the median of five, with runtime.GC's own sweep wait in every
	// cycle (then p90 2-3 ms, and streaks of 3-6 ms cycles in the first
	// 50 ms of a run), flipped to "does not fit" after three slow cycles
	// and, relaxing with a 250 ms half-life, stayed there for the rest of
	// a half-second run. The median of nine moves once five of the last
	// nine cycles were slow.
	costWindow = 9
	costRank   = costWindow / 2
)

// NewRuntime returns a Stepper over the Go runtime with the policy
// described on Runtime, changed by opts. It panics, with a message that
// starts with "gcstep:", if an option is out of range.
func NewRuntime(opts ...Option) *Runtime {
	return newRuntime(realEnv(), opts...)
}

func newRuntime(e env, opts ...Option) *Runtime {
	cfg := defaults()
	for _, o := range opts {
		if o == nil {
			panic("gcstep: nil Option")
		}
		o(&cfg)
	}
	rt := &Runtime{env: e, cfg: cfg, factor: 1}
	for i := range rt.ratios {
		rt.ratios[i] = 1
	}
	now := e.now()
	e.read(&rt.r)
	rt.seenCycles = rt.r.cycles
	rt.baseAllocs = rt.r.allocs
	rt.activityAllocs = rt.r.allocs
	rt.activityAt = now
	rt.releasedAllocs = rt.r.allocs
	rt.stats.LiveAfterCycle = rt.r.live
	rt.tokens = rt.capacity()
	rt.tokensAt = now
	return rt
}

// Step implements Stepper: it runs, starts or declines one collection
// cycle, as described on Runtime, and reports whether calling again now
// would do anything. With budget <= 0 it only looks: it reports true when
// a cycle is due.
func (rt *Runtime) Step(budget time.Duration) (more bool) {
	if !rt.mu.TryLock() {
		return false // another goroutine is stepping
	}
	defer rt.mu.Unlock()
	start := rt.env.now()
	rt.stats.Steps++
	rt.env.read(&rt.r)
	rt.observe(start)
	switch {
	case rt.closed || rt.nudged:
		more = false
	case rt.releaseDue(start):
		if budget > 0 {
			rt.release()
		}
		more = budget <= 0 // due, and this step may not run it
	default:
		more = rt.collect(budget, start)
	}
	rt.stats.StepTime += rt.env.now() - start
	return more
}

// observe updates what the policy knows from the reading in rt.r.
// rt.mu must be held.
func (rt *Runtime) observe(now time.Duration) {
	if rt.r.cycles != rt.seenCycles {
		// A cycle completed since the last look, whoever ran it: count
		// garbage from here.
		rt.seenCycles = rt.r.cycles
		rt.baseAllocs = rt.r.allocs
		rt.stats.LiveAfterCycle = rt.r.live
		if rt.nudged && rt.r.cycles > rt.nudgeCycles {
			rt.endNudge()
		}
	}
	if rt.r.allocs != rt.activityAllocs {
		rt.activityAllocs = rt.r.allocs
		rt.activityAt = now
	}
}

// threshold is the garbage, in bytes, that makes a cycle worth running.
func (rt *Runtime) threshold() uint64 {
	t := rt.cfg.minGarbage
	if byLive := rt.cfg.liveRatio * float64(rt.r.live); byLive > float64(t) {
		if byLive >= math.MaxUint64 {
			return math.MaxUint64
		}
		t = uint64(byLive)
	}
	return t
}

// collect applies rules 2 to 5 of the policy. rt.mu must be held.
func (rt *Runtime) collect(budget, now time.Duration) (more bool) {
	garbage := rt.r.allocs - rt.baseAllocs
	threshold := rt.threshold()
	if garbage < threshold/backgroundEarly {
		return false
	}
	rt.refill(now)
	est := rt.estimate(rt.r.live, now)
	inline := float64(est) <= planFactor*float64(budget)
	if garbage < threshold && (inline || !rt.cfg.background) {
		// Only a background cycle starts this early: see backgroundEarly.
		return false
	}
	// A cycle larger than the whole bucket may run when the bucket is
	// full; the debt it leaves is paid back before the next one.
	need := min(est, rt.capacity())
	if rt.tokens < need {
		if budget > 0 {
			rt.stats.DeclinedCap++
		}
		return false
	}
	if budget <= 0 {
		return true // a cycle is due and allowed; this step may not run it
	}
	if inline {
		rt.inline(garbage, budget, now)
		return false
	}
	if !rt.cfg.background {
		rt.stats.DeclinedBudget++
		return false
	}
	rt.startNudge(est)
	rt.stats.CyclesBackground++
	rt.stats.AllocatedBetween += garbage
	rt.stats.LastAllocatedBetween = garbage
	return false
}

// A background cycle starts at half the garbage an inline one waits for
// (the threshold halved). It frees memory later: the program keeps
// allocating while the cycle marks, and its garbage is swept lazily, so on
// the urandom demo it let the heap grow by about as much again as it found
// (peak RSS 5.6 to 6.1 MB where inline cycles at the same threshold held
// 4.7 MB). Starting it earlier evens that out.
const backgroundEarly = 2

// inline runs one whole cycle in the caller and learns its cost.
// rt.mu must be held.
func (rt *Runtime) inline(garbage uint64, budget, start time.Duration) {
	live := rt.r.live
	rt.env.gc(budget)
	end := rt.env.now()
	d := end - start
	rt.charge(d)
	rt.stats.CyclesInline++
	rt.stats.CycleTime += d
	rt.stats.AllocatedBetween += garbage
	rt.stats.LastAllocatedBetween = garbage
	if m := model(live); m > 0 && d > 0 {
		rt.learn(min(max(float64(d)/float64(m), 1.0/16), 16), end)
	}
	rt.env.read(&rt.r)
	rt.observe(end)
	rt.stats.CostEstimate = rt.estimate(rt.r.live, end)
}

func model(live uint64) time.Duration {
	return modelFixed + time.Duration(modelPerByte*float64(live))
}

// learn adds the cost ratio of an inline cycle measured at now to the
// window and makes the factor their median. The ratios already there
// first relax as currentFactor relaxes the factor, so old evidence of a
// slow machine weighs no more than the time since it was seen allows.
func (rt *Runtime) learn(ratio float64, now time.Duration) {
	for i, r := range rt.ratios {
		rt.ratios[i] = relax(r, now-rt.factorAt)
	}
	rt.ratios[rt.nextRat] = ratio
	rt.nextRat = (rt.nextRat + 1) % costWindow
	sorted := rt.ratios
	slices.Sort(sorted[:])
	rt.factor = sorted[costRank]
	rt.factorAt = now
}

// currentFactor is the learnt cost factor, with a pessimistic factor
// relaxed towards 1 by the time since it was measured.
func (rt *Runtime) currentFactor(now time.Duration) float64 {
	return relax(rt.factor, now-rt.factorAt)
}

// relax moves a pessimistic cost ratio (> 1) towards 1 with the half-life
// factorHalfLife over age.
func relax(f float64, age time.Duration) float64 {
	if f > 1 && age > 0 {
		f = 1 + (f-1)*math.Exp2(-float64(age)/float64(factorHalfLife))
	}
	return f
}

// estimate is the predicted cost of an inline cycle with the given live
// heap.
func (rt *Runtime) estimate(live uint64, now time.Duration) time.Duration {
	return time.Duration(rt.currentFactor(now) * float64(model(live)))
}

func (rt *Runtime) capacity() time.Duration {
	return time.Duration(rt.cfg.cpuCap * float64(rt.cfg.capWindow))
}

// refill credits the CPU-cap bucket with cpuCap of the idle time reported
// since the last refill, or, if no caller ever reported idle time, of the
// wall time elapsed.
func (rt *Runtime) refill(now time.Duration) {
	earned := max(now-rt.tokensAt, 0)
	if rt.idleFed.Load() {
		earned = time.Duration(rt.idle.Swap(0))
	}
	rt.tokens += time.Duration(rt.cfg.cpuCap * float64(earned))
	rt.tokens = min(rt.tokens, rt.capacity())
	rt.tokensAt = now
}

// Idled implements IdleObserver: the caller spent d blocked with nothing
// to do. From the first report on, the CPU cap is earned from reported
// idle time instead of wall time (see WithCPUCap).
func (rt *Runtime) Idled(d time.Duration) {
	if d <= 0 {
		return
	}
	rt.idle.Add(int64(d))
	if !rt.idleFed.Load() {
		rt.idleFed.Store(true)
	}
}

// charge takes d from the CPU-cap bucket.
func (rt *Runtime) charge(d time.Duration) {
	rt.tokens -= d
	rt.stats.Charged += d
}

// startNudge lowers the pacer so that the runtime starts a cycle at the
// next allocation, and charges the cap the estimate of an inline cycle;
// the cycle's completion, seen either by a later step or by the cleanup
// nudgePacer registers, restores GOGC and settles the charge with the
// collector's CPU time measured meanwhile. rt.mu must be held.
func (rt *Runtime) startNudge(est time.Duration) {
	rt.nudgeGen++
	gen := rt.nudgeGen
	rt.nudged = true
	rt.nudgeCycles = rt.r.cycles
	rt.nudgeCPU = rt.env.gcCPU()
	rt.nudgeCharge = est
	rt.charge(est)
	rt.nudgeGOGC = rt.env.nudge(func() {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		if rt.nudged && rt.nudgeGen == gen {
			rt.endNudge()
		}
	})
}

// endNudge restores the GOGC a nudge replaced, unless the program changed
// it meanwhile, and settles what the cycle cost. rt.mu must be held.
func (rt *Runtime) endNudge() {
	rt.nudged = false
	restoreGOGC(rt.env.setGCPercent, rt.nudgeGOGC)
	used := max(rt.env.gcCPU()-rt.nudgeCPU, 0)
	rt.charge(used - rt.nudgeCharge)
}

// nudgedGOGC is the GOGC a nudge, or the start of an inline cycle, sets.
const nudgedGOGC = 1

// restoreGOGC undoes setting GOGC to nudgedGOGC through set
// (debug.SetGCPercent), unless the program set its own GOGC meanwhile:
// then that one stays.
func restoreGOGC(set func(int) int, prev int) {
	if p := set(prev); p != nudgedGOGC {
		set(p)
	}
}

// releaseArmed reports whether the slow tier has a release to make once
// the program stays idle long enough: it is enabled, the Runtime is open,
// and the program allocated at least the collection threshold since the
// last release (so an idle program releases once per idle stretch, not
// again and again). rt.mu must be held.
func (rt *Runtime) releaseArmed() bool {
	return rt.cfg.releaseDelay > 0 && !rt.closed &&
		rt.r.allocs-rt.releasedAllocs >= rt.cfg.minGarbage
}

// releaseDue reports whether the slow tier's release is due at now: armed,
// and nothing allocated for the release delay. rt.mu must be held.
func (rt *Runtime) releaseDue(now time.Duration) bool {
	return rt.releaseArmed() && now-rt.activityAt >= rt.cfg.releaseDelay
}

// release returns free memory to the OS and ends the idle stretch.
// rt.mu must be held.
//
// Why FreeOSMemory and not something cheaper: the runtime's own background
// scavenger returns memory only down to its retention goal (about 10 %
// over the heap goal) and at about 1 % of one CPU; the only other way to
// make it return more is a low memory limit, which would then throttle the
// program when it wakes up. FreeOSMemory runs a whole cycle and then
// scavenges the heap, milliseconds that may exceed the step's budget; it
// runs only after the program has allocated nothing for the release
// delay, when nothing is waiting for the caller.
func (rt *Runtime) release() {
	start := rt.env.now()
	before := rt.r.released
	rt.env.release()
	rt.env.read(&rt.r)
	rt.releasedAllocs = rt.r.allocs // before observe: this stretch is done
	rt.observe(rt.env.now())
	rt.stats.Releases++
	rt.stats.ReleaseTime += rt.env.now() - start
	if rt.r.released > before {
		rt.stats.ReleasedBytes += rt.r.released - before
	}
}

// NextStep implements Deferred. It reports how long from now the slow tier
// will be due if the program allocates nothing meanwhile (zero if it is
// due now), and false if no release is armed. A caller about to block
// bounds its wait by it and steps when the wait ends: that is how the
// release happens while the program sleeps, with no timer and no
// goroutine of the Runtime's own. (An earlier version armed a runtime
// timer instead. With a timer pending, runtime.GC took about twice as long
// for the loop, and the urandom demo's idle mode ran at 1.13-1.17 times
// the plain loop's wall time; without it, at 0.99-1.01 times. Inline
// cycles no longer use runtime.GC, whose sweep wait that was (see
// inliner), but a timer of the stepper's own would still be one more
// wakeup in every idle stretch.)
func (rt *Runtime) NextStep() (time.Duration, bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if !rt.releaseArmed() {
		return 0, false
	}
	return max(rt.activityAt+rt.cfg.releaseDelay-rt.env.now(), 0), true
}

// Stats returns what the Runtime did so far.
func (rt *Runtime) Stats() Stats {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	s := rt.stats
	s.CostEstimate = rt.estimate(s.LiveAfterCycle, rt.env.now())
	return s
}

// Close restores GOGC if a background cycle is still pending. Steps after
// Close do nothing, and NextStep reports no work. Close is needed only by
// programs that drop a Runtime before they exit.
func (rt *Runtime) Close() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.closed = true
	if rt.nudged {
		rt.endNudge()
	}
}
