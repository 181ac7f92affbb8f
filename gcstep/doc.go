// Package gcstep does bounded units of garbage-collection work when the
// caller is idle.
//
// The Stepper interface is the contract the multiplexer in package poller
// calls at idle moments: one bounded unit of work, and an honest answer to
// "would calling again now do anything?". Steppers compose with Chain and
// adapt plain functions with Func. A Stepper may also say when deferred
// work falls due (Deferred), learn from the loop that calls it how idle
// it really is (IdleObserver, LoopObserver).
//
// NewRuntime returns the Stepper over Go's own collector: a small policy
// that collects at idle moments while a budget earned from the program's
// own CPU time (3 % by default) pays for what cycles are measured to
// cost, returns memory to the OS once the process is quiet, and keeps
// GOGC=off bounded (see Runtime). Several event loops share one Runtime
// through a Loop handle each; code without an event loop (a server with a
// goroutine per request: package httpidle) uses a Work handle.
//
// A typical event loop (package poller's Loop does all of this):
//
//	rt := gcstep.NewRuntime()
//	for {
//		n := 0
//		if rt.Lull() { // a step could do something now
//			n = poll(fds, 0) // zero timeout: never blocks
//			for more := true; n == 0 && more; {
//				start := time.Now()
//				more = rt.Step(time.Millisecond)
//				n = poll(fds, 0)
//				rt.Stepped(time.Since(start), n > 0)
//			}
//		}
//		if n == 0 { // block, at most until memory falls due to go back to the OS
//			timeout := time.Duration(-1)
//			if d, ok := rt.NextStep(); ok {
//				timeout = d
//			}
//			start := time.Now()
//			n = poll(fds, timeout)
//			rt.Waited(time.Since(start), n > 0)
//			if n == 0 {
//				rt.Step(time.Millisecond) // return the memory
//			}
//		}
//		// handle the ready fds
//	}
package gcstep
