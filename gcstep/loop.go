package gcstep

import (
	"slices"
	"sync"
	"time"
)

// A Loop is one event loop's share of a Runtime: the Stepper that loop
// passes to its multiplexer (poller.WithStepper(rt.Loop())) when several
// loops, each on its own goroutine and lock, share one Runtime. It keeps
// what that loop reports (its idle gaps, its activity), so the Runtime
// can tell each loop's lulls from its idleness:
//
//   - an inline cycle runs only from a loop whose own idle moments are
//     predicted to cover it, and never in two loops at once;
//   - the process is quiet, and the gap is emptied, only once every
//     loop has been quiet for its quiet period.
//
// A loop that stops for good should Close its handle, or the Runtime
// waits for it to become quiet. The Runtime itself is the handle of a
// caller that uses it directly.
type Loop struct {
	rt *Runtime

	mu       sync.Mutex
	closed   bool
	observed bool // the loop has reported anything
	gaps     [gapWindow]time.Duration
	nGaps    int           // samples in gaps, up to gapWindow
	nextGap  int           // the slot the next sample overwrites
	lastWork time.Duration // when the loop last did work
	dirty    bool          // work since the last quiet step looked at it
	quietFor time.Duration // the loop's quiet period, adapted to its gaps
	budget   time.Duration // the last positive budget of the loop's steps, 0 before one

	idleAcc, wallAcc float64       // decaying sums of idle and wall time
	accAt            time.Duration // when they were last decayed

	// strikes counts recent steps at least a gap long after which work
	// was waiting, up to maxStrikes: each halves the cover the gaps give
	// (see coversLocked); a step that long that delayed nothing takes one
	// back, and a quiet stretch all.
	strikes int

	work *Work // the Work this handle serves, if any: while it has work in flight, not quiet
}

// How a loop's idleness is predicted (see doc/policy.md).
const (
	// gapWindow is how many recent idle gaps (blocking waits that ended
	// with work and were shorter than the quiet period) are kept.
	gapWindow = 8
	// minGaps is how many must be known before they are believed; until
	// then no gap covers a cycle.
	minGaps = 4
	// coverFactor is how much longer than the loop's median gap a
	// cycle may be. A step that overruns the gap makes the work that
	// arrives wait; a producer that does not wait for the loop (a pipe,
	// a stream) absorbs a few gaps' worth, a client waiting for its
	// reply does not.
	coverFactor = 4
	// quietFactor is how many times the loop's longest recent gap it
	// must be quiet before it counts as quiet, and maxQuiet the longest
	// quiet period that adapting may ask for.
	quietFactor = 4
	maxQuiet    = 250 * time.Millisecond
	// bgShare is the share of recent time a loop must spend idle for a
	// background cycle to start from one of its lulls, and
	// shareHalfLife how fast that share forgets.
	bgShare       = 0.9
	shareHalfLife = 50 * time.Millisecond
	// maxStrikes is how many delaying steps in a row stop inline cycles
	// in a loop's lulls: coverFactor halved that many times is below one
	// gap.
	maxStrikes = 3
)

// Loop returns a new handle for one event loop sharing rt (see Loop).
func (rt *Runtime) Loop() *Loop {
	l := &Loop{rt: rt}
	for {
		old := rt.loops.Load()
		n := append(slices.Clip(*old), l)
		if rt.loops.CompareAndSwap(old, &n) {
			return l
		}
	}
}

// Close detaches the handle: the Runtime stops waiting for its loop to
// become quiet, and its steps do nothing. Closing the Runtime's own handle
// (the Runtime used directly) is not possible; close the Runtime.
func (l *Loop) Close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	rt := l.rt
	for {
		old := rt.loops.Load()
		n := slices.DeleteFunc(slices.Clone(*old), func(x *Loop) bool { return x == l })
		if rt.loops.CompareAndSwap(old, &n) {
			return
		}
	}
}

// Step implements Stepper: the Runtime's step (see Runtime), taken at one
// of this loop's idle moments.
func (l *Loop) Step(budget time.Duration) bool {
	l.mu.Lock()
	closed := l.closed
	if budget > 0 {
		l.budget = budget
	}
	l.mu.Unlock()
	if closed {
		return false
	}
	return l.rt.step(l, budget)
}

// Idled implements IdleObserver: it earns the CPU cap (see WithCPUCap).
func (l *Loop) Idled(d time.Duration) { l.rt.Idled(d) }

// Waited implements LoopObserver: a blocking wait of the loop lasted d,
// and ended with something ready (work) or timed out. It earns the CPU
// cap, and tells the loop's gaps and activity.
func (l *Loop) Waited(d time.Duration, work bool) {
	l.rt.Idled(d)
	l.waitedAt(l.rt.env.now(), d, work)
}

// waitedAt is Waited without the idle time, for a wait that ended at now:
// a Work reports its waits after the fact.
func (l *Loop) waitedAt(now, d time.Duration, work bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observed = true
	if d >= l.quietPeriod() {
		// A quiet stretch: the idle share of the activity that
		// follows is measured afresh, or the first part of every
		// burst would look idle.
		l.idleAcc, l.wallAcc, l.accAt = 0, 0, 0
		l.strikes = 0 // and the next activity is judged afresh
	} else {
		l.account(now, d)
	}
	if !work {
		return
	}
	if d < l.quietPeriod() {
		l.gaps[l.nextGap] = d
		l.nextGap = (l.nextGap + 1) % gapWindow
		l.nGaps = min(l.nGaps+1, gapWindow)
		l.quietFor = 0 // recomputed from the gaps
	} else if d < 2*l.quietPeriod() {
		// Quiet, but only just: work came back soon after the loop
		// counted as quiet. Ask for a longer quiet next time.
		l.quietFor = min(2*l.quietPeriod(), maxQuiet)
	}
	l.active(now)
}

// Stepped implements LoopObserver: a step of the loop took d, and work
// was waiting after it or not.
func (l *Loop) Stepped(d time.Duration, work bool) {
	if work {
		l.rt.delayed.Add(1)
		l.rt.delayNS.Add(int64(d))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.medianGapLocked(); m > 0 && d >= m {
		// A step as long as a gap: the prediction that the lull covers
		// it was tested.
		if work {
			l.strikes = min(l.strikes+1, maxStrikes)
		} else {
			l.strikes = max(l.strikes-1, 0)
		}
	}
	if work {
		l.observed = true
		l.active(l.rt.env.now())
	}
}

// Lull implements LoopObserver. It is asked at the first idle moment
// after the loop did work, which it also records as the end of that work.
// It reports true when a cycle could run inline in the loop's gaps (its
// estimate fits the budget of the loop's last step, and the gaps cover it
// or the loop consumes streams), or start in the background because the
// loop is idle most of the time: otherwise a step would decline, and the
// loop had better block at once than poll again to take it.
func (l *Loop) Lull() bool {
	rt := l.rt
	now := rt.env.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observed = true
	l.active(now)
	if l.closed || rt.closed.Load() {
		return false
	}
	// The estimate of the last look first: relaxing only lowers it, so
	// if that one runs inline, so does the estimate now, and Lull takes
	// no lock of the Runtime's and computes no relaxation.
	if l.inlineLocked(time.Duration(rt.est.Load())) || l.inlineLocked(rt.estimate(now)) {
		return true
	}
	return rt.cfg.background && l.idleShareLocked(now) >= bgShare
}

// inlineLocked reports whether a cycle estimated at est could run inline
// at this loop's idle moment: it fits the budget of the loop's last step,
// and the loop consumes streams or its gaps cover it. l.mu must be held.
func (l *Loop) inlineLocked(est time.Duration) bool {
	fits := l.budget == 0 || float64(est) <= planFactor*float64(l.budget)
	return fits && (l.rt.cfg.streams || l.coversLocked(est))
}

// active records work at now. l.mu must be held.
func (l *Loop) active(now time.Duration) {
	l.lastWork = now
	l.dirty = true
}

// account adds a wait of d ending at now to the loop's idle share.
// l.mu must be held.
func (l *Loop) account(now, d time.Duration) {
	if l.accAt != 0 {
		decay := exp2(-float64(now-l.accAt) / float64(shareHalfLife))
		l.idleAcc *= decay
		l.wallAcc *= decay
		l.wallAcc += float64(now - l.accAt)
	} else {
		l.wallAcc += float64(d) // the first wait: nothing to measure from
	}
	l.idleAcc += float64(d)
	l.accAt = now
}

// covers reports whether the loop's idle moments are predicted to cover a
// cycle that costs est.
func (l *Loop) covers(est time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.coversLocked(est)
}

func (l *Loop) coversLocked(est time.Duration) bool {
	if !l.observed {
		return true // a caller that reports nothing: its own loop decides
	}
	m := l.medianGapLocked()
	if m == 0 {
		return false // not known yet
	}
	return coverFactor*m>>l.strikes >= est
}

// medianGapLocked is the median of the loop's recent gaps, 0 while fewer
// than minGaps are known. l.mu must be held.
func (l *Loop) medianGapLocked() time.Duration {
	if l.nGaps < minGaps {
		return 0
	}
	g := l.gaps
	s := g[:l.nGaps]
	slices.Sort(s)
	return s[len(s)/2]
}

// idleShare is the share of the recent past the loop spent idle; 1 for a
// loop that reports nothing.
func (l *Loop) idleShare(now time.Duration) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.idleShareLocked(now)
}

func (l *Loop) idleShareLocked(now time.Duration) float64 {
	if !l.observed {
		return 1
	}
	if l.accAt == 0 {
		return 0 // nothing measured since the last quiet stretch
	}
	decay := exp2(-float64(now-l.accAt) / float64(shareHalfLife))
	idle := l.idleAcc * decay
	wall := l.wallAcc*decay + float64(now-l.accAt)
	return idle / wall
}

// quietPeriod is how long the loop must do nothing to count as quiet:
// quietFactor times its longest recent gap, at least the Runtime's
// release delay, at most maxQuiet. l.mu must be held.
func (l *Loop) quietPeriod() time.Duration {
	if l.quietFor > 0 {
		return l.quietFor
	}
	base := l.rt.cfg.releaseDelay
	if base == 0 {
		base = DefaultReleaseDelay // the tier is off; gaps still need telling from quiet
	}
	q := base
	for _, g := range l.gaps[:l.nGaps] {
		q = max(q, quietFactor*g)
	}
	l.quietFor = min(q, max(maxQuiet, base))
	return l.quietFor
}

// quietAt reports when the loop will have been quiet for its quiet period
// if nothing happens (never while its Work has work in flight), and
// whether it reports at all.
func (l *Loop) quietAt() (at time.Duration, observed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, false
	}
	if l.work != nil && l.work.busy() {
		return never, true
	}
	if !l.observed {
		return 0, false
	}
	return l.lastWork + l.quietPeriod(), true
}

// NextStep implements Deferred: how long from now the Runtime will empty
// the gap if no loop does any more work (see WithReleaseDelay), and false
// if there is nothing to empty. A loop that is itself quiet while another
// works is told the other's time: the loops that wake then find the
// process quiet, or ask again.
func (l *Loop) NextStep() (time.Duration, bool) {
	rt := l.rt
	if rt.closed.Load() || rt.cfg.releaseDelay == 0 {
		return 0, false
	}
	loops := *rt.loops.Load()
	observed, dirty := false, false
	var at time.Duration
	for _, x := range loops {
		q, ok := x.quietAt()
		if !ok {
			continue
		}
		observed = true
		at = max(at, q)
		x.mu.Lock()
		dirty = dirty || x.dirty
		x.mu.Unlock()
	}
	if !observed {
		return rt.legacyNextStep()
	}
	if !dirty || at == never {
		return 0, false // nothing to empty, or a Work's End will say when
	}
	now := rt.env.now()
	if !rt.maybeArmed(now) {
		return 0, false
	}
	return max(at-now, 0), true
}

// maybeArmed reports whether the program may have allocated enough since
// the last release to make another. A reading that says so is believed
// until the release. One that does not is taken again, but at most once
// an armRecheck: a reading costs a few hundred nanoseconds (the runtime
// sums its per-P heap statistics), and goroutines that bounce work
// between them ask at every wait, hundreds of times a millisecond. Until
// it is taken again, the answer is the last reading's: maybe, if the
// program allocated since its reading before (its last wait before a
// quiet stretch is then bounded, and the step at the quiet period's end
// finds out), and no if it did not, so that a loop that allocates nothing
// is not woken for a release. A program that starts allocating within
// armRecheck of such a reading, crosses the release's threshold and goes
// quiet in that time misses the release of that gap.
func (rt *Runtime) maybeArmed(now time.Duration) bool {
	if rt.armed.Load() {
		return true
	}
	if now < time.Duration(rt.recheck.Load()) {
		return rt.allocating.Load()
	}
	if !rt.mu.TryLock() {
		return true // another loop is stepping: ask again after the wait
	}
	defer rt.mu.Unlock()
	rt.env.read(&rt.r)
	rt.observe(now)
	rt.allocating.Store(rt.r.allocs != rt.armAllocs)
	rt.armAllocs = rt.r.allocs
	rt.recheck.Store(int64(now + armRecheck))
	return rt.armed.Load() || rt.allocating.Load()
}

// armRecheck is how long maybeArmed believes a reading that says the
// program has not allocated enough for a release.
const armRecheck = time.Millisecond

// clean marks every loop as looked at by a quiet step.
func (rt *Runtime) clean() {
	for _, x := range *rt.loops.Load() {
		x.mu.Lock()
		x.dirty = false
		x.mu.Unlock()
	}
}
