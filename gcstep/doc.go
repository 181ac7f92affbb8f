// Package gcstep does bounded units of garbage-collection work when the
// caller is idle.
//
// The Stepper interface is the contract the multiplexer in package poller
// calls at every idle moment: one bounded unit of work, and an honest answer
// to "would calling again now do anything?". Steppers compose with Chain and
// adapt plain functions with Func.
//
// NewRuntime returns the Stepper over Go's own collector. Go has no API for
// part of a cycle (Ruby's rb_gc_step finished the cycle in progress), so
// the Runtime stepper is a policy: at each idle moment it decides, from a
// few runtime/metrics samples, whether a whole cycle pays for itself now,
// and whether to run it inline, start it in the background or leave it to
// the runtime's pacer. The rules, their defaults and the measurements
// behind them are documented on Runtime and on each Option.
//
// A typical event loop:
//
//	rt := gcstep.NewRuntime()
//	for {
//		n := poll(fds, 0) // zero timeout: never blocks
//		for n == 0 && rt.Step(time.Millisecond) {
//			n = poll(fds, 0)
//		}
//		if n == 0 {
//			// Nothing ready, nothing to collect: block, but no longer
//			// than until the slow tier's release falls due.
//			timeout := time.Duration(-1)
//			if d, ok := rt.NextStep(); ok {
//				timeout = d
//			}
//			start := time.Now()
//			n = poll(fds, timeout)
//			rt.Idled(time.Since(start)) // the CPU cap is earned from idle time
//			if n == 0 {
//				rt.Step(time.Millisecond) // the release
//			}
//		}
//		// handle the ready fds
//	}
package gcstep
