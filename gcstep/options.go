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
	cpuCap       float64       // share of idle time (wall time if none is reported) idle collection may use
	capWindow    time.Duration // the cap is a token bucket holding cpuCap*capWindow
	background   bool          // may start cycles that do not fit the budget
	streams      bool          // inline cycles may delay work while the loop has slack
	releaseDelay time.Duration // idle time before memory goes back to the OS; 0 disables
}

func defaults() config {
	return config{
		// See WithMinGarbage.
		minGarbage: DefaultMinGarbage,
		// See WithLiveRatio.
		liveRatio: DefaultLiveRatio,
		cpuCap:    DefaultCPUCap,
		// The bucket holds what 100 ms of idle time earns (30 ms of
		// collection at the default cap) and starts full, so the first
		// cycles of a run need not wait for idle time to be earned,
		// and a loop that is seldom idle spends only that much before
		// its idle time has to pay. A one-second window (and a 30 %
		// cap) let the benchmark ChunkLoop, a loop that is idle a
		// fifth of the time, spend 300 ms of its first second
		// collecting.
		capWindow:    100 * time.Millisecond,
		background:   true,
		releaseDelay: DefaultReleaseDelay,
	}
}

// Defaults of the policy; the Option that changes each one says why it was
// chosen.
const (
	DefaultMinGarbage   = 384 << 10
	DefaultLiveRatio    = 0.5
	DefaultCPUCap       = 0.3
	DefaultReleaseDelay = 20 * time.Millisecond
)

// WithMinGarbage sets how many bytes the program must have allocated since
// the last collection before an idle step collects again. Default
// DefaultMinGarbage (384 KiB), the knee of the urandom demo's curve
// (GOGC=100, inline cycles, medians of 7 interleaved runs; the plain loop
// peaks at 8.2 MiB, the same loop making no garbage at 3.4 MiB): at 1 MiB
// peak RSS was 5.4 MiB for 93 cycles taking 37 ms in all; at 768 KiB 5.2
// MiB for 124 cycles, 45 ms; at 512 KiB 4.9 MiB for 184, 69 ms; at 384 KiB
// 4.8 MiB for 243, 87 ms; at 256 KiB 4.7 MiB for 357, 131 ms. Below it
// the collector's own memory (mark queues, page-allocator metadata, about
// 0.8 MiB that a program that never collects does not have) dominates and
// every cycle's fixed cost is paid for less and less memory. This is also
// what re-arms the stepper: a program that allocates nothing never
// reaches it, so it runs no cycle however often Step is called. It panics
// if n is zero.
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

// WithCPUCap sets the share of its caller's idle time that idle
// collection may take, between 0 (exclusive) and 1. The share is kept by a
// token bucket: time is earned at this rate from the idle time the caller
// reports through Idled (see IdleObserver; package poller reports the time
// every blocking wait took), or from wall time if the caller never reports
// any, up to 100 ms worth, and the bucket starts full. An inline cycle
// pays the wall time it took; a background cycle pays the estimate of an
// inline one when it starts, settled when it ends against the collector's
// CPU time measured meanwhile (marking on otherwise idle Ps excepted: it
// costs the program nothing). A cycle dearer than estimated leaves a debt
// that is paid before the next one, so the share holds over any run
// longer than a few cycles.
//
// Why idle time and not wall time: an idle step in a loop that is busy
// most of the time (a peer keeps it fed, and it catches up only for
// moments) delays the loop by the whole cycle, and that loop is the
// program's bottleneck. Earned from wall time, a 30 % cap let the
// benchmark ChunkLoop (idle about a fifth of the time) run 1.4-1.9 times
// slower with stepping on; earned from idle time, about 1.15 times. A loop
// that is idle most of the time, like the urandom demo's, earns about as
// much either way.
//
// Default DefaultCPUCap (30 % of idle time). The urandom demo's cycles
// take about a third of that (108-137 ms of 300-340 ms idle): the cap
// does not bind there. At 50 % ChunkLoop ran 1.9 times slower with
// stepping on, and the footprint lab's urandom workload (the demo with a
// ticker) took 1.24 times the plain loop's wall time against 1.13 at
// 30 %, for the same memory. Lower it for a loop whose idle moments are
// too short for a cycle: what a cycle overruns, the loop pays.
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

// WithStreams says whether inline cycles may run in lulls too short for
// them (the CPU cap still bounds them, see WithCPUCap). Right for a
// loop that consumes streams whose producers do not wait for it (a pipe,
// a file or media transfer, a log shipper): a cycle makes their data wait
// in a kernel buffer for a moment, and the loop catches up; the urandom demo keeps its peak RSS at 0.6 times the plain loop's
// that way. Wrong for a server whose clients wait for each reply: every
// such cycle is added to a reply's latency. The loop cannot tell the two
// apart (see doc/policy.md), so the default is false: inline cycles run
// only where the loop's own recent gaps cover them, and the rest of the
// garbage waits for the runtime's pacer or for the next quiet stretch.
func WithStreams(on bool) Option {
	return func(c *config) { c.streams = on }
}
