package poller

import (
	"sync/atomic"
	"time"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
)

// idler runs the idle algorithm of the package comment around one waitFunc.
// It is the only implementation of that algorithm: Mux's one-shot calls and
// Loop.RunOnce all wait through idler.wait.
type idler struct {
	lock    *gvl.Lock      // nil: nobody ever waits, nothing is released
	stepper gcstep.Stepper // nil: no idle work
	budget  time.Duration  // bound on one Step, > 0
	c       *counters
	// alarm, if not nil, does the stepper's deferred work instead of
	// bounding the waits (a Mux whose goroutines share a lock: see alarm).
	alarm *alarm
	// lullRests makes a Lull that says no clear *mayStep, as a step
	// reporting no more does (a Mux: see its type's comment).
	lullRests bool

	// epoch is the origin of the times kept as nanoseconds since it (see
	// since): the alarm's, a Mux's rest, and these two: when a wait last
	// asked NextStep while the alarm was pending (see deferred), and when
	// a wait during which another goroutine took the lock was last
	// reported (see block); 0: never.
	epoch   time.Time
	askedAt atomic.Int64
	busyAt  atomic.Int64
}

// since is the time from d.epoch to t, in nanoseconds.
func (d *idler) since(t time.Time) int64 { return int64(t.Sub(d.epoch)) }

// once reports whether at least one budget passed between the time in
// last and now, or last is 0, and if so stores now in last. Goroutines
// that race may both pass: it thins a stream of calls out, no more.
func (d *idler) once(last *atomic.Int64, now int64) bool {
	if l := last.Load(); l != 0 && now-l < int64(d.budget) {
		return false
	}
	last.Store(now)
	return true
}

// wait waits up to timeout (negative: indefinitely; zero: one poll that
// cannot block) for poll to report something ready, stepping while idle.
//
// With stepFirst the first step comes before the first poll (WaitFD, which
// usually follows EAGAIN); otherwise a zero-timeout poll comes first
// (Select, Poll, the Loop: data is often ready already).
//
// Steps happen only with the lock uncontended, and only while at least one
// budget is left before the deadline. A step is planned to fit its budget,
// so it delays the deadline (a call's timeout, a Loop's next timer) by
// about one budget; a step that overruns (a collection dearer than
// estimated cannot be cut short) delays it by the overrun, which the
// runtime stepper learns its prices from. Every step is followed by a
// zero-timeout poll, which keeps the lock. Once the stepper reports no
// more work, somebody waits for the lock, or less than a budget is left,
// wait blocks with the lock released.
//
// mayStep says whether the stepper may have work; wait sets it to false
// when a step reports no more, and then takes no step until the caller sets
// it again (a one-shot call at every call, a Loop after dispatching events).
// A stepper that is a gcstep.LoopObserver is also asked Lull first: when
// it has nothing to do at this idle moment, wait blocks at once, with no
// zero-timeout poll, as it would without a stepper (and, with lullRests,
// sets *mayStep to false as a step's "no more" does).
//
// A stepper that is a gcstep.Deferred may have work fall due while the
// program sleeps (the runtime stepper's cycle that falls due in a gap, or
// its emptying of a quiet gap): the blocking wait then ends no later than
// its NextStep (see deferred), steps, and waits on for what is left of
// the timeout. That keeps the deferred work on the loop's own wait, with
// no timer or goroutine of the stepper's. With an alarm, the wait is not
// bounded: the alarm is armed to do that work.
//
// timerDue says that timeout is the caller's next timer's: a blocking
// wait that runs to it ends with work, the timer (see block).
//
// The caller holds the lock, if there is one; it holds it again on return.
func (d *idler) wait(timeout time.Duration, stepFirst, timerDue bool, mayStep *bool, poll waitFunc) (int, error) {
	if timeout == 0 {
		return d.zero(poll)
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	due := false // the stepper's deferred work is due: step whatever Lull says
	for {
		if d.stepper != nil && *mayStep && (due || d.lull(mayStep)) {
			polled := false // a zero-timeout poll came after the last step
			if !stepFirst {
				if n, err := d.zero(poll); n != 0 || err != nil {
					return n, err
				}
				polled = true
			}
			for {
				if d.lock != nil && d.lock.Contended() {
					break
				}
				budget := d.budget
				if timeout > 0 && time.Until(deadline) < budget {
					break
				}
				more, took := d.step(budget)
				if !more {
					// Kept even when the poll below finds work: a
					// Mux rests on it (a Loop sets it again when it
					// dispatches).
					*mayStep = false
				}
				n, err := d.zero(poll)
				d.stepped(took, n != 0 || err != nil)
				if n != 0 || err != nil {
					return n, err
				}
				polled = true
				if !more {
					break
				}
			}
			if timeout > 0 {
				timeout = time.Until(deadline)
				if timeout <= 0 {
					if polled {
						// The last poll was a zero-timeout one,
						// after the last step: the deadline has
						// been honoured.
						return 0, nil
					}
					// Stepping first, the deadline passed before
					// any step or poll: look once, or a ready fd
					// would be reported as a timeout.
					return d.zero(poll)
				}
			}
		}
		wait, deferred := d.deferred(timeout)
		n, err := d.block(wait, timerDue && !deferred, poll)
		if n != 0 || err != nil || !deferred {
			return n, err
		}
		// The stepper's deferred work is due: step for it, then wait
		// on for what is left.
		*mayStep, stepFirst, due = true, true, true
		if timeout > 0 {
			if timeout = time.Until(deadline); timeout <= 0 {
				return 0, nil // the last wait ran to the deadline
			}
		}
	}
}

// lull asks a stepper that is a gcstep.LoopObserver whether this idle
// moment is worth a step; any other stepper may always have work. With
// lullRests, a no clears *mayStep.
func (d *idler) lull(mayStep *bool) bool {
	if o, ok := d.stepper.(gcstep.LoopObserver); ok && !o.Lull() {
		if d.lullRests {
			*mayStep = false
		}
		return false
	}
	return true
}

// stepped reports a step of duration took, and whether work was found
// waiting after it, to the counters and to a gcstep.LoopObserver.
func (d *idler) stepped(took time.Duration, work bool) {
	if work {
		d.c.delayedSteps.Add(1)
		d.c.delayNanos.Add(uint64(took))
	}
	if o, ok := d.stepper.(gcstep.LoopObserver); ok {
		o.Stepped(took, work)
	}
}

// deferred bounds a blocking wait of timeout (nonzero) by the stepper's
// deferred work, if it has any and may do it (nobody waits for the lock).
// It reports the wait to make and whether it was shortened for that work.
// A wait is shortened only where a step fits between its new end and the
// old one (a step needs a budget before the deadline), and never below a
// tenth of a budget, so work that is due but cannot be done now cannot
// make the caller spin: at most ten wakes a budget, and none where no step
// could follow them. A tenth, not a whole budget: the runtime stepper's
// cycle falls due in a stream's idle gap, most of them a little longer
// than a budget, and a wake a budget away would come about when the next
// burst begins. With an alarm, it arms the alarm for that work instead and
// leaves the wait as it is; while the alarm is pending, only one wait a
// budget asks NextStep (the alarm asks again when it fires), so work that
// falls due sooner than the alarm fires is done at most about a budget
// late.
func (d *idler) deferred(timeout time.Duration) (time.Duration, bool) {
	ds, ok := d.stepper.(gcstep.Deferred)
	if !ok || d.lock != nil && d.lock.Contended() {
		return timeout, false
	}
	if d.alarm != nil {
		if now := d.since(time.Now()); d.alarm.pending(now) && !d.once(&d.askedAt, now) {
			return timeout, false
		}
	}
	next, ok := ds.NextStep()
	if !ok {
		return timeout, false
	}
	next = max(next, d.budget/deferredFloor)
	if timeout > 0 && timeout-next < d.budget {
		return timeout, false
	}
	if d.alarm != nil {
		d.alarm.arm(next)
		return timeout, false
	}
	return next, true
}

// deferredFloor is how many times shorter than a step budget a wait may
// be made for a Deferred stepper's work (see deferred).
const deferredFloor = 10

// step runs one Step, accounts for it and reports how long it took.
func (d *idler) step(budget time.Duration) (bool, time.Duration) {
	start := time.Now()
	more := d.stepper.Step(budget)
	took := time.Since(start)
	d.c.steps.Add(1)
	d.c.stepNanos.Add(uint64(took))
	return more, took
}

// zero polls once without blocking, keeping the lock: it cannot block.
func (d *idler) zero(poll waitFunc) (int, error) {
	d.c.zeroPolls.Add(1)
	return d.c.restart(0, poll)
}

// block waits up to timeout (nonzero) with the lock released. The time
// the wait took, without the time spent getting the lock back, is idle
// time: it is counted in Stats.BlockedTime and reported to a stepper that
// is a gcstep.LoopObserver (with whether it ended with something ready)
// or a gcstep.IdleObserver. A wait that times out is work if timerDue
// (a Loop's timer falls due and runs next: a loop driven by its timers is
// working, not quiet), and not otherwise.
//
// A wait during which another goroutine took the lock is reported as no
// idle time at all: the program was working then, on another goroutine
// (two goroutines of a Mux bouncing requests each spend most of their
// time blocked, yet the program is never idle). The lock cannot say how
// long the others held it, so such a wait counts for nothing rather
// than for a guess. And only one such wait a budget is reported: they
// come hundreds a millisecond, each would tell the stepper what the one
// before told it (work, no idle time), and each report writes the
// stepper's state from whichever thread the goroutine runs on, which
// the goroutines bouncing work pay for at every wait (bench/README.md).
func (d *idler) block(timeout time.Duration, timerDue bool, poll waitFunc) (n int, err error) {
	d.c.blockingPolls.Add(1)
	// report hands the idle time to the stepper, if it observes it.
	var report func(idle time.Duration, work bool)
	switch o := d.stepper.(type) {
	case gcstep.LoopObserver:
		report = o.Waited
	case gcstep.IdleObserver:
		report = func(idle time.Duration, _ bool) { o.Idled(idle) }
	}
	// Read before the lock is released: a waiter it is handed to on
	// release takes it during this wait too.
	var acquired uint64
	if d.lock != nil && report != nil {
		acquired = d.lock.Acquisitions()
	}
	wait := func() {
		start := time.Now()
		n, err = d.c.restart(timeout, poll)
		blocked := time.Since(start)
		d.c.blockedNanos.Add(uint64(blocked))
		if report == nil {
			return
		}
		idle := blocked
		if d.lock != nil && d.lock.Acquisitions() != acquired {
			if !d.once(&d.busyAt, d.since(start.Add(blocked))) {
				return
			}
			idle = 0
		}
		report(idle, n != 0 || err != nil || timerDue)
	}
	if d.lock == nil {
		wait()
	} else {
		d.lock.Blocking(wait)
	}
	return n, err
}
