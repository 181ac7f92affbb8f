package gcstep

import (
	"fmt"
	"math"
	"time"
)

// An Option changes one rule of the policy of NewRuntime. Options check
// their argument when NewRuntime applies them and panic, with a message
// that starts with "gcstep:", on a value out of range: a wrong constant in
// a program is a bug to fix, not a condition to handle at run time.
type Option func(*config)

// config holds the policy's knobs; defaults() documents why each default
// was chosen.
type config struct {
	minGarbage   uint64        // collect once at least this many bytes were allocated since the last cycle...
	liveRatio    float64       // ...and at least this fraction of the live heap
	cpuCap       float64       // share of wall time idle collection may use
	capWindow    time.Duration // the cap is a token bucket holding cpuCap*capWindow
	background   bool          // may start cycles that do not fit the budget
	releaseDelay time.Duration // idle time before memory goes back to the OS; 0 disables
}

func defaults() config {
	return config{
		// 1 MiB of garbage per idle cycle is where the urandom demo
		// reaches most of the memory win for the least time; below it
		// every cycle's fixed cost (two stop-the-world phases, waking
		// the mark workers, sweeping) is paid for less and less memory.
		minGarbage: DefaultMinGarbage,
		// See WithLiveRatio.
		liveRatio: DefaultLiveRatio,
		cpuCap:    DefaultCPUCap,
		// A one-second window lets a burst of idle cycles through after
		// a quiet period and still holds the share over any longer run.
		capWindow:    time.Second,
		background:   true,
		releaseDelay: DefaultReleaseDelay,
	}
}

// Defaults of the policy; the Option that changes each one says why it was
// chosen.
const (
	DefaultMinGarbage   = 1 << 20
	DefaultLiveRatio    = 0.5
	DefaultCPUCap       = 0.3
	DefaultReleaseDelay = 1500 * time.Millisecond
)

// WithMinGarbage sets how many bytes the program must have allocated since
// the last collection before an idle step collects again. Default
// DefaultMinGarbage (1 MiB), from the urandom demo with inline cycles:
// at 1 MiB peak RSS was 4.7 MB for about 320 cycles; at 2 MiB 5.7 MB for
// 190; at 0.5 MiB 4.75 MB again (the collector's own memory dominates) for
// 560; a cycle at every idle moment 4.1-4.5 MB for 1,100-1,250 cycles and
// 2-5 times the wall time. This is also what re-arms the
// stepper: a program that allocates nothing never reaches it, so it runs
// no cycle however often Step is called. It panics if n is zero.
func WithMinGarbage(n uint64) Option {
	return func(c *config) {
		if n == 0 {
			panic("gcstep: WithMinGarbage(0): a zero threshold would collect at every step")
		}
		c.minGarbage = n
	}
}

// WithLiveRatio sets how much garbage, as a fraction of the live heap,
// makes an idle collection worth its cost; the larger of this and the
// WithMinGarbage threshold applies. Default DefaultLiveRatio (0.5):
// marking costs time in proportion to the live heap, so asking for garbage
// in proportion to it bounds the time paid per byte freed. Half of what
// GOGC=100 lets accumulate means at most twice the runtime's own number of
// cycles for a peak heap of 1.5 instead of 2 times the live heap; a
// smaller ratio buys less memory for each extra cycle. The rule does not
// use the heap goal, so it works with GOGC=off, where the goal is
// infinite, and under a memory limit. It panics if r is negative, NaN or
// infinite.
func WithLiveRatio(r float64) Option {
	return func(c *config) {
		if !(r >= 0) || math.IsInf(r, 1) {
			panic(fmt.Sprintf("gcstep: WithLiveRatio(%v): ratio must be finite and >= 0", r))
		}
		c.liveRatio = r
	}
}

// WithCPUCap sets the share of wall time that idle collection may take,
// between 0 (exclusive) and 1. The share is kept by a token bucket: time
// is earned at this rate up to one second's worth; an inline cycle pays
// the wall time it took; a background cycle pays the estimate of an inline
// one when it starts, settled when it ends against the collector's CPU
// time measured meanwhile (marking on otherwise idle Ps excepted: it costs
// the program nothing). A cycle dearer than estimated leaves a debt that
// is paid before the next one, so the share holds over any run longer than
// a few cycles.
//
// Default DefaultCPUCap (30 %), more than one would like to name, chosen
// from measurements: on the urandom demo an inline cycle costs about
// 0.3 ms on a quiet 2-core machine, and the memory win needs one per MiB
// allocated, about a fifth of the run's wall time. That time is spent
// while the loop has nothing to do, so the run was not slower (1.04x);
// with a 10 % cap most cycles were declined and peak RSS stayed near where
// the pacer alone puts it (7.9 MB against 5.1 MB at GOGC=100). On a loaded
// machine, where the estimate sends most cycles to the background and
// those cost little CPU, caps of 5 to 30 % performed alike. Lower it for a
// loop that is busy most of the time, where a cycle run in a short idle
// gap delays the next event.
//
// With GOGC=off the stepper is the only collector: a cycle the cap
// declines is not made up by the runtime, so the heap grows; keep a
// GOMEMLIMIT as a backstop there. It panics if f is not in (0, 1].
func WithCPUCap(f float64) Option {
	return func(c *config) {
		if !(f > 0 && f <= 1) {
			panic(fmt.Sprintf("gcstep: WithCPUCap(%v): fraction must be in (0, 1]", f))
		}
		c.cpuCap = f
	}
}

// WithBackground says whether a step may start a cycle it cannot finish
// within its budget. Default true: when the estimated cost of a cycle does
// not fit the budget, the step lowers the runtime's pacer (GOGC) so that
// the runtime starts a concurrent cycle at the program's next allocation,
// and restores GOGC once that cycle is done; the caller is not stalled.
// With false such steps decline, and only cycles that fit the budget run.
func WithBackground(on bool) Option {
	return func(c *config) { c.background = on }
}

// WithReleaseDelay sets how long the program must stay idle (allocate
// nothing) before the slow tier returns free memory to the operating
// system, once per idle stretch. Default DefaultReleaseDelay (1.5 s): long
// enough that a loop pausing between bursts does not give memory back only
// to fault it in again (returning and refaulting costs more than a cycle),
// short enough that an idle process shrinks soon, as G1's periodic
// collection and ZGC's uncommit delay do. Zero disables the tier. It
// panics if d is negative.
func WithReleaseDelay(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			panic(fmt.Sprintf("gcstep: WithReleaseDelay(%v): delay must be >= 0", d))
		}
		c.releaseDelay = d
	}
}
