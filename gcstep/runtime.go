package gcstep

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Runtime is a Stepper over the Go runtime's collector. At each idle
// moment of a loop it reads the heap (runtime/metrics: no stop-the-world),
// decides and acts (doc/policy.md):
//
//   - It collects when there is garbage enough, the cycle fits the loop's
//     expected gap (with more than one P), and the budget (WithBudget)
//     pays for it: the collector's CPU as measured in this process's
//     cycles, less what the pacer would have spent on the same garbage,
//     the delay to the loop's work, and the pages it would have the
//     runtime return to the OS and fault back. Where cycles are cheap
//     the heap stays small; where they are dear the pacer collects, as
//     it would without a Runtime.
//   - Once every loop and Work sharing it has been quiet for the quiet
//     period (WithReleaseDelay), it returns the free memory to the OS,
//     once per quiet stretch, within the budget.
//   - Under GOGC=off without a memory limit, while a Runtime is open the
//     process gets a soft memory limit at what GOGC=100 would allow,
//     moved after every cycle: the heap stays bounded through bursts
//     that have no idle moment. GOGC and the memory limit are otherwise
//     left as the program set them.
//
// Only allocation re-arms it: a program that allocates nothing gets no
// cycle however often it steps.
//
// The collector is process-wide, and so is what a Runtime keeps: a
// Runtime made while another is open joins it, sharing its heap
// readings, prices, budget, quiet stretches and bound (the options of the
// first apply, but for WithDecisions). Several event loops share it
// through a Loop handle each, code without a loop through Work handles.
// Step is safe for concurrent use: a step made while another goroutine
// steps returns false at once, except with a zero budget, which waits and
// answers.
type Runtime struct {
	c    *core
	self *Loop

	mu      sync.Mutex // guards handles and closed
	handles []func()   // what Close detaches: this Runtime's Loops and Works
	closed  bool
	dec     *func(Decision)
}

// procCore is the process's core while a Runtime is open; procStarted
// says a core was made before, and had the start's tokens.
var (
	procMu      sync.Mutex
	procCore    *core
	procStarted bool
)

// NewRuntime returns a Stepper over the Go runtime with the policy
// described on Runtime, changed by opts. It panics, with a message that
// starts with "gcstep:", if an option is out of range.
func NewRuntime(opts ...Option) *Runtime {
	cfg := configure(opts)
	procMu.Lock()
	defer procMu.Unlock()
	if procCore == nil {
		procCore = newCore(realEnv(), cfg, true, !procStarted)
		procCore.onClose = func() { procCore = nil }
		procStarted = true
	}
	return procCore.join(cfg)
}

func configure(opts []Option) config {
	cfg := defaults()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return cfg
}

// Close detaches the Runtime's Loops and Works; steps through them do
// nothing after it. Closing the last Runtime of the process waits for a
// release in progress and takes back the memory limit of GOGC=off's
// bound, if it is still the one the Runtime set. Close is idempotent.
func (rt *Runtime) Close() {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return
	}
	rt.closed = true
	hs := rt.handles
	rt.handles = nil
	rt.mu.Unlock()
	for _, detach := range hs {
		detach()
	}
	rt.self.Close()
	if rt.dec != nil {
		remove(rt.c, &rt.c.dec, rt.dec)
	}
	if rt.c.onClose != nil {
		procMu.Lock()
		defer procMu.Unlock()
	}
	rt.c.leave()
}

// Loop returns a new handle for one event loop sharing rt (see Loop).
func (rt *Runtime) Loop() *Loop {
	l := rt.c.newLoop()
	if !rt.own(l.Close) {
		l.Close()
	}
	return l
}

// own records a handle for Close to detach, and reports false if rt is
// closed already.
func (rt *Runtime) own(detach func()) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return false
	}
	rt.handles = append(rt.handles, detach)
	return true
}

// Stats returns what the process's Runtimes did so far.
func (rt *Runtime) Stats() Stats {
	c := rt.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.earn()
	s := c.stats
	s.CycleCost, s.CycleWall, s.PacerCycleCost, s.ReleaseCost = c.cost.v, c.wall.v, c.pacer.v, c.relCost.v
	return s
}

// Step implements Stepper for a caller that uses the Runtime directly:
// it reads, decides and acts once, and reports whether calling again now
// would do anything. With budget <= 0 it only looks: it reports true when
// a cycle or a release is due.
func (rt *Runtime) Step(budget time.Duration) bool { return rt.self.Step(budget) }

// Lull implements LoopObserver (see Loop.Lull).
func (rt *Runtime) Lull() bool { return rt.self.Lull() }

// Waited implements LoopObserver (see Loop.Waited).
func (rt *Runtime) Waited(d time.Duration, work bool) { rt.self.Waited(d, work) }

// Stepped implements LoopObserver (see Loop.Stepped).
func (rt *Runtime) Stepped(d time.Duration, work bool) { rt.self.Stepped(d, work) }

// NextStep implements Deferred (see Loop.NextStep).
func (rt *Runtime) NextStep() (time.Duration, bool) { return rt.self.NextStep() }

// Stats counts what the process's Runtimes did, since the first of them
// was made.
type Stats struct {
	Steps           uint64 // calls to Step, including those that did nothing
	CyclesInline    uint64 // cycles started at an idle moment, the loop waiting for the mark
	CyclesOutlasted uint64 // of those, still marking when the step returned: charged once they ended
	CyclesOther     uint64 // cycles the Runtime did not run: the pacer's, the bound's, the program's
	DeclinedBudget  uint64 // looks at which a cycle or release would have cost more than the budget had left, or a cycle more than it earned since the last
	DeclinedGap     uint64 // looks at which a cycle would have outlasted the loop's expected gap
	DeclinedSweep   uint64 // cycles decided but not started: the last cycle's garbage was still being swept when the step's budget ran out
	Releases        uint64 // releases of memory to the OS completed
	ReleasedBytes   uint64 // bytes they returned

	StepTime  time.Duration // wall time inside Step
	CycleTime time.Duration // of which in inline cycles

	StepsDelayedWork uint64        // steps after which the loop found work waiting
	DelayedWorkTime  time.Duration // their total time: a bound on how long that work waited

	// Earned is the budget earned from the program's CPU time, Charged
	// what looks, cycles and releases were measured to cost
	// (doc/policy.md): within Earned and the start's tokens, but for the
	// action that crossed them. Churn is the part of Charged for the
	// scavenging after cycles of ours and the faults back of what it and
	// releases returned.
	Earned, Charged, Churn time.Duration

	// The prices as learned so far (doc/policy.md): a cycle of ours, how
	// long it holds the loop, a cycle of the pacer's, and a release (its
	// own: its faults back are priced from the heap and charged as Churn).
	CycleCost, CycleWall, PacerCycleCost, ReleaseCost time.Duration

	Bounds         uint64 // times GOGC=off's bound set or moved the memory limit (see Runtime)
	LiveAfterCycle uint64 // the live heap the last cycle found
	// GOGCRepaired counts the times the program put back the 1 % that
	// a call of its to debug.SetGCPercent read during a kick, and the
	// Runtime restored the program's value.
	GOGCRepaired uint64
}

// A Loop is one event loop's share of a Runtime: the Stepper that loop
// passes to its multiplexer (poller.WithStepper(rt.Loop())) when several
// loops share one Runtime. It keeps what the loop reports: its gaps,
// which say whether a cycle may hold it, and when it last had work, which
// says whether the process is quiet. A loop that stops for good should
// Close its handle, or the Runtime takes its last work for its last.
type Loop struct {
	c        *core
	lastWork atomic.Int64 // env.now in ns when the loop last had work; 0: never
	observed atomic.Bool  // the loop reports (Lull, Waited): activity is what it says
	worked   atomic.Bool  // the loop had work since the last Lull
	gapUntil atomic.Int64 // Lull says no before this: a cycle did not fit the loop's gaps (env.now, ns)
	closed   atomic.Bool

	mu   sync.Mutex // guards gaps
	gaps ring       // the idle time it expects ahead is their median
}

// A ring keeps the last eight durations of a kind: their median is what
// one odd one (a preempted look, a gap cut short) does not move.
type ring struct {
	d [8]time.Duration
	n int
}

func (r *ring) add(d time.Duration) { r.d[r.n%len(r.d)] = d; r.n++ }

// median is the ring's median; 0 if it is empty.
func (r *ring) median() time.Duration {
	g, n := r.d, min(r.n, len(r.d))
	if n == 0 {
		return 0
	}
	slices.Sort(g[:n])
	return g[n/2]
}

// Step implements Stepper: the Runtime's step at this loop's idle moment.
func (l *Loop) Step(budget time.Duration) bool { return l.c.step(l, budget) }

// Lull implements LoopObserver. It is asked at the first idle moment
// after the loop did work, which it records as the end of that work (if
// the loop reported work since: Waited or Stepped), and
// says whether a step could do anything: false for a millisecond after
// a look, so that a busy loop reads the heap at most a thousand times a
// second, and false while a cycle would not fit the loop's gaps.
func (l *Loop) Lull() bool {
	now := l.c.env.now()
	l.observed.Store(true)
	if l.worked.Swap(false) {
		l.lastWork.Store(int64(now)) // the end of the work
	}
	if l.closed.Load() || int64(now) < max(l.c.nextLook.Load(), l.gapUntil.Load()) {
		return false
	}
	// A cycle that would not fit the loop's gap is not run (decide): no
	// look, and no zero-timeout poll, in a burst's lulls, for lookEvery,
	// so that each dispatch does not ask GOMAXPROCS and the gaps again.
	wall := ewma{v: time.Duration(l.c.wallV.Load()), n: 1, last: time.Duration(l.c.wallT.Load())}
	if w := wall.at(now); w > 0 && l.c.env.procs() > 1 { // 0 while none is learned
		if g := l.gap(); g > 0 && w > g {
			l.gapUntil.Store(int64(now + lookEvery))
			return false
		}
	}
	return true
}

// Waited implements LoopObserver: a blocking wait of d ended with work
// ready, or timed out. A wait that ended with work is a gap.
func (l *Loop) Waited(d time.Duration, work bool) {
	l.observed.Store(true)
	if !work {
		return
	}
	l.lastWork.Store(int64(l.c.env.now()))
	l.worked.Store(true)
	l.mu.Lock()
	l.gaps.add(d)
	l.mu.Unlock()
}

// Stepped implements LoopObserver: a step took d and work was waiting
// after it, or not (Stats.StepsDelayedWork).
func (l *Loop) Stepped(d time.Duration, work bool) {
	if !work {
		return
	}
	l.lastWork.Store(int64(l.c.env.now()))
	l.worked.Store(true)
	l.c.delayed(d)
}

// NextStep implements Deferred: how long until the process will have
// been quiet for the quiet period, when a step looks at the quiet
// stretch (it releases if the program allocated enough since the last
// release and the budget pays for it), and false if no look is to come:
// work in flight, a release running, or this stretch looked at already.
func (l *Loop) NextStep() (time.Duration, bool) {
	if l.closed.Load() {
		return 0, false
	}
	return l.c.releaseDue()
}

// Close detaches the handle: the Runtime no longer waits for its loop to
// become quiet, and its steps do nothing. Close is idempotent.
func (l *Loop) Close() {
	if !l.closed.Swap(true) {
		remove(l.c, &l.c.loops, l)
	}
}

// gap is the median of the loop's recent gaps; 0 if it has none yet.
func (l *Loop) gap() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gaps.median()
}
