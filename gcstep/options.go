package gcstep

import (
	"fmt"
	"math"
	"time"
)

// An Option changes one rule of the policy of NewRuntime. Options check
// their argument when NewRuntime applies them and panic, with a message
// that starts with "gcstep:", on a value out of range: a wrong constant in
// a program is a bug to fix, not a condition to handle at run time. A nil
// Option is skipped.
type Option func(*config)

// config holds the policy's knobs; the Options document each default.
type config struct {
	minGarbage    uint64         // never collect less garbage than this, nor release less memory
	exchange      float64        // CPU a second worth holding the whole footprint lower for that second
	cpuCap        float64        // share of idle time (wall time if none is reported) idle collection may use
	capWindow     time.Duration  // the cap is a token bucket holding cpuCap*capWindow
	background    bool           // may start cycles that do not fit the budget
	markSlack     float64        // a started cycle marks with a goal this share of its pile above the heap from its start; 0: see markAllowance
	markAllowance float64        // a started cycle takes a goal near the heap once the program allocated this share of its pile during the mark; +Inf: never
	streams       bool           // inline cycles may delay work while the loop has slack
	releaseDelay  time.Duration  // idle time before memory goes back to the OS; 0 disables
	decisions     func(Decision) // called with every decision, if set
}

func defaults() config {
	return config{
		minGarbage:    DefaultMinGarbage,
		exchange:      DefaultExchangeRate,
		cpuCap:        DefaultCPUCap,
		markAllowance: DefaultMarkAllowance,
		// The bucket holds what 100 ms of idle time earns: a loop that
		// is seldom idle spends only that much before its idle time
		// has to pay (see doc/policy.md).
		capWindow:    100 * time.Millisecond,
		background:   true,
		releaseDelay: DefaultReleaseDelay,
	}
}

// Defaults of the policy; the Option that changes each one says why, and
// doc/policy.md has the measurements behind each.
const (
	DefaultMinGarbage    = 256 << 10
	DefaultExchangeRate  = 3
	DefaultCPUCap        = 0.3
	DefaultReleaseDelay  = 20 * time.Millisecond
	DefaultMarkAllowance = 0.5
)

// WithMinGarbage sets the least garbage, in bytes, that a cycle collects
// and the least free memory a release returns: below it a cycle's fixed
// cost buys nothing worth having, whatever the prices say. It is also
// what re-arms the stepper: a program that allocates nothing never
// reaches it, so it runs no cycle however often Step is called. Default
// DefaultMinGarbage (256 KiB, the knee of the urandom demo's curve of
// peak RSS against cycles run). It panics if n is zero.
func WithMinGarbage(n uint64) Option {
	return func(c *config) {
		if n == 0 {
			panic("gcstep: WithMinGarbage(0): a zero threshold would collect at every step")
		}
		c.minGarbage = n
	}
}

// WithExchangeRate sets the price of memory in CPU: holding the
// process's footprint (what the runtime has mapped and not returned to
// the OS) lower by a share s for a second is worth x·s seconds of CPU.
// With the default, DefaultExchangeRate (3), holding it 10 % lower is
// worth 30 % of one CPU. Every decision of the Runtime weighs memory at
// this rate against the CPU and the delay an action costs (see Runtime
// and doc/policy.md): higher collects more often and releases sooner,
// lower leaves more to the runtime's pacer. The default was chosen on
// the workloads of bench/footprint's frontier: streams paced by their
// producer, request/response bursts, and a loop that is seldom idle; it
// was 1.5 until the pacer's own pile stopped being trimmed, which made
// the dearer rate cost the urandom stream with both CPUs nothing more
// (doc/policy.md, "The exchange rate"). It panics if x is not positive
// and finite.
func WithExchangeRate(x float64) Option {
	return func(c *config) {
		if !(x > 0) || math.IsInf(x, 1) {
			panic(fmt.Sprintf("gcstep: WithExchangeRate(%v): rate must be positive and finite", x))
		}
		c.exchange = x
	}
}

// WithCPUCap sets the share of its callers' idle time that idle
// collection may take, between 0 (exclusive) and 1. A token bucket earns
// at this rate from the idle time the callers report (see IdleObserver;
// package poller reports every blocking wait), or from wall time if none
// is reported, up to 100 ms worth, and starts full. Inline cycles and
// releases pay their wall time (with GOMAXPROCS=1 an inline cycle the
// collector's CPU time, as the rest of its wall time runs the program's
// other goroutines; an inline cycle never more than the process's CPU
// time, as a cgroup quota's throttling stops the loop cycle or not);
// background cycles the collector's CPU time, at most the process's. When
// the cap runs short, cycles wait for the bucket to refill, and each
// then collects more garbage: fewer cycles, not none. Where even those
// could not keep the pile below the pacer's trigger (a loop seldom idle
// that allocates fast), the pile is left to the pacer once half the
// bucket's first store is spent (Stats.DeclinedPacer), rather than held
// down only until the bucket runs dry.
//
// Idle time and not wall time, so that a loop that is seldom idle gets
// few idle cycles however often it passes an idle moment. Default
// DefaultCPUCap (30 % of idle time): the urandom demo's cycles take about
// a third of that. With GOGC=off and no memory limit the stepper is the
// only collector, and the cap does not bound its heap: a pile as high as
// GOGC=100 would allow (the live heap, at least 4 MiB) gets a cycle past
// the cap (Stats.Backstops). It panics if f is not in (0, 1].
func WithCPUCap(f float64) Option {
	return func(c *config) {
		if !(f > 0 && f <= 1) {
			panic(fmt.Sprintf("gcstep: WithCPUCap(%v): fraction must be in (0, 1]", f))
		}
		c.cpuCap = f
	}
}

// WithMarkSlack makes a started cycle mark with a heap goal share times
// its pile of garbage above the heap from its start, where the program's
// own goal is further: GOGC is lowered to a stand-in while it marks and
// put back at the first dispatch or step after its end (see
// doc/policy.md, "A cycle"). The runtime paces its assists by the goal,
// so the program's allocations during the mark help mark, and the
// garbage they leave for the next cycle stays under share of the pile.
// At the program's goal a small heap meets no assists: on a stream read
// with both CPUs (the urandom child of bench/footprint) a started cycle
// marking for milliseconds beside the writer left 1.5-2 MiB for the
// next, and the stepper held GOGC=100's peak; with 0.25 it held
// GOGC=25's, at 1.1-1.2 times the wall time. The assists land on
// whatever allocates next, a server's requests too: the RESP server of
// bench/servers had its p99 at 1.0-1.9 times the plain server's with
// 0.25, against 0.9-1.2 without. Default 0: the goal is set only past
// the allowance (WithMarkAllowance), which a share > 0 replaces. It
// panics if share is negative or not finite.
func WithMarkSlack(share float64) Option {
	return func(c *config) {
		if !(share >= 0) || math.IsInf(share, 1) {
			panic(fmt.Sprintf("gcstep: WithMarkSlack(%v): share must be zero or positive, and finite", share))
		}
		c.markSlack = share
	}
}

// WithMarkAllowance sets how much a started cycle (or an inline one that
// outlives its step's budget and goes on beside the program) lets the
// program allocate while it marks at the program's own heap goal, as a
// share of the cycle's pile of garbage: past that, from the next dispatch
// or step, it marks with a goal a quarter of the pile above the heap, as
// WithMarkSlack(0.25) does from the start (see doc/policy.md, "A
// cycle"). A mark that ends within its allowance meets no assists; one
// that lasts, and would leave the next cycle as much garbage again as
// this one collects, has the program help it end. It also takes the
// loop's idle moments: a step with a budget sleeps until the mark ends,
// for at most the budget, so that the collector's workers get the
// loop's P, which a loop blocked in its poll system call holds
// (Stats.MarkWaits). Default DefaultMarkAllowance (0.5): on the urandom
// child with both CPUs the stepper's peak went from 10.55 MiB to 9.04
// with the goal, and to 8.80 with the waits as well, against GOGC=25's
// 8.26; the RESP server's p99 stayed where it was. 0: a started cycle
// takes the goal from its start, and an inline one none; neither waits.
// math.Inf(1): the program's goal throughout and no waits, as before.
// WithMarkSlack above 0 takes precedence, and no step waits with it. A
// program at GOGC=off keeps the stand-in its cycles end with (see
// Runtime) for the whole mark, and its steps wait past the allowance.
// It panics if share is negative or NaN.
func WithMarkAllowance(share float64) Option {
	return func(c *config) {
		if !(share >= 0) {
			panic(fmt.Sprintf("gcstep: WithMarkAllowance(%v): share must be zero or positive", share))
		}
		c.markAllowance = share
	}
}

// WithBackground says whether a step may start a cycle it cannot finish
// within its budget, from a loop that is idle most of the time. Default
// true: the step starts a concurrent cycle and restores GOGC at once
// (until the mark's allowance is used up, or with WithMarkSlack not at
// all: see WithMarkAllowance), so the program's allocations during it
// are paced by the program's own GOGC, and the caller is not stalled.
// With false such steps decline, and only cycles that fit the budget
// run.
func WithBackground(on bool) Option {
	return func(c *config) { c.background = on }
}

// WithReleaseDelay sets the quiet period: how long every loop using the
// Runtime must have had nothing to do before it empties the gap, once per
// quiet stretch, by collecting and returning the free memory to the
// operating system (on a goroutine of its own, not in a step). A loop
// whose own gaps between events are longer asks for four times its
// longest recent gap, up to 250 ms, so that a loop ticking every 10 ms is
// not taken for a quiet one. For a caller that reports nothing (not a
// LoopObserver) it is how long the program must allocate nothing.
// Default DefaultReleaseDelay (20 ms): the gap is empty well within
// 300 ms of the last request, while a pause between requests of a burst
// is much shorter. Zero disables the release, and the trims in the middle
// of activity with it (Stats.Trims): the Runtime then returns no memory to
// the operating system at all. It panics if d is negative.
func WithReleaseDelay(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			panic(fmt.Sprintf("gcstep: WithReleaseDelay(%v): delay must be >= 0", d))
		}
		c.releaseDelay = d
	}
}

// WithStreams says that the loop consumes streams whose producers do
// not wait for it (a pipe, a file or media transfer, a log shipper): a
// cycle that holds the loop makes their data wait in a kernel buffer for
// a moment, and the loop catches up, so the delay an inline cycle
// imposes is priced at nothing. Default false: the delay is priced from
// the loop's own recent gaps, as the wait of the next event behind the
// cycle, which is right for a server whose clients wait for each reply
// and costs a stream little (its cycles still run, in the background
// where an inline one would delay too much).
func WithStreams(on bool) Option {
	return func(c *config) { c.streams = on }
}
