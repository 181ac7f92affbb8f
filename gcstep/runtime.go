package gcstep

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Runtime is a Stepper over the Go runtime's collector. Go has no API for
// a partial cycle, so each step decides whether a whole cycle is worth
// running now, and how. In short (the model and the measurements behind
// every default are in doc/policy.md):
//
//   - It decides from runtime/metrics (no allocation, no stop-the-world);
//     runtime.ReadMemStats is called only to wait for the end of a cycle
//     of a program at GOGC=off (see inliner).
//   - It prices what it may do at each idle moment and takes the
//     cheapest: a cycle inline (its collector CPU, and the delay it
//     imposes on the loop's next event, predicted from the loop's recent
//     gaps), a cycle started for the runtime to run concurrently (its
//     CPU, and the garbage it cannot collect while it marks), or nothing,
//     leaving the cycle to the runtime's pacer at the heap goal. Memory
//     is priced against CPU at one exchange rate (WithExchangeRate); the
//     garbage at which a cycle pays follows from its price and the
//     program's allocation rate. With GOGC=off the pacer never collects,
//     so the Runtime's cycles keep the heap bounded. A cycle an idle
//     moment priced due a little later is reported by that loop's
//     NextStep (Deferred), so that a loop about to block wakes for it
//     rather than at its next event (see Loop.NextStep).
//   - Once every loop using it has been quiet for a quiet period (see
//     WithReleaseDelay), it collects what the activity left and returns
//     the memory to the operating system, once per quiet stretch, on a
//     goroutine of its own, if the memory freed for the rest of the
//     stretch is worth the release and the page faults that bring it
//     back (measured on this machine).
//   - Where the pages the heap holds already take the garbage as far as
//     the pacer's trigger and past a whole pile of the pacer's beyond its
//     own (left by what the program did before its loop, or a burst),
//     and its own cycles are the cheaper, it returns them in the middle
//     of activity, a trim, once holding them has cost what the release
//     and its page faults do.
//   - All of it draws on a CPU cap earned from idle time (WithCPUCap).
//   - Only allocation re-arms it: a program that allocates nothing gets
//     no cycle however often it steps.
//
// Several event loops may share one Runtime (the collector is
// process-wide): give each its own Loop handle. Step is safe for
// concurrent use: a step made while another goroutine steps returns
// false at once (the other is doing the work there is), except with a
// zero budget, which waits for the other to finish and answers.
//
// A Runtime changes the process's GOGC for the moment it takes to start a
// cycle: to 1 % while it starts one; an inline cycle then waits for its
// mark phase with GOGC restored. A started cycle that lets the program
// allocate more than its allowance while it marks (WithMarkAllowance:
// half its pile) marks the rest with a lower stand-in, whose heap goal is
// a quarter of its pile above the heap, so that the program's
// allocations meet the runtime's assists; with WithMarkSlack it marks
// with such a stand-in from its start. The first dispatch or step after
// the cycle's end puts the program's GOGC back. For
// a program at GOGC=off (and no memory limit) a cycle ends with a finite
// stand-in instead, put back to off once the cycle has ended, so that the
// runtime does not turn on huge pages for its heap metadata (see
// doc/policy.md). A call to
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
	// earned, allocated and earnedOver are the cap's earnings, the
	// bytes the program allocated and the wall time they took, all
	// decayed over earnWindow (see capPile); allocsAt is the heap's
	// allocation count they were last brought up to.
	earned, allocated, earnedOver float64
	allocsAt                      uint64

	cost costModel // wall time of an inline cycle
	p    prices    // everything else the decision weighs

	bg struct { // a cycle started for the runtime to run
		pending bool
		cycles  uint64        // cycle count when it started
		cpu     time.Duration // env.gcCPU when it started
		proc    time.Duration // the process's CPU time when it started (procMark)
		charge  time.Duration // what it was charged in advance
		at      time.Duration // when it started
		live    uint64        // the live heap then
		inline  bool          // an inline cycle that outlived its step
	}
	trap trap

	activityAllocs uint64        // allocs when allocation was last seen
	activityAt     time.Duration // when allocation was last seen
	releasedAllocs uint64        // allocs at the last release to the OS
	releasing      bool          // a release runs on its goroutine
	armAllocs      uint64        // allocs at maybeArmed's last reading
	// trim.at is when the last trim ended (0: none yet), and back says
	// the pacer's pile was found resident again, or the program went
	// quiet, since (endTrimHold); held is how long the trims held the
	// footprint down before that, and stuck since
	// when the looks have found the pile resident with the program
	// allocating (0: the last did not). See trimPays.
	trim struct {
		at    time.Duration
		back  bool
		held  ewma
		stuck time.Duration
	}

	stats Stats

	// Read without mu, by Idled, Lull and NextStep, which loops call
	// while another loop may be stepping.
	idle    atomic.Int64 // idle time reported since the last refill, ns
	idleFed atomic.Bool  // any idle time was ever reported
	closed  atomic.Bool
	dueAt   atomic.Int64 // Lull's answer is no before this time (env.now, ns)
	// unbounded says the last look found the program with no heap goal
	// (GOGC=off and no memory limit, a cycle's stand-in aside): no pacer
	// collects, and Busy starts cycles (see busy).
	unbounded atomic.Bool
	busyAt    atomic.Int64 // Busy looks again no sooner than this (env.now, ns)
	// marking says a started cycle's stand-in GOGC may still be in
	// place (see settleMarking).
	marking atomic.Bool
	// cycleAt is when the cycle priced at cycleLoop's last idle moment
	// falls due (env.now, ns; 0: none is), so that the loop's NextStep
	// ends its wait then (see Loop.NextStep).
	cycleAt   atomic.Int64
	cycleLoop atomic.Pointer[Loop]
	retryAt   atomic.Int64 // a release declined: it is priced again at this time (env.now, ns)
	// quietReleaseAt is when the last release of a quiet stretch began
	// (env.now, ns; 0: none yet), so that the loop whose work ends the
	// stretch records what the release got (see expectedQuiet).
	quietReleaseAt atomic.Int64
	armed          atomic.Bool // allocated enough since the last release to make another
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
	// MarkGoals counts started cycles, and inline ones that outlived
	// their budget, that used up their allowance (WithMarkAllowance)
	// while they marked and marked the rest with a goal near the heap.
	MarkGoals uint64
	// MarkWaits counts idle moments spent waiting for a cycle that
	// marked beside the program past its allowance, and MarkWaitTime
	// their time: the loop sleeps so that the collector's workers get
	// its P (see WithMarkAllowance).
	MarkWaits    uint64
	MarkWaitTime time.Duration
	// DeclinedBudget counts idle moments with garbage to collect at
	// which no cycle could run: an inline one would not fit the budget
	// and background cycles are off (WithBackground).
	DeclinedBudget uint64
	DeclinedCap    uint64 // cycles due but not run: the CPU cap was spent
	// Backstops counts the cycles run because a program at GOGC=off
	// without a memory limit, where no other collector runs, had piled
	// up as much garbage as GOGC=100 would allow (the live heap, at
	// least 4 MiB): they run whatever the holding rule and the CPU cap
	// say, and are counted in CyclesInline or CyclesBackground too.
	Backstops uint64
	// DeclinedPacer counts idle moments at which the runtime's own
	// cycle at the heap goal was priced cheaper than any of the
	// stepper's, or would come first, or the CPU cap could not pay for
	// cycles that come before it (see WithCPUCap).
	DeclinedPacer uint64
	// DeclinedCushion counts idle moments at which the heap memory the
	// process holds already (free pages, garbage not yet swept) takes
	// the garbage as far as the pacer's trigger: the pacer's cycle then
	// comes before the heap needs more pages, and a cycle of the
	// stepper's would not lower the footprint.
	DeclinedCushion uint64
	// BusyCycles counts the cycles started while the loop had work
	// waiting, in a program with no heap goal (see Loop.Busy); they are
	// counted in CyclesBackground too.
	BusyCycles uint64
	// DeclinedRelease counts quiet stretches in which returning memory
	// to the operating system was priced dearer than keeping it.
	DeclinedRelease uint64
	// Trims counts releases made in the middle of activity: the heap
	// held free pages as far as the pacer's trigger and a whole pile of
	// the pacer's past the stepper's own (left by what the program did
	// before, or a burst), where the stepper's own cycles, cheaper than
	// the pacer's, would keep it lower, and returning them paid
	// (doc/policy.md, "A trim"). They are counted in Releases too.
	Trims uint64

	StepTime  time.Duration // wall time spent inside Step
	CycleTime time.Duration // of which in inline cycles

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
	// inline cycles (with GOMAXPROCS=1 their collector CPU time) and
	// releases, and the collector's CPU time from the start of each
	// background cycle to its end.
	Charged time.Duration

	// AllocatedBetween is the total of the bytes allocated between the
	// previous cycle and each cycle this Runtime ran or started;
	// LastAllocatedBetween is the last such amount.
	AllocatedBetween     uint64
	LastAllocatedBetween uint64
	// LiveAfterCycle is the live heap, in bytes, found by the last cycle
	// this Runtime saw complete.
	LiveAfterCycle uint64
	// CostEstimate is the current estimate of an inline cycle's wall
	// time at the live heap of LiveAfterCycle, and CycleCPU and
	// BackgroundCPU what an inline and a background cycle are believed
	// to cost in collector CPU there.
	CostEstimate  time.Duration
	CycleCPU      time.Duration
	BackgroundCPU time.Duration
	// AllocRate is the program's allocation rate since the last cycle,
	// bytes a second.
	AllocRate float64
	// BackgroundMark is how long a started cycle marks, from its start
	// to the end of its mark phase: the median of the last five timed,
	// 0 until three were.
	BackgroundMark time.Duration
	// FaultPrice is what faulting one released page back in costs on
	// this machine, measured before the first release was priced.
	FaultPrice time.Duration

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
	rt := &Runtime{env: e, cfg: cfg, cost: newCostModel(), p: newPrices()}
	rt.self = &Loop{rt: rt}
	rt.loops.Store(&[]*Loop{rt.self})
	now := e.now()
	e.read(&rt.r)
	rt.unbounded.Store(noGoal(rt.r.goal))
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
	rt.allocsAt = rt.r.allocs
	rt.p.cleared(0, 0, now)
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
	if budget > 0 {
		rt.cycleAt.Store(0) // this step prices the cycle afresh (see onTime)
	}
	rt.look(start)
	switch {
	case rt.closed.Load():
		more = false
	case rt.quiet(start):
		more = rt.emptyGap(budget, start)
	default:
		rt.retryAt.Store(0) // a stretch that ended is not priced again
		more = rt.collect(l, budget, start, false)
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
	rt.settleStandIn()
	rt.env.read(&rt.r)
	rt.unbounded.Store(noGoal(rt.r.goal) || rt.env.standing())
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
		rt.p.cleared(since, rt.r.allocs-rt.prevAllocs, now)
		rt.seenCycles = rt.r.cycles
		rt.stats.LiveAfterCycle = rt.r.live
		if rt.bg.pending && rt.r.cycles > rt.bg.cycles {
			rt.settleBackground(true)
		}
	} else if rt.bg.pending && now-rt.bg.at > backgroundTimeout {
		rt.settleBackground(false) // it never started: do not wait for it forever
	}
	rt.prevAllocs = rt.r.allocs
	rt.p.hold(rt.r.allocs-rt.baseAllocs, now)
	if rt.r.allocs != rt.activityAllocs {
		rt.activityAllocs = rt.r.allocs
		rt.activityAt = now
	}
	if rt.r.allocs-rt.releasedAllocs >= rt.cfg.minGarbage {
		rt.armed.Store(true)
	}
}

// backgroundTimeout is how long a started cycle may take to complete
// before the Runtime stops waiting for it.
const backgroundTimeout = time.Second

// collect decides about a cycle at an idle moment inside activity (see
// decide) and runs or starts it if it is due and the CPU cap allows.
// With budget <= 0 it only looks, unless busy: a look for a loop with
// work waiting (see busy), which has no budget and may only start a
// cycle. rt.mu must be held.
func (rt *Runtime) collect(l *Loop, budget, now time.Duration, busy bool) (more bool) {
	if rt.bg.pending && budget > 0 && !busy && rt.env.overdue(rt.r.cycles) {
		rt.awaitMark(budget)
		return false
	}
	if rt.bg.pending || rt.releasing {
		return false // a cycle is running
	}
	garbage := rt.r.allocs - rt.baseAllocs
	if garbage < rt.cfg.minGarbage {
		var wait time.Duration // unknown: notBefore looks again after a recheck
		if r := rt.p.rate(garbage, now); r > 0 {
			wait = time.Duration(float64(rt.cfg.minGarbage-garbage) / r * float64(time.Second))
		}
		rt.notBefore(now, wait)
		return false
	}
	p := rt.decide(l, budget, now, busy)
	if p.why != &rt.stats.DeclinedCushion {
		rt.trim.stuck = 0
	}
	if p.act == none || p.wait > 0 {
		if p.act == none && budget > 0 {
			*p.why++
		}
		rt.decided(now, budget, busy, garbage, p, rt.outcome(p))
		if !busy && budget > 0 {
			rt.onTime(l, now, p)
		}
		rt.notBefore(now, p.wait)
		return false
	}
	// A cycle larger than the whole bucket may run when the bucket is
	// full; the debt it leaves is paid back before the next one.
	rt.refill(now)
	need := min(p.charge, rt.capacity())
	if rt.tokens < need && !p.backstop {
		if budget > 0 {
			rt.stats.DeclinedCap++
		}
		rt.decided(now, budget, busy, garbage, p, OutcomeCap)
		return false
	}
	if budget <= 0 && !busy {
		rt.decided(now, budget, busy, garbage, p, OutcomeDue)
		return true // a cycle is due and allowed; this step may not run it
	}
	ran := true
	switch {
	case p.act == trim:
		rt.decided(now, budget, busy, garbage, p, OutcomeTrim)
		rt.startRelease(need, 0, true)
		return false
	case p.act == inline:
		// Reported first: the cycle reads the heap again.
		rt.decided(now, budget, busy, garbage, p, OutcomeInline)
		rt.inline(garbage, budget, now)
	case busy:
		// No budget, so no waiting for the sweep: the loop has work.
		if ran = rt.background(garbage, 0, now); ran {
			rt.stats.BusyCycles++
		} else {
			rt.notBefore(now, 0)
		}
	default:
		ran = rt.background(garbage, budget, now)
	}
	if p.act != inline {
		o := OutcomeBackground
		if !ran {
			o = OutcomeNotStarted
		}
		rt.decided(now, budget, busy, garbage, p, o)
	}
	if ran && p.backstop {
		rt.stats.Backstops++
	}
	return false
}

// onTime records when the cycle priced at an idle moment of loop l falls
// due, for l's NextStep: a loop that blocks with garbage piling up wakes
// for it rather than at its next event, which in a stream paced by its
// producer comes after the next burst, with the pile that much past its
// price (doc/policy.md, "On time"). A decline for the pacer, the cushion
// or the budget wakes nobody. rt.mu must be held.
func (rt *Runtime) onTime(l *Loop, now time.Duration, p plan) {
	if p.act == none {
		return
	}
	rt.cycleLoop.Store(l)
	rt.cycleAt.Store(int64(now + p.wait))
}

// Busy implements BusyObserver for the Runtime used directly.
func (rt *Runtime) Busy() { rt.self.Busy() }

// busy is a look for loop l while it has work waiting, in a program with
// no heap goal: it starts a cycle, priced as any (decide), if the garbage
// has paid for one. No inline cycle: it would hold the loop's work for
// the whole cycle. Where a pacer collects, a loop with work waiting
// leaves its garbage to it (doc/policy.md, "Busy loops"): Busy only puts
// back a started cycle's GOGC.
func (rt *Runtime) busy(l *Loop) {
	if rt.closed.Load() || !rt.cfg.background {
		return
	}
	rt.settleMarking()
	now := rt.env.now()
	if now < time.Duration(rt.dueAt.Load()) || now < time.Duration(rt.busyAt.Load()) {
		return
	}
	if !rt.unbounded.Load() {
		// A cycle started in the middle of the work marks on whatever
		// P the work leaves idle. With both Ps taken (the urandom
		// demo's loop and writer) it waited for one for 8-10 ms, held
		// everything allocated meanwhile, and left the pacer's pile
		// resident after all; on the chunk loop and the urandom child
		// such cycles cost 1.1-1.25x the plain loop's CPU for a peak
		// the pacer at GOGC=25 reaches for less.
		rt.busyAt.Store(int64(now + recheck))
		return
	}
	if !rt.mu.TryLock() {
		return
	}
	defer rt.mu.Unlock()
	rt.look(now)
	rt.collect(l, 0, now, true)
	if at := now + busyLookGap; time.Duration(rt.busyAt.Load()) < at {
		rt.busyAt.Store(int64(at))
	}
}

// settleMarking puts the program's GOGC back after a started cycle that
// marked with a stand-in, once the cycle has ended, and sets a started
// cycle's goal once its allowance is used up, if no other goroutine holds
// the Runtime. Lull and Busy call it at every dispatch while the
// stand-in is in place or may be set: left there past the cycle's end,
// the stand-in sets the runtime's next trigger, and a loop that
// dispatches without stepping (Lull says no cycle is due) would look
// again only a millisecond or more later, with the runtime's own cycles
// at that trigger meanwhile; the allowance is used up at the pace the
// loop allocates, between its dispatches.
func (rt *Runtime) settleMarking() {
	if !rt.marking.Load() || !rt.mu.TryLock() {
		return
	}
	rt.settleStandIn()
	rt.mu.Unlock()
}

// settleStandIn puts the program's GOGC back after a cycle that ran with
// a stand-in, if it has ended, or sets a started cycle's goal once its
// allowance is used up (env.settle), and records whether a started
// cycle's stand-in is still in place or may yet be set. rt.mu must be
// held.
func (rt *Runtime) settleStandIn() {
	if rt.env.settle(false) {
		rt.stats.MarkGoals++
	}
	rt.marking.Store(rt.env.marking())
}

// procMark reads the process's CPU time for procSince; -1 where it
// cannot be read.
func (rt *Runtime) procMark() time.Duration {
	if d, ok := rt.env.procCPU(); ok {
		return d
	}
	return -1
}

// procSince is the CPU time the process used since mark (procMark), and
// false where either reading is unknown or none was used.
func (rt *Runtime) procSince(mark time.Duration) (time.Duration, bool) {
	now, ok := rt.env.procCPU()
	if mark < 0 || !ok || now <= mark {
		return 0, false
	}
	return now - mark, true
}

// busyLookGap is the least time between two looks of Busy: a look reads
// the heap, a few microseconds, and a loop with work waiting has better
// things to do.
const busyLookGap = recheck / 4

// notBefore tells Lull that no cycle is due for wait from now: at most
// recheck, and a step looks again whenever the wait is unknown (0).
func (rt *Runtime) notBefore(now, wait time.Duration) {
	rt.dueAt.Store(int64(now + min(max(wait, 0), recheck)))
	if wait <= 0 {
		rt.dueAt.Store(int64(now + recheck))
	}
}

// recheck is the longest Lull believes that no cycle is due without a
// step looking at the heap again.
const recheck = time.Millisecond

// inline runs one whole cycle in the caller and learns its wall time and
// its collector CPU. rt.mu must be held.
func (rt *Runtime) inline(garbage uint64, budget, start time.Duration) {
	live, cycles := rt.r.live, rt.r.cycles
	cpu := rt.env.gcCPU()
	proc := rt.procMark()
	rt.trap.arm(rt.env.gc(budget, rt.markGoal(garbage)))
	rt.marking.Store(rt.env.marking()) // a cycle that outlived its budget may take its goal
	end := rt.env.now()
	d := end - start
	// The cap is charged the loop's time the cycle took, but not time
	// in which the process ran nowhere: a cgroup quota's throttling
	// stops every thread, the loop's too, cycle or not. With a 1-CPU
	// quota the urandom child's inline cycles overran their 1 ms budget
	// by 5.7 ms on average, the cap ran dry, and the pile was left to
	// the pacer (10.7 MiB); charged at most the process's CPU time,
	// 8.5 (bench/README.md, "A started cycle marks within its slack").
	charge := d
	spent, spentOK := rt.procSince(proc) // the process's CPU time over the cycle
	if spentOK {
		charge = min(charge, spent)
	}
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
		rt.charge(charge)
		rt.bg.pending = true
		rt.bg.cycles = cycles
		rt.bg.cpu = cpu
		rt.bg.proc = proc
		rt.bg.charge = charge
		rt.bg.at = end
		rt.bg.live = live
		rt.bg.inline = true
	} else {
		used := rt.env.gcCPU() - cpu
		if spentOK {
			used = min(used, spent) // see settleBackground
		}
		rt.p.inlineCPU.learn(used, model(live))
		if rt.env.procs() == 1 && used > 0 {
			// With one P the cycle's wall time beyond the collector's
			// CPU went to the program's other goroutines, not to
			// collecting: the cap is charged what the collector used.
			charge = min(charge, used)
		}
		rt.charge(charge)
	}
	// The cycle ended just now: count garbage from here, not from the
	// look before it (what the cycle itself allocated is not garbage).
	rt.prevAllocs = rt.r.allocs
	rt.observe(end)
}

// background starts a cycle for the runtime to run concurrently and
// charges the cap the price it was started at, settled when the cycle
// completes against the collector's CPU time measured meanwhile.
// rt.mu must be held.
func (rt *Runtime) background(garbage uint64, budget, now time.Duration) (started bool) {
	cpu := rt.env.gcCPU()
	proc := rt.procMark()
	// What the program allocates while the cycle marks is bounded by
	// the goal it marks with (see markGoal): by default once it has
	// allocated half the pile, with WithMarkSlack from the start. Its
	// lost garbage is priced over the mark time all the same, and that
	// time, learned from the cycles before, is what the goal shortens.
	w, started := rt.env.start(budget, rt.markGoal(garbage))
	rt.trap.arm(w)
	end := rt.env.now()
	rt.p.kick.add(float64(max(end-now, 1)))
	if !started {
		return false
	}
	rt.marking.Store(rt.env.marking())
	charge := rt.p.bgCPU.of(rt.r.live)
	rt.bg.pending = true
	rt.bg.cycles = rt.r.cycles
	rt.bg.cpu = cpu
	rt.bg.proc = proc
	rt.bg.charge = charge
	rt.bg.at = now
	rt.bg.live = rt.r.live
	rt.bg.inline = false
	rt.charge(charge)
	rt.stats.CyclesBackground++
	rt.stats.AllocatedBetween += garbage
	rt.stats.LastAllocatedBetween = garbage
	return true
}

// awaitMark spends an idle moment's budget waiting for a cycle that
// marks beside the program past its allowance (WithMarkAllowance): the
// loop sleeps, parked, until the cycle ends or the budget is spent. A
// loop blocked in its poll system call holds its P, where the
// collector's idle-time workers cannot run, and with both CPUs taken by
// the loop and a writer such a mark got the P only when one of them
// blocked: marks of 2-8 ms where 0.5-1 ms of marking was left, and the
// next cycle started on a live heap that held everything allocated
// meanwhile. The wait is idle time for the CPU cap: the collector's
// CPU it lets run is charged when the cycle completes. rt.mu must be
// held.
func (rt *Runtime) awaitMark(budget time.Duration) {
	d := rt.env.awaitMark(budget, rt.r.cycles)
	rt.idle.Add(int64(d))
	rt.stats.MarkWaits++
	rt.stats.MarkWaitTime += d
}

// markGoal is the goal a cycle started at a pile of garbage marks with:
// with WithMarkSlack that share of the pile above the heap from the
// start; otherwise markGoalShare of it once the program has allocated
// the allowance (WithMarkAllowance) during the mark, or the program's
// goal throughout with an infinite allowance.
func (rt *Runtime) markGoal(garbage uint64) markGoal {
	pile := float64(garbage)
	switch {
	case rt.cfg.markSlack > 0:
		return markGoal{slack: uint64(rt.cfg.markSlack * pile)}
	case math.IsInf(rt.cfg.markAllowance, 1):
		return markGoal{}
	}
	return markGoal{slack: uint64(markGoalShare * pile), after: uint64(rt.cfg.markAllowance * pile)}
}

// markGoalShare is the goal's distance above the heap, as a share of the
// pile, that a started cycle takes once its allowance is used up: the
// share that held the urandom child's peak at GOGC=25's when set from the
// start (doc/policy.md, "A cycle").
const markGoalShare = 0.25

// settleBackground ends a cycle the runtime ran for a step: it charges
// the cap what the collector used beyond the advance and, if the cycle
// completed (done), learns its CPU.
// rt.mu must be held.
func (rt *Runtime) settleBackground(done bool) {
	rt.bg.pending = false
	if done && !rt.bg.inline && rt.r.cycles == rt.bg.cycles+1 {
		// Only ours ended since the start: the last end is its end.
		if mark := rt.env.cycleEnd() - rt.bg.at; mark > 0 && mark < backgroundTimeout {
			rt.p.bgMark.add(float64(mark))
		}
	}
	used := max(rt.env.gcCPU()-rt.bg.cpu, 0)
	if spent, ok := rt.procSince(rt.bg.proc); ok {
		// The collector's CPU time is the runtime's estimate from the
		// time its Ps spent collecting, which a quota's throttling
		// stretches; the process cannot have used more than it did.
		used = min(used, spent)
	}
	if rt.bg.inline {
		rt.charge(used - min(used, rt.bg.charge)) // its wall was charged already
	} else {
		rt.charge(used - rt.bg.charge)
	}
	if !done {
		return
	}
	if rt.bg.inline {
		rt.p.inlineCPU.learn(used, model(rt.bg.live))
	} else {
		rt.p.bgCPU.learn(used, model(rt.bg.live))
	}
}

func (rt *Runtime) capacity() time.Duration {
	return time.Duration(rt.cfg.cpuCap * float64(rt.cfg.capWindow))
}

// refill credits the CPU-cap bucket with cpuCap of the idle time reported
// since the last refill, or, if no caller ever reported idle time, of the
// wall time elapsed. rt.mu must be held.
func (rt *Runtime) refill(now time.Duration) {
	elapsed := max(now-rt.tokensAt, 0)
	earned := elapsed
	if rt.idleFed.Load() {
		earned = time.Duration(rt.idle.Swap(0))
	}
	rt.tokens += time.Duration(rt.cfg.cpuCap * float64(earned))
	rt.tokens = min(rt.tokens, rt.capacity())
	rt.tokensAt = now
	k := math.Exp(-float64(elapsed) / float64(earnWindow))
	rt.earned = rt.earned*k + rt.cfg.cpuCap*float64(earned)
	rt.earnedOver = rt.earnedOver*k + float64(elapsed)
	rt.allocated *= k
	if a := rt.r.allocs; a > rt.allocsAt {
		rt.allocated += float64(a - rt.allocsAt)
		rt.allocsAt = a
	}
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
	s.CycleCPU = rt.p.inlineCPU.of(s.LiveAfterCycle)
	s.BackgroundCPU = rt.p.bgCPU.of(s.LiveAfterCycle)
	s.AllocRate = rt.p.rate(rt.r.allocs-rt.baseAllocs, now)
	s.BackgroundMark = rt.p.bgMark.get()
	s.FaultPrice = rt.p.fault
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
	rt.env.settle(true) // GOGC is the program's again
	rt.mu.Unlock()
	rt.wg.Wait()
}
