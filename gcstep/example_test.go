package gcstep_test

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/idlemux/idlemux/gcstep"
)

// An event loop calls Step when a poll with a zero timeout found nothing
// ready, and again while it reports more, before it blocks.
func ExampleNewRuntime() {
	rt := gcstep.NewRuntime()
	defer rt.Close()

	for range 3 { // three idle moments
		for rt.Step(time.Millisecond) {
		}
		// ... block in poll(2) until something is ready, handle it ...
	}
	fmt.Println("steps:", rt.Stats().Steps)
	// Output: steps: 3
}

// Application steppers go after the runtime's, in one chain: here a cache
// that drops one stale entry per step.
func ExampleChain() {
	cache := []string{"a", "b", "c"}
	trim := gcstep.Func(func(budget time.Duration) bool {
		if budget > 0 && len(cache) > 0 {
			fmt.Println("dropped", cache[0])
			cache = cache[1:]
		}
		return len(cache) > 0
	})
	rt := gcstep.NewRuntime()
	defer rt.Close()
	s := gcstep.Chain(rt, trim)
	for s.Step(time.Millisecond) {
	}
	// Output:
	// dropped a
	// dropped b
	// dropped c
}

var buffers [][]byte

// dropAndIdle works for 100 ms of CPU (which earns the budget its share:
// 10 ms at the examples' 10 %, enough for a first cycle and the pages it
// would return, whatever the heap kept from before), makes 2 MiB of
// garbage for the examples and stays idle for 100 ms, holding it.
func dropAndIdle() {
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
	}
	for range 64 {
		buffers = append(buffers, make([]byte, 32<<10))
	}
	buffers = nil
	time.Sleep(100 * time.Millisecond)
}

// A zero budget does no work and only reports whether a cycle is due: the
// first is, as nothing has measured yet what a cycle costs; later ones as
// the budget pays for them.
func ExampleRuntime_Step() {
	debug.FreeOSMemory() // start from an empty heap, its free pages returned
	rt := gcstep.NewRuntime(gcstep.WithBudget(0.1), gcstep.WithReleaseDelay(0))
	defer rt.Close()

	dropAndIdle() // 2 MiB of garbage, then 100 ms idle holding it
	fmt.Println("due:", rt.Step(0))
	rt.Step(time.Second)
	fmt.Println("due after a step:", rt.Step(0))
	// Output:
	// due: true
	// due after a step: false
}

// WithDecisions shows why the stepper collected where it did, or did not:
// every look at the heap with garbage enough, what it read, its prices and
// its outcome. Recording into a buffer made beforehand allocates nothing.
func ExampleWithDecisions() {
	debug.FreeOSMemory() // start from an empty heap, its free pages returned
	decisions := make([]gcstep.Decision, 0, 64)
	rt := gcstep.NewRuntime(gcstep.WithBudget(0.1), gcstep.WithReleaseDelay(0), gcstep.WithDecisions(func(d gcstep.Decision) {
		if len(decisions) < cap(decisions) {
			decisions = append(decisions, d)
		}
	}))
	defer rt.Close()

	dropAndIdle() // 2 MiB of garbage, then 100 ms idle holding it
	rt.Step(time.Second)

	d := decisions[len(decisions)-1]
	fmt.Println("collected:", d.Outcome == gcstep.OutcomeInline)
	fmt.Println("2 MiB of garbage or more:", d.Garbage >= 2<<20)
	fmt.Println("measured:", rt.Stats().CycleCost > 0)
	// Output:
	// collected: true
	// 2 MiB of garbage or more: true
	// measured: true
}
