package gcstep

import "time"

// A Stepper does one bounded unit of collection work when the caller is idle.
//
// Step plans its work to fit in budget and reports whether more remains:
// more is true when calling Step again right away could do useful work.
// (Work that cannot be cut short may overrun a plan that was wrong; the
// Runtime stepper measures what its work took and learns from it.)
// A budget of zero or less means "no work now": Step returns at once and
// still reports more honestly, so callers can decide whether to come back.
type Stepper interface {
	Step(budget time.Duration) (more bool)
}

// A Deferred is a Stepper whose work can fall due while its caller stays
// idle and nothing else happens: the Runtime stepper returns memory to the
// operating system once its loops have been quiet for a while. A caller about to block with nothing to do bounds
// its wait by NextStep and calls Step when the wait ends; package poller
// does this. A caller that never does simply never gets that work done.
type Deferred interface {
	Stepper
	// NextStep reports how long from now Step will have work even if
	// nothing else happens (zero: now), and false if it will not.
	NextStep() (d time.Duration, ok bool)
}

// An IdleObserver is a Stepper that wants to know how much time its caller
// spends idle: blocked, waiting for something to happen, with nothing to
// do. Package poller reports the duration of every wait that blocked. (The
// Runtime stepper learns what it needs from LoopObserver's reports
// instead.)
type IdleObserver interface {
	Stepper
	// Idled reports that the caller just spent d blocked with nothing to
	// do. It must be cheap and safe for concurrent use: it is called
	// after every blocking wait.
	Idled(d time.Duration)
}

// A LoopObserver is a Stepper that learns from the event loop calling it
// whether the loop's idle moments are idleness or only lulls between
// events (see doc/policy.md). Package poller reports every blocking wait
// and every step to a stepper that implements it, and asks Lull before it
// spends a zero-timeout poll on a step. The Runtime stepper and its Loop
// handles implement it; so does Chain.
type LoopObserver interface {
	Stepper
	// Waited reports a blocking wait that lasted d. work says whether it
	// ended with something to do (an event, a wakeup, the loop's timer
	// due), not by the caller's timeout. It must be cheap.
	Waited(d time.Duration, work bool)
	// Stepped reports a step that took d, and whether the zero-timeout
	// poll that followed it found work waiting: that work waited up to
	// d behind the step. It must be cheap.
	Stepped(d time.Duration, work bool)
	// Lull reports whether a step at the idle moment at hand could do
	// anything. False lets the caller block at once, without the
	// zero-timeout poll a step needs; work that falls due while it
	// blocks is announced by NextStep, for a Deferred. It must be cheap:
	// it is asked after every dispatch.
	Lull() bool
}

// Func adapts an ordinary function to the Stepper interface.
type Func func(budget time.Duration) (more bool)

// Step calls f(budget).
func (f Func) Step(budget time.Duration) bool { return f(budget) }

// Chain returns a Stepper (a Deferred: its NextStep is the earliest of its
// Deferred members'; an IdleObserver and a LoopObserver: it passes what
// its caller reports on to the members that observe it, and has a lull
// while any member might) that offers each step to the given steppers in
// order (put the runtime stepper first, application steppers such as cache
// trimming after it) and reports more while any of them has work left.
//
// One call to Step spends at most about budget in total: every stepper gets
// what the ones before it left over. Once nothing is left, the remaining
// steppers are still asked, with a zero budget, which by the Stepper
// contract does no work and only reports whether work remains: that keeps
// the chain's answer honest without overrunning the budget. Nil steppers
// are skipped.
func Chain(steppers ...Stepper) Stepper {
	c := chain{now: time.Now}
	for _, st := range steppers {
		if st != nil {
			c.s = append(c.s, st)
		}
	}
	return c
}

type chain struct {
	s   []Stepper
	now func() time.Time // time.Now; a fake in tests
}

func (c chain) Step(budget time.Duration) bool {
	more := false
	start := c.now()
	for _, s := range c.s {
		left := max(budget-c.now().Sub(start), 0)
		if s.Step(left) {
			more = true
		}
	}
	return more
}

// NextStep implements Deferred: the earliest NextStep of the steppers in
// the chain that are Deferred.
func (c chain) NextStep() (time.Duration, bool) {
	var next time.Duration
	found := false
	for _, s := range c.s {
		if d, ok := s.(Deferred); ok {
			if n, ok := d.NextStep(); ok && (!found || n < next) {
				next, found = n, true
			}
		}
	}
	return next, found
}

// Idled implements IdleObserver: it reports d to every stepper in the
// chain that is an IdleObserver.
func (c chain) Idled(d time.Duration) {
	for _, s := range c.s {
		if o, ok := s.(IdleObserver); ok {
			o.Idled(d)
		}
	}
}

// Waited implements LoopObserver: members that are LoopObservers get
// Waited, members that are only IdleObservers get Idled.
func (c chain) Waited(d time.Duration, work bool) {
	for _, s := range c.s {
		switch o := s.(type) {
		case LoopObserver:
			o.Waited(d, work)
		case IdleObserver:
			o.Idled(d)
		}
	}
}

// Stepped implements LoopObserver: it reports the step to every member
// that is a LoopObserver.
func (c chain) Stepped(d time.Duration, work bool) {
	for _, s := range c.s {
		if o, ok := s.(LoopObserver); ok {
			o.Stepped(d, work)
		}
	}
}

// Lull implements LoopObserver: true if any member might do work now. A
// member that is not a LoopObserver cannot say, so it always might.
func (c chain) Lull() bool {
	for _, s := range c.s {
		o, ok := s.(LoopObserver)
		if !ok || o.Lull() {
			return true
		}
	}
	return false
}
