// Package gcstep does bounded units of garbage-collection work when the
// caller is idle.
//
// The Stepper interface is the contract the multiplexer in package poller
// calls at idle moments: one bounded unit of work, and an honest answer to
// "would calling again now do anything?". Steppers compose with Chain and
// adapt plain functions with Func. A Stepper may also say when deferred
// work falls due (Deferred), learn from the loop that calls it how idle
// it really is (IdleObserver, LoopObserver), and be told when the loop
// had work ready instead of an idle moment (BusyObserver).
//
// NewRuntime returns the Stepper over Go's own collector. Go has no API
// for part of a cycle, so the Runtime is a policy: at each idle moment it
// prices what it may do (a cycle inline, a cycle started in the
// background, nothing, leaving it to the runtime's pacer) in CPU, the
// delay the loop's next event would suffer and the memory held, at one
// exchange rate, and takes the cheapest; once the loops have been quiet
// for a moment it empties the gap, giving memory back to the operating
// system, if that pays for the page faults that bring it back, and does
// the same in the middle of activity where pages left by the program's
// past would otherwise hold the heap at the pacer's height (a trim). The
// prices are learned as the process runs. Several event loops share one
// Runtime through a Loop handle each; code without an event loop (a
// server with a goroutine per request: package httpidle) tells it when
// its work begins and ends through a Work handle. The model and the
// measurements behind every default are in doc/policy.md.
//
// A typical event loop (package poller's Loop does all of this):
//
//	rt := gcstep.NewRuntime()
//	for {
//		n := 0
//		if rt.Lull() { // a step could do something now
//			n = poll(fds, 0) // zero timeout: never blocks
//			if n > 0 {
//				rt.Busy() // no idle moment: under GOGC=off, may start a cycle
//			}
//			for n == 0 {
//				start := time.Now()
//				more := rt.Step(time.Millisecond)
//				n = poll(fds, 0)
//				rt.Stepped(time.Since(start), n > 0)
//				if !more {
//					break
//				}
//			}
//		}
//		if n == 0 {
//			// Block, but no longer than until the gap falls due to
//			// be emptied.
//			timeout := time.Duration(-1)
//			if d, ok := rt.NextStep(); ok {
//				timeout = d
//			}
//			start := time.Now()
//			n = poll(fds, timeout)
//			rt.Waited(time.Since(start), n > 0)
//			if n == 0 {
//				rt.Step(time.Millisecond) // empty the gap
//			}
//		}
//		// handle the ready fds
//	}
package gcstep
