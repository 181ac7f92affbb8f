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
// can price what a cycle in that loop's idle moments delays, and tell
// when the process is quiet:
//
//   - an inline cycle is priced with the delay it imposes on this loop's
//     next event, and never runs in two loops at once;
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

	// stretches are the loop's recent quiet stretches: how long each
	// lasted, from its last work to the next.
	stretches recentStretches
	// after are what the recent releases of quiet stretches got: how
	// long each stretch went on after its release began, ended by this
	// loop's work.
	after recentStretches

	work *Work // the Work this handle serves, if any: while it has work in flight, not quiet
}

// How a loop's idleness is measured (see doc/policy.md).
const (
	// gapWindow is how many recent idle gaps (blocking waits that ended
	// with work and were shorter than the quiet period) are kept.
	gapWindow = 8
	// minGaps is how many must be known before they are believed; until
	// then a step is priced as if the next event came at once.
	minGaps = 4
	// quietFactor is how many times the loop's longest recent gap it
	// must be quiet before it counts as quiet, and maxQuiet the longest
	// quiet period that adapting may ask for.
	quietFactor = 4
	maxQuiet    = 250 * time.Millisecond
	// stretchWindow is how many recent quiet stretches are kept to
	// predict how long the next one lasts.
	stretchWindow = 4
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
// cap, and tells the loop's gaps, quiet stretches and activity.
func (l *Loop) Waited(d time.Duration, work bool) {
	l.rt.Idled(d)
	l.waitedAt(l.rt.env.now(), d, work)
}

// waitedAt is Waited without the idle time, for a wait that ended at now:
// a Work reports its waits after the fact.
func (l *Loop) waitedAt(now, d time.Duration, work bool) {
	if !work {
		l.mu.Lock()
		l.observed = true
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observed = true
	// A wait that ends a quiet stretch may be only its last part: the
	// loop may have woken for a timer, or to empty the gap, in it.
	switch q := l.quietPeriod(); {
	case l.lastWork > 0 && now-l.lastWork >= q:
		l.stretches.add(now - l.lastWork)
		if at := time.Duration(l.rt.quietReleaseAt.Load()); at > l.lastWork && at <= now {
			l.after.add(now - at)
		}
	case d < q:
		l.gaps[l.nextGap] = d
		l.nextGap = (l.nextGap + 1) % gapWindow
		l.nGaps = min(l.nGaps+1, gapWindow)
		l.quietFor = 0 // recomputed from the gaps
	}
	l.active(now)
}

// Stepped implements LoopObserver: a step of the loop took d, and work
// was waiting after it or not. Work that waited is counted
// (Stats.StepsDelayedWork) and is activity.
func (l *Loop) Stepped(d time.Duration, work bool) {
	if !work {
		return
	}
	l.rt.delayed.Add(1)
	l.rt.delayNS.Add(int64(d))
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observed = true
	l.active(l.rt.env.now())
}

// Lull implements LoopObserver. It is asked at the first idle moment
// after the loop did work, which it also records as the end of that work.
// It reports true when a cycle may be due: the last decision's garbage
// is expected to have piled up by now at the program's allocation rate,
// or that decision is old. Otherwise a step would decline, and the loop
// had better block at once than poll again to take it.
func (l *Loop) Lull() bool {
	rt := l.rt
	now := rt.env.now()
	l.mu.Lock()
	l.observed = true
	l.active(now)
	closed := l.closed
	l.mu.Unlock()
	if closed || rt.closed.Load() {
		return false
	}
	rt.settleMarking()
	return now >= time.Duration(rt.dueAt.Load())
}

// Busy implements BusyObserver: the loop has work ready at a moment Lull
// said a step could do something. In a program with no heap goal
// (GOGC=off without a memory limit), where nothing else collects, it
// starts a cycle for the runtime to run concurrently if holding the
// garbage has cost what the start and the cycle do, priced as at an idle
// moment with the loop's next event waiting for the whole start; it
// never runs one inline, and reads the heap at most once in 250 µs.
// Where the runtime's pacer collects, a loop with work waiting leaves its
// garbage to the pacer, and Busy only puts back the program's GOGC after
// a started cycle's stand-in (doc/policy.md, "Busy loops"). Between
// looks it returns after a clock reading and three atomic loads.
func (l *Loop) Busy() {
	l.rt.busy(l)
}

// active records work at now. l.mu must be held.
func (l *Loop) active(now time.Duration) {
	l.lastWork = now
	l.dirty = true
}

// expectedDelay is how long the loop's next event is expected to wait
// behind a step that holds the loop for d: the mean, over its recent
// gaps, of what d overruns each. While fewer than minGaps are known,
// the whole of d. A caller that reports nothing delays nothing the
// Runtime can see.
func (l *Loop) expectedDelay(d time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.observed {
		return 0
	}
	if l.nGaps < minGaps {
		return d
	}
	var sum time.Duration
	for _, g := range l.gaps[:l.nGaps] {
		sum += max(d-g, 0)
	}
	return sum / time.Duration(l.nGaps)
}

// lastBudget is the budget of the loop's last step that had one.
func (l *Loop) lastBudget() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.budget
}

// afterRelease is how long the loop's quiet stretches went on after
// their release began, lately (the median), and false if none is known.
func (l *Loop) afterRelease() (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.after.median()
}

// expectedStretch is how long the loop's quiet stretches have lasted
// lately (their median), and false if none is known.
func (l *Loop) expectedStretch() (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stretches.median()
}

// recentStretches keeps a loop's last stretchWindow samples of a
// duration. Guarded by the loop's mu.
type recentStretches struct {
	v    [stretchWindow]time.Duration
	n    int // samples in v, up to stretchWindow
	next int // the slot the next sample overwrites
}

func (r *recentStretches) add(d time.Duration) {
	r.v[r.next] = d
	r.next = (r.next + 1) % stretchWindow
	r.n = min(r.n+1, stretchWindow)
}

// median is the median of the samples, and false if there are none.
func (r *recentStretches) median() (time.Duration, bool) {
	if r.n == 0 {
		return 0, false
	}
	k := r.v // a copy, sorted
	s := k[:r.n]
	slices.Sort(s)
	return s[len(s)/2], true
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

// NextStep implements Deferred: how long from now a step of this loop
// will have work if nothing else happens, and false if none will. That is
// the earlier of two times:
//
//   - when the cycle the loop's last idle moment priced falls due: holding
//     the garbage will then have cost what the cycle does, and a loop
//     that blocks past it would let the pile grow until its next idle
//     moment, which in a stream comes after the next burst (see
//     doc/policy.md, "On time");
//   - when the Runtime will empty the gap if no loop does any more work
//     (see WithReleaseDelay). A loop that is itself quiet while another
//     works is told the other's time: the loops that wake then find the
//     process quiet, or ask again.
//
// With releases off (WithReleaseDelay(0)) it reads at most three atomics
// and the clock.
func (l *Loop) NextStep() (time.Duration, bool) {
	rt := l.rt
	if rt.closed.Load() {
		return 0, false
	}
	next, ok := l.releaseNext()
	if at := time.Duration(rt.cycleAt.Load()); at > 0 && rt.cycleLoop.Load() == l {
		d := max(at-rt.env.now(), 0)
		if !ok || d < next {
			next, ok = d, true
		}
	}
	return next, ok
}

// releaseNext is how long from now the Runtime will empty the gap if no
// loop does any more work, and false if there is nothing to empty.
func (l *Loop) releaseNext() (time.Duration, bool) {
	rt := l.rt
	if rt.cfg.releaseDelay == 0 {
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
	at = max(at, time.Duration(rt.retryAt.Load()))
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
