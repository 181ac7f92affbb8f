package gcstep

import (
	"fmt"
	"time"
)

// A Decision is what the Runtime concluded at one look at the heap with
// garbage enough to collect (WithMinGarbage): at an idle moment of a
// loop, or at a look of Busy. WithDecisions hands every one to the
// program, so that it can see why the stepper collected where it did, or
// why it did not: the prices it weighed and the outcome. Looks with less
// garbage than the threshold, and the releases of quiet stretches
// (Stats.QuietPeriods), are not decisions of this kind; a trim, a release
// in the middle of activity, is one (OutcomeTrim). See doc/policy.md for
// the model.
type Decision struct {
	At      time.Duration // when the look was taken, since the Runtime was made
	Busy    bool          // a look of Busy, for a loop with work waiting, not an idle moment
	Budget  time.Duration // the step's budget; 0 for a look without one
	Outcome Outcome

	// The heap as read at the look, in bytes.
	Garbage   uint64 // allocated since the last cycle ended
	Live      uint64 // what the last cycle found live
	Goal      uint64 // the runtime's heap goal: past 2^62 under GOGC=off without a memory limit
	Footprint uint64 // the process's footprint, which memory is priced as a share of
	Cushion   uint64 // heap memory held already that more garbage can fill (doc/policy.md, "A resident pile")

	// Prices. Cost is what the cheaper of the stepper's own cycles, inline
	// or started, was priced at: the collector's CPU, the delay to the
	// loop's next event, and for a started cycle the memory it cannot
	// free; zero when none could run (OutcomeBudget) or none was priced
	// (a program without a heap goal whose pile reached the bound of
	// Stats.Backstops runs one whatever its price). Ours and Pacer are
	// what clearing the garbage costs a second, in CPU-seconds a second,
	// with the stepper's cycles at their economic pile and with the
	// runtime's pacer at its trigger; both zero where they were not
	// compared (no heap goal, or the decision came before it).
	Cost  time.Duration
	Ours  float64
	Pacer float64
	// Wait is how much longer holding the garbage takes to cost Cost
	// (OutcomeWait).
	Wait time.Duration
}

// An Outcome is what a look at the heap came to.
type Outcome uint8

// The outcomes of a look, in the order the policy reaches them (a trim,
// added last, comes where a cushion would).
const (
	// OutcomeWait: a cycle of the stepper's is the cheaper way, but
	// holding the garbage has not yet cost its price (Decision.Wait).
	OutcomeWait Outcome = iota
	// OutcomePacer: the runtime's own cycle at its heap goal is priced
	// cheaper by the second, or comes first, or the CPU cap cannot pay
	// for cycles of the stepper's that come before it, where Ours is
	// below Pacer (Stats.DeclinedPacer).
	OutcomePacer
	// OutcomeCushion: the heap's resident pages take the garbage as far
	// as the pacer's trigger, so a cycle would lower no footprint
	// (Stats.DeclinedCushion).
	OutcomeCushion
	// OutcomeBudget: no cycle could run: an inline one would not fit the
	// budget and started ones are off (Stats.DeclinedBudget).
	OutcomeBudget
	// OutcomeCap: a cycle was due but the CPU cap was spent
	// (Stats.DeclinedCap).
	OutcomeCap
	// OutcomeDue: a cycle was due at a look that may not run one (a step
	// with no budget, as Lull and NextStep's callers make): the next step
	// with a budget runs it.
	OutcomeDue
	// OutcomeInline: a cycle ran inside the step.
	OutcomeInline
	// OutcomeBackground: a cycle was started for the runtime to run
	// concurrently.
	OutcomeBackground
	// OutcomeNotStarted: a started cycle was due, but the runtime would
	// not start one (its sweep of the last cycle took longer than the
	// step could wait).
	OutcomeNotStarted
	// OutcomeTrim: the heap's resident pages reached as far as the
	// pacer's trigger and a whole pile of the pacer's past the stepper's
	// own, the stepper's cycles are the cheaper, and returning the pages
	// paid: a release was started in the middle of activity
	// (Stats.Trims).
	OutcomeTrim
)

var outcomeNames = [...]string{
	OutcomeWait:       "wait",
	OutcomePacer:      "pacer",
	OutcomeCushion:    "cushion",
	OutcomeBudget:     "budget",
	OutcomeCap:        "cap",
	OutcomeDue:        "due",
	OutcomeInline:     "inline",
	OutcomeBackground: "background",
	OutcomeNotStarted: "not-started",
	OutcomeTrim:       "trim",
}

// String returns the outcome's name: "wait", "pacer", "cushion",
// "budget", "cap", "due", "inline", "background", "not-started" or
// "trim".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// WithDecisions calls f with every Decision the Runtime makes, from the
// goroutine that made it (a loop's step, or Busy), while the Runtime's
// lock is held: f must return quickly and must not call the Runtime.
// The Decision is passed by value and nothing is allocated to make it,
// so a program can record decisions into a buffer it made beforehand
// without disturbing the heap it watches. Default: no callback, and
// nothing is computed for one. A nil f is the default.
func WithDecisions(f func(Decision)) Option {
	return func(c *config) { c.decisions = f }
}

// decided hands the decision at a look to the program's callback, if it
// has one. rt.mu must be held.
func (rt *Runtime) decided(now, budget time.Duration, busy bool, garbage uint64, p plan, o Outcome) {
	f := rt.cfg.decisions
	if f == nil {
		return
	}
	d := Decision{
		At: now, Busy: busy, Budget: max(budget, 0), Outcome: o,
		Garbage: garbage, Live: rt.r.live, Goal: rt.r.goal,
		Footprint: rt.footprint(), Cushion: rt.cushion(garbage),
		Cost: time.Duration(p.cost * float64(time.Second)),
		Ours: p.ours, Pacer: p.pacer,
	}
	if o == OutcomeWait {
		d.Wait = p.wait
	}
	f(d)
}

// outcome is what a plan that runs nothing now comes to.
func (rt *Runtime) outcome(p plan) Outcome {
	if p.act != none {
		return OutcomeWait
	}
	switch p.why {
	case &rt.stats.DeclinedPacer:
		return OutcomePacer
	case &rt.stats.DeclinedCushion:
		return OutcomeCushion
	}
	return OutcomeBudget
}
