package gcstep

import (
	"fmt"
	"time"
)

// Defaults of the policy. doc/policy.md says where each comes from.
const (
	// DefaultBudget is the share of the program's own CPU time that the
	// Runtime's looks, cycles and releases may cost, measured: 3 %,
	// between the Go scavenger's 1 % and what .NET's DATAS reports for
	// its 80 % smaller working sets (2-3 % of throughput).
	DefaultBudget = 0.03
	// DefaultReleaseDelay is how long every loop and Work must have had
	// nothing to do before the Runtime returns memory to the OS: a tenth
	// of the second within which a server's memory should come back,
	// and longer than the pauses inside a burst and the ticks of
	// ordinary timers (10-50 ms).
	DefaultReleaseDelay = 100 * time.Millisecond
	// DefaultMinGarbage is the least garbage a cycle collects, and the
	// least a program must allocate before another release: below it a
	// cycle's fixed cost buys little (the knee of the urandom demo's
	// peak against its cycles).
	DefaultMinGarbage = 256 << 10
)

// config is what the options set.
type config struct {
	budget       float64
	releaseDelay time.Duration
	minGarbage   uint64
	decisions    func(Decision)
}

func defaults() config {
	return config{budget: DefaultBudget, releaseDelay: DefaultReleaseDelay, minGarbage: DefaultMinGarbage}
}

// An Option changes one rule of NewRuntime's policy. Options check their
// argument when NewRuntime applies them and panic, with a message that
// starts with "gcstep:", on a value out of range. A nil Option is
// skipped.
type Option func(*config)

// WithBudget sets the share of the program's CPU time that idle
// collection may cost, between 0 (exclusive) and 1: what the Runtime's
// looks, cycles and releases are measured to cost (doc/policy.md) never
// exceeds share times the CPU the program used, over any ten seconds of
// it, counted as if it had used a fifth of a second more before its
// first Runtime was made. Within it the Runtime takes all the memory it
// can; past it, it leaves the garbage to the runtime's pacer. Default
// DefaultBudget.
func WithBudget(share float64) Option {
	return func(c *config) {
		if !(share > 0 && share <= 1) {
			panic(fmt.Sprintf("gcstep: budget %v is not in (0, 1]", share))
		}
		c.budget = share
	}
}

// WithReleaseDelay sets the quiet period: how long every loop and Work
// sharing the Runtime must have had nothing to do before it returns the
// memory the activity left to the OS (once per quiet stretch, on a
// goroutine of its own, within the budget). Zero turns releases off.
// Default DefaultReleaseDelay. It panics if d is negative.
func WithReleaseDelay(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			panic(fmt.Sprintf("gcstep: release delay %v is negative", d))
		}
		c.releaseDelay = d
	}
}

// WithMinGarbage sets the least garbage, in bytes, that a cycle
// collects, and how much a program must allocate before another
// release. Only allocation re-arms the Runtime: a program that allocates
// nothing gets no cycle however often it steps. Default
// DefaultMinGarbage. It panics if n is zero.
func WithMinGarbage(n uint64) Option {
	return func(c *config) {
		if n == 0 {
			panic("gcstep: min garbage is zero")
		}
		c.minGarbage = n
	}
}

// WithDecisions calls f with every Decision: each look that found
// garbage enough to collect or a quiet process to release, with what it
// read and did. f runs on the goroutine that looked, with the Runtime's
// lock held: it must return quickly and must not call the Runtime. The
// Decision is passed by value and nothing is allocated to make it.
// A nil f is the default: none.
func WithDecisions(f func(Decision)) Option {
	return func(c *config) { c.decisions = f }
}

// budgetWindow is the stretch of the program's CPU time over which the
// budget holds: the tokens a Runtime may hold are the budget of ten
// seconds of CPU. Long enough that a release after a burst of a few
// seconds is paid for by the burst, short enough that what a long quiet
// run saves cannot be spent at once.
const budgetWindow = 10 * time.Second

// startTokens is the stretch of the program's CPU time whose budget the
// process's first Runtime starts with: the first cycles run cold (they
// cost 1.5-2.5 times what later ones do, 350-650 µs) and come before the
// program has earned them. At the default budget, 6 ms: ten cold cycles.
const startTokens = 200 * time.Millisecond
