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
// One call to Step spends at most budget in total: every stepper gets what
// the ones before it left over, and the chain stops offering once nothing is
// left. Nil steppers are skipped.
func Chain(steppers ...Stepper) Stepper {
	s := make(chain, 0, len(steppers))
	for _, st := range steppers {
		if st != nil {
			s = append(s, st)
		}
	}
	return s
}

type chain []Stepper

func (c chain) Step(budget time.Duration) bool {
	more := false
	start := time.Now()
	for _, s := range c {
		left := budget - time.Since(start)
		if s.Step(left) {
			more = true
		}
	}
	return more
}
