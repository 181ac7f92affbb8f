package gcstep

import "time"

// A Stepper does one bounded unit of collection work when the caller is idle.
//
// Step works for at most about budget and reports whether more remains:
// more is true when calling Step again right away could do useful work.
// A budget of zero or less means "no work now": Step returns at once and
// still reports more honestly, so callers can decide whether to come back.
type Stepper interface {
	Step(budget time.Duration) (more bool)
}

// Func adapts an ordinary function to the Stepper interface.
type Func func(budget time.Duration) (more bool)

// Step calls f(budget).
func (f Func) Step(budget time.Duration) bool { return f(budget) }

// Chain returns a Stepper that offers each step to the given steppers in
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
