package gcstep

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Runtime is a Stepper over the Go runtime's collector. Go has no API for
// a partial cycle, so each step decides whether a whole cycle is worth
// running now, and how. In short (the design and the measurements behind
// every default are in doc/policy.md):
//
//   - It decides from runtime/metrics (no allocation, no stop-the-world);
//     runtime.ReadMemStats is never called.
//   - Inside activity it collects only when garbage passes a threshold
//     (WithMinGarbage, WithLiveRatio) and the idle moment at hand is
//     predicted to cover the cycle: the caller's recent idle gaps, which
//     a LoopObserver caller reports, must be long enough for the
//     estimated cost (any lull will do for a loop that consumes streams,
//     see WithStreams), and the cost must fit the step's budget. Otherwise
//     it may start a cycle for the runtime to run concurrently, when the
//     caller is idle most of the time, or it leaves the work to the
//     runtime's pacer. It never waits for more garbage than 70 % of the
//     pacer's runway (heap goal minus live heap), where the runtime may
//     start its own cycle: past that, the step's would buy little.
//   - Once every loop using it has been quiet for a quiet period (see
//     WithReleaseDelay), it collects what the activity left and returns
//     the memory to the operating system, once per quiet stretch, on a
//     goroutine of its own so that no step holds its caller for it.
//   - All of it draws on a CPU cap earned from idle time (WithCPUCap).
//     When the cap runs short the garbage threshold rises, so the
//     stepper collects less often rather than not at all.
//   - Only allocation re-arms it: a program that allocates nothing gets
//     no cycle however often it steps.
//
// Several event loops may share one Runtime (the collector is
// process-wide): give each its own Loop handle. Step is safe for
// concurrent use: a step made while another goroutine steps returns
// false at once (the other is doing the work there is), except with a
// zero budget, which waits for the other to finish and answers.
//
// A Runtime changes the process's GOGC only for the moment it takes to
// start a cycle: to 1 % while it starts one; an inline cycle then waits
// for its mark phase with GOGC restored. A call to
// debug.SetGCPercent by the program inside such a moment is kept, and a
// program that saves and restores around it is repaired at the next step
// (see doc/policy.md). Use one Runtime per process.
type Runtime struct {
	env env
	cfg config

	mu sync.Mutex // guards the fields below up to stats, and stats
	r  reading    // the last reading, reused so that a step allocates nothing

	prevAllocs uint64 // allocs at the previous look
	seenCycles uint64 // cycle count at the last look
	baseAllocs uint64 // allocs when the last cycle completed (estimated)

	tokens   time.Duration // CPU-cap bucket: collection time still allowed
	tokensAt time.Duration // when tokens was last refilled
	scale    float64       // threshold multiplier >= 1, raised while the cap runs short
	scaledAt uint64        // allocs when scale was last raised

	cost costModel

	bg struct { // a cycle started for the runtime to run
		pending bool
		cycles  uint64        // cycle count when it started
		cpu     time.Duration // env.gcCPU when it started
		charge  time.Duration // what it was charged in advance
		at      time.Duration // when it started
	}
	trap trap

	activityAllocs uint64        // allocs when allocation was last seen
	activityAt     time.Duration // when allocation was last seen
	releasedAllocs uint64        // allocs at the last release to the OS
	releasing      bool          // a release runs on its goroutine
	armAllocs      uint64        // allocs at maybeArmed's last reading

	stats Stats

	// Read without mu, by Idled, Lull and NextStep, which loops call
	// while another loop may be stepping.
	idle    atomic.Int64 // idle time reported since the last refill, ns
	idleFed atomic.Bool  // any idle time was ever reported
	closed  atomic.Bool
	est     atomic.Int64 // the current cost estimate, ns
	armed   atomic.Bool  // allocated enough since the last release to make another
	// recheck is when maybeArmed reads the heap again (ns, env.now), and
	// allocating whether its last reading saw the program allocate: see
	// maybeArmed.
	recheck    atomic.Int64
	allocating atomic.Bool
	delayed    atomic.Uint64
	delayNS    atomic.Int64

	loops atomic.Pointer[[]*Loop] // every handle, self first; copied on change
	self  *Loop                   // the handle of callers that use the Runtime directly
	wg    sync.WaitGroup          // the release goroutine
}

// Stats counts what a Runtime did. All counts are cumulative since
// NewRuntime.
type Stats struct {
	Steps            uint64 // calls to Step, including those that did nothing
	CyclesInline     uint64 // cycles run inside Step (see inliner)
	CyclesBackground uint64 // cycles started for the runtime to run concurrently
	DeclinedBudget   uint64 // cycles due but not run: too costly for the budget, background off
	DeclinedCap      uint64 // cycles due but not run: the CPU cap was spent
	DeclinedLull     uint64 // cycles due but not run: a lull, too short for the cycle
	// DeclinedPacer counts cycles due but not run because the runtime's
	// own cycle was near: the garbage threshold, raised by a short CPU
	// cap or set high, was past 70 % of the pacer's runway (heap goal
	// minus live heap), where the runtime may start its own cycle.
	DeclinedPacer uint64
	StepTime      time.Duration // wall time spent inside Step
	CycleTime     time.Duration // of which in inline cycles

	// Overruns counts steps that took longer than their budget (an
	// inline cycle dearer than estimated: a mark phase cannot be cut
	// short), and OverrunTime what they took beyond it.
	Overruns    uint64
	OverrunTime time.Duration

	// StepsDelayedWork counts steps after which the caller found work
	// waiting (as a LoopObserver caller reports), and DelayedWorkTime
	// their total duration: a bound on how long that work waited.
	StepsDelayedWork uint64
	DelayedWorkTime  time.Duration

	// Charged is the time charged against the CPU cap: the wall time of
	// inline cycles and releases, and the collector's CPU time (marking
	// on idle Ps excepted) from the start of each background cycle to
	// its end.
	Charged time.Duration
	// ThresholdScale is the factor by which a short CPU cap has raised
	// the garbage threshold (1: not raised).
	ThresholdScale float64

	// AllocatedBetween is the total of the bytes allocated between the
	// previous cycle and each cycle this Runtime ran or started;
	// LastAllocatedBetween is the last such amount.
	AllocatedBetween     uint64
	LastAllocatedBetween uint64
	// LiveAfterCycle is the live heap, in bytes, found by the last cycle
	// this Runtime saw complete.
	LiveAfterCycle uint64
	// CostEstimate is the current estimate of an inline cycle's cost at
	// the live heap of LiveAfterCycle.
	CostEstimate time.Duration

	// QuietPeriods counts the quiet stretches in which the Runtime
	// emptied the gap (collected and returned memory).
	QuietPeriods  uint64
	Releases      uint64        // releases of memory to the OS completed
	ReleasedBytes uint64        // bytes the releases returned to the OS
	ReleaseTime   time.Duration // time the releases took, their cycle included
	// LastReleaseAfterQuiet is how long after the last quiet stretch
	// began its release was complete.
	LastReleaseAfterQuiet time.Duration

	// GOGCRepaired counts the times the program restored a GOGC it had
	// read inside one of the Runtime's windows, and the Runtime put the
	// program's earlier value back.
	GOGCRepaired uint64
}

// NewRuntime returns a Stepper over the Go runtime with the policy
// described on Runtime, changed by opts (nil options are skipped). It
// panics, with a message that starts with "gcstep:", if an option is out
// of range.
func NewRuntime(opts ...Option) *Runtime {
	return newRuntime(realEnv(), opts...)
}

func newRuntime(e env, opts ...Option) *Runtime {
	cfg := defaults()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	rt := &Runtime{env: e, cfg: cfg, scale: 1, cost: newCostModel()}
	rt.self = &Loop{rt: rt}
	rt.loops.Store(&[]*Loop{rt.self})
	now := e.now()
	e.read(&rt.r)
	rt.prevAllocs = rt.r.allocs
	rt.seenCycles = rt.r.cycles
	rt.baseAllocs = rt.r.allocs
	rt.activityAllocs = rt.r.allocs
	rt.activityAt = now
	rt.releasedAllocs = rt.r.allocs
	rt.armAllocs = rt.r.allocs
	rt.stats.LiveAfterCycle = rt.r.live
	rt.tokens = rt.capacity()
	rt.tokensAt = now
	rt.est.Store(int64(rt.cost.estimate(rt.r.live, now)))
	return rt
}

// Step implements Stepper for a caller that uses the Runtime directly, as
// its own loop: it runs, starts or declines one collection, as described
// on Runtime, and reports whether calling again now would do anything.
// With budget <= 0 it only looks: it reports true when a collection is due.
func (rt *Runtime) Step(budget time.Duration) (more bool) {
	return rt.self.Step(budget)
}

func (rt *Runtime) step(l *Loop, budget time.Duration) (more bool) {
	if budget <= 0 {
		rt.mu.Lock()
	} else if !rt.mu.TryLock() {
		return false // another loop is stepping
	}
	defer rt.mu.Unlock()
	start := rt.env.now()
	rt.stats.Steps++
	rt.look(start)
	switch {
	case rt.closed.Load():
		more = false
	case rt.quiet(start):
		more = rt.emptyGap(budget, start)
	default:
		more = rt.collect(l, budget, start)
	}
	end := rt.env.now()
	rt.stats.StepTime += end - start
	if budget > 0 && end-start > budget {
		rt.stats.Overruns++
		rt.stats.OverrunTime += end - start - budget
	}
	return more
}

// look reads the heap and updates what the policy knows. rt.mu must be
// held.
func (rt *Runtime) look(now time.Duration) {
	rt.env.read(&rt.r)
	rt.observe(now)
	if rt.trap.check(rt.r.gogc, rt.env.setGCPercent) {
		rt.stats.GOGCRepaired++
	}
}

// observe updates what the policy knows from the reading in rt.r.
// rt.mu must be held.
func (rt *Runtime) observe(now time.Duration) {
	if rt.r.cycles != rt.seenCycles {
		// A cycle completed since the last look, whoever ran it. The
		// garbage made since it ended is at most what was allocated
		// since the last look, and at most what the heap holds beyond
		// the live heap (that also counts garbage not yet swept, which
		// the other bound excludes once the last look is old).
		since := rt.r.allocs - rt.prevAllocs
		if rt.r.objects >= rt.r.live {
			since = min(since, rt.r.objects-rt.r.live)
		}
		rt.baseAllocs = rt.r.allocs - since
		rt.seenCycles = rt.r.cycles
		rt.stats.LiveAfterCycle = rt.r.live
		if rt.bg.pending && rt.r.cycles > rt.bg.cycles {
			rt.settleBackground()
		}
	} else if rt.bg.pending && now-rt.bg.at > backgroundTimeout {
		rt.settleBackground() // it never started: do not wait for it forever
	}
	rt.prevAllocs = rt.r.allocs
	if rt.r.allocs != rt.activityAllocs {
		rt.activityAllocs = rt.r.allocs
		rt.activityAt = now
	}
	if rt.r.allocs-rt.releasedAllocs >= rt.cfg.minGarbage {
		rt.armed.Store(true)
	}
	rt.est.Store(int64(rt.cost.estimate(rt.r.live, now)))
}

// estimate is the cost estimate of an inline cycle at now, relaxed to now
// as the policy would see it at a step, for callers without rt.mu: while
// another loop steps, the estimate of the last look.
func (rt *Runtime) estimate(now time.Duration) time.Duration {
	if rt.mu.TryLock() {
		rt.est.Store(int64(rt.cost.estimate(rt.r.live, now)))
		rt.mu.Unlock()
	}
	return time.Duration(rt.est.Load())
}

// backgroundTimeout is how long a started cycle may take to complete
// before the Runtime stops waiting for it.
const backgroundTimeout = time.Second

// threshold is the garbage, in bytes, that makes a cycle worth running.
func (rt *Runtime) threshold() uint64 {
	t := float64(rt.cfg.minGarbage)
	t = max(t, rt.cfg.liveRatio*float64(rt.r.live))
	t *= rt.scale
	if t >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(t)
}

// collect decides about a cycle at an idle moment inside activity.
// rt.mu must be held.
func (rt *Runtime) collect(l *Loop, budget, now time.Duration) (more bool) {
	garbage := rt.r.allocs - rt.baseAllocs
	threshold := rt.threshold()
	if garbage < threshold/backgroundEarly || rt.bg.pending {
		return false // not enough garbage, or a cycle is running
	}
	rt.refill(now)
	if rt.tokens >= rt.capacity() {
		rt.relaxScale()
		threshold = rt.threshold()
	}
	est := rt.cost.estimate(rt.r.live, now)
	fits := float64(est) <= planFactor*float64(budget)
	share := l.idleShare(now)
	runway := rt.runway()
	inline := fits && (rt.cfg.streams || l.covers(est)) && float64(threshold) <= runway
	background := !inline && rt.cfg.background && share >= bgShare &&
		float64(threshold/backgroundEarly) <= runway
	if garbage < threshold && !background {
		// Only a background cycle starts this early: see backgroundEarly.
		return false
	}
	if !inline && !background {
		if budget > 0 {
			switch {
			case float64(threshold) > runway:
				rt.stats.DeclinedPacer++
			case fits:
				rt.stats.DeclinedLull++
			case !rt.cfg.background:
				rt.stats.DeclinedBudget++
			}
		}
		return false
	}
	// A cycle larger than the whole bucket may run when the bucket is
	// full; the debt it leaves is paid back before the next one.
	need := min(est, rt.capacity())
	if rt.tokens < need {
		if budget > 0 {
			rt.stats.DeclinedCap++
			// Once per threshold's worth of garbage declined, not
			// at every step that finds the same cycle unaffordable.
			if rt.r.allocs-rt.scaledAt >= threshold {
				rt.scale = min(rt.scale*scaleUp, maxScale)
				rt.scaledAt = rt.r.allocs
			}
		}
		return false
	}
	if budget <= 0 {
		return true // a cycle is due and allowed; this step may not run it
	}
	if inline {
		rt.inline(garbage, budget, now)
	} else {
		rt.background(garbage, budget, est, now)
	}
	if rt.tokens >= rt.capacity()/2 {
		rt.scale = max(rt.scale/scaleDown, 1)
	}
	return false
}

// runway is how much garbage a stepper's cycle may wait for and still come
// before the runtime's own: pacerShare of the distance from the live heap
// to the heap goal. Past it the runtime may be about to run the same cycle
// concurrently, without holding the loop, and the step would pay a cycle's
// cost for little memory. With GOGC=off the goal is out of reach and so
// is the limit. rt.mu must be held.
func (rt *Runtime) runway() float64 {
	if rt.r.goal <= rt.r.live {
		return 0
	}
	return pacerShare * float64(rt.r.goal-rt.r.live)
}

// pacerShare is the part of the pacer's runway (goal minus live heap) a
// stepper's cycle may wait for: the runtime starts its own cycle at 70-95 %
// of that runway, so up to 70 % the stepper's comes first (see
// doc/policy.md).
const pacerShare = 0.7

// relaxScale lowers a raised threshold by one step, at most once per
// threshold's worth of allocation: the cap has room again (the bucket is
// full), whether or not the cycles it declined ever ran. rt.mu must be
// held.
func (rt *Runtime) relaxScale() {
	if rt.scale > 1 && rt.r.allocs-rt.scaledAt >= rt.threshold() {
		rt.scale = max(rt.scale/scaleDown, 1)
		rt.scaledAt = rt.r.allocs
	}
}

// A background cycle starts at half the garbage an inline one waits for
// (the threshold halved): it frees memory later, since the program keeps
// allocating while it marks (see doc/policy.md).
const backgroundEarly = 2

// How the threshold follows a short CPU cap: up by half for every
// threshold's worth of garbage the cap declines to collect, back down by a fifth at every cycle that leaves the
// bucket at least half full, never more than 16 times the configured one.
const (
	scaleUp   = 1.5
	scaleDown = 1.2
	maxScale  = 16
)

// inline runs one whole cycle in the caller and learns its cost.
// rt.mu must be held.
func (rt *Runtime) inline(garbage uint64, budget, start time.Duration) {
	live, cycles := rt.r.live, rt.r.cycles
	rt.trap.arm(rt.env.gc(budget))
	end := rt.env.now()
	d := end - start
	rt.charge(d)
	rt.stats.CyclesInline++
	rt.stats.CycleTime += d
	rt.stats.AllocatedBetween += garbage
	rt.stats.LastAllocatedBetween = garbage
	rt.cost.learn(live, d, end)
	rt.env.read(&rt.r)
	if rt.r.cycles == cycles {
		// Still marking after the budget: the runtime finishes it
		// concurrently. Wait for it as for a background cycle, and
		// charge what the collector uses meanwhile.
		rt.bg.pending = true
		rt.bg.cycles = cycles
		rt.bg.cpu = rt.env.gcCPU()
		rt.bg.charge = 0
		rt.bg.at = end
	}
	// The cycle ended just now: count garbage from here, not from the
	// look before it (what the cycle itself allocated is not garbage).
	rt.prevAllocs = rt.r.allocs
	rt.observe(end)
}

// background starts a cycle for the runtime to run concurrently and
// charges the cap the estimate of an inline one, settled when the cycle
// completes against the collector's CPU time measured meanwhile.
// rt.mu must be held.
func (rt *Runtime) background(garbage uint64, budget, est, now time.Duration) {
	cpu := rt.env.gcCPU()
	w, started := rt.env.start(budget)
	rt.trap.arm(w)
	if !started {
		return
	}
	rt.bg.pending = true
	rt.bg.cycles = rt.r.cycles
	rt.bg.cpu = cpu
	rt.bg.charge = est
	rt.bg.at = now
	rt.charge(est)
	rt.stats.CyclesBackground++
	rt.stats.AllocatedBetween += garbage
	rt.stats.LastAllocatedBetween = garbage
}

// settleBackground ends a background cycle: it charges the cap what the
// collector used beyond the advance. rt.mu must be held.
func (rt *Runtime) settleBackground() {
	rt.bg.pending = false
	used := max(rt.env.gcCPU()-rt.bg.cpu, 0)
	rt.charge(used - rt.bg.charge)
}

func (rt *Runtime) capacity() time.Duration {
	return time.Duration(rt.cfg.cpuCap * float64(rt.cfg.capWindow))
}

// refill credits the CPU-cap bucket with cpuCap of the idle time reported
// since the last refill, or, if no caller ever reported idle time, of the
// wall time elapsed. rt.mu must be held.
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

// Waited implements LoopObserver for a caller that uses the Runtime
// directly (see Loop.Waited).
func (rt *Runtime) Waited(d time.Duration, work bool) { rt.self.Waited(d, work) }

// Stepped implements LoopObserver for a caller that uses the Runtime
// directly (see Loop.Stepped).
func (rt *Runtime) Stepped(d time.Duration, work bool) { rt.self.Stepped(d, work) }

// Lull implements LoopObserver for a caller that uses the Runtime
// directly (see Loop.Lull).
func (rt *Runtime) Lull() bool { return rt.self.Lull() }

// charge takes d from the CPU-cap bucket. rt.mu must be held.
func (rt *Runtime) charge(d time.Duration) {
	rt.tokens -= d
	rt.stats.Charged += d
}

// NextStep implements Deferred for a caller that uses the Runtime
// directly (see Loop.NextStep).
func (rt *Runtime) NextStep() (time.Duration, bool) { return rt.self.NextStep() }

// Stats returns what the Runtime did so far.
func (rt *Runtime) Stats() Stats {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	s := rt.stats
	now := rt.env.now()
	s.CostEstimate = rt.cost.estimate(s.LiveAfterCycle, now)
	s.ThresholdScale = rt.scale
	s.StepsDelayedWork = rt.delayed.Load()
	s.DelayedWorkTime = time.Duration(rt.delayNS.Load())
	return s
}

// Close ends the Runtime: steps after it do nothing and NextStep reports
// no work. It waits for a release in progress. GOGC is never left lowered
// between steps, so there is nothing to restore. Close is needed only by
// programs that drop a Runtime before they exit, and by tests that check
// for leaked goroutines.
func (rt *Runtime) Close() {
	rt.mu.Lock() // no step is between its check of closed and starting a release
	rt.closed.Store(true)
	rt.mu.Unlock()
	rt.wg.Wait()
}
