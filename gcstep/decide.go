package gcstep

import (
	"fmt"
	"time"
)

// A snapshot is everything the decision needs, read at one look: the
// Decision's readings and prices (the heap, the time ahead, the budget
// left), and what the program does not see. It is filled by
// core.snapshot and nothing else; decide reads nothing else.
type snapshot struct {
	Decision                 // Budget <= 0: a look that may not act
	quiet      bool          // every loop and Work has been quiet for the quiet period
	armed      uint64        // bytes allocated since the last release
	marking    bool          // a cycle of ours is still marking
	refill     bool          // the heap grows back into a release's pages: no cycle of the pacer's since it (GOGC on)
	procs      int           // GOMAXPROCS: with one P nothing runs beside the loop
	release    time.Duration // what a release would be charged, and its faults back
	reserve    time.Duration // what cycles leave of tokens for the next release: its price, if releases are on
	minGarbage uint64
}

// An action is what a look does.
type action uint8

const (
	doNothing action = iota
	doInline         // run a cycle and wait for its mark phase: the loop's idle time covers it
	doRelease        // collect and return the free memory to the OS, on a goroutine of its own
)

// decide is the policy: one action for one snapshot, and why. It is
// pure. The budget says how much: an action runs only while the tokens
// pay for its measured price (its cost less what it saves the pacer:
// charge; and the pages it would make go and come back: churn), cycles
// leaving a release's price in reserve; and how often: a cycle waits
// until the budget earned its charge and churn since the last cycle
// ended, an even pace that savings do not speed up. The heap says
// whether: garbage enough for a cycle, and none while it grows back into
// the pages a release returned (the allocator faults those in beside the
// pages a cycle frees), a quiet process that allocated since the last
// release. The time ahead says when: with more than one
// P a cycle runs only where it fits the loop's expected gap; with one P
// the loop's next event needs the collector's P anyway, so the loop waits
// for the cycle wherever it is. Everything else is left to the pacer.
// doc/policy.md says why each rule is there.
func decide(s snapshot) (action, Outcome) {
	if s.quiet && s.armed >= s.minGarbage {
		switch {
		case s.Tokens < s.release:
			return doNothing, OutcomeBudget
		case s.Budget <= 0:
			return doNothing, OutcomeDue
		}
		return doRelease, OutcomeRelease
	}
	if s.quiet || s.marking || s.refill || s.Garbage < s.minGarbage {
		return doNothing, OutcomeNone
	}
	ch := charge(s.Cost, s.Pacer, s.Garbage, s.Pile) // the cycle's own, its churn aside
	price := ch + s.Churn                            // and the pages it would move
	if s.Cost == 0 {
		price = 0 // no cycle of ours priced yet: the first learns what one costs
	}
	switch {
	case s.procs > 1 && s.Gap > 0 && s.Wall > s.Gap:
		return doNothing, OutcomeGap
	case s.Tokens-s.reserve < price || s.Since < price:
		return doNothing, OutcomeBudget
	case s.Budget <= 0:
		return doNothing, OutcomeDue
	}
	return doInline, OutcomeInline
}

// charge is what a cycle of ours that collects garbage and costs cost
// costs the budget: a pacer that lets pile bytes pile up would have paid
// garbage/pile of one of its cycles, at pacer, for the same garbage, so
// only the rest is extra (doc/policy.md). Before a pacer's cycle was
// seen it is taken to cost what ours does; with no pacer (pile 0) the
// cycle is all extra.
func charge(cost, pacer time.Duration, garbage, pile uint64) time.Duration {
	if pile == 0 {
		return cost
	}
	if pacer == 0 {
		pacer = cost
	}
	saved := time.Duration(float64(pacer) * min(1, float64(garbage)/float64(pile)))
	return max(cost-saved, 0)
}

// An Outcome is what a look at the heap came to.
type Outcome uint8

// The outcomes of a look.
const (
	// OutcomeNone: too little garbage for a cycle (WithMinGarbage), a
	// heap growing back into the pages a release returned (until the
	// pacer's next cycle), or a quiet process with nothing allocated
	// since the last release.
	OutcomeNone Outcome = iota
	// OutcomeBudget: a cycle or a release would cost more than the
	// budget has left, or a cycle more than it earned since the last
	// cycle (Stats.DeclinedBudget); the pacer collects.
	OutcomeBudget
	// OutcomeDue: a cycle or a release is due at a look that may not
	// act (a zero budget); the next step with a budget takes it.
	OutcomeDue
	// OutcomeInline: a cycle ran, the loop waiting for its mark phase.
	OutcomeInline
	// OutcomeGap: with more than one P, a cycle would outlast the
	// loop's expected gap, and its next event would wait for it
	// (Stats.DeclinedGap); the pacer collects.
	OutcomeGap
	// OutcomeRelease: the process was quiet; a release was started.
	OutcomeRelease
	// OutcomeSweep: a cycle was decided but not started, the last
	// cycle's garbage still being swept when the step's budget ran out
	// (Stats.DeclinedSweep).
	OutcomeSweep
)

var outcomeNames = [...]string{
	OutcomeNone:    "none",
	OutcomeBudget:  "budget",
	OutcomeDue:     "due",
	OutcomeInline:  "inline",
	OutcomeGap:     "gap",
	OutcomeRelease: "release",
	OutcomeSweep:   "sweep",
}

// String returns the outcome's name: "none", "budget", "due", "inline",
// "gap", "release" or "sweep".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// A Decision is one look of the Runtime at the heap, with what it read,
// the prices it weighed and what it did. WithDecisions hands every look
// that found garbage enough to collect, or a quiet process to release,
// to the program.
type Decision struct {
	At      time.Duration // when, since the process's first open Runtime was made
	Budget  time.Duration // the step's budget; 0 for a look that may not act
	Outcome Outcome

	Garbage uint64 // bytes allocated since the last cycle ended
	Live    uint64 // the live heap the last cycle found
	Pile    uint64 // the garbage the pacer lets pile up; 0 under GOGC=off

	Gap    time.Duration // the loop's expected idle time ahead; 0: unknown
	Wall   time.Duration // how long a cycle holds a loop that waits for it
	Cost   time.Duration // what the cycle it would run costs the process, measured
	Pacer  time.Duration // what a cycle of the pacer's costs, measured; 0: none seen yet
	Churn  time.Duration // what returning and faulting back the pages the cycle would have the scavenger return costs
	Tokens time.Duration // the budget left before the action
	Since  time.Duration // what the budget earned since the last cycle ended: a cycle waits until it pays the cycle's charge and churn
}
