// Package poller multiplexes file descriptors and turns the time it would
// spend blocked in the kernel into bounded garbage-collection steps.
//
// It offers the one-shot calls of Ruby's IO.select and
// rb_wait_for_single_fd (Mux.Select, Mux.Poll, Mux.WaitFD) and an event
// loop (Loop) built on the same idle algorithm:
//
//	if nobody waits for the lock and the stepper may have work:
//	    poll with zero timeout                 (lock kept: this cannot block)
//	    nothing ready → step(budget); repeat while steps remain and time is left
//	otherwise, or once steps run out:
//	    release the lock, poll with the real timeout, reacquire
//
// The lock is a *gvl.Lock given with WithGVL; the caller of every Mux and
// Loop method that waits must hold it, and it is released only around a
// wait that may block, through gvl.Lock.Blocking. The stepper is any
// gcstep.Stepper given with WithStepper. Without a stepper the package is a
// plain multiplexer; without a lock nobody is ever waiting. A stepper that
// is a gcstep.Deferred bounds how long a wait may block (its NextStep; a
// Mux with a lock keeps a timer for that work instead: see Mux); one
// that is a gcstep.LoopObserver or a gcstep.IdleObserver is told how long
// each blocking wait took (the caller's idle time, from which gcstep's
// runtime stepper learns the gaps a cycle must fit; Stats.BlockedTime adds
// them up).
//
// Backends: epoll (Linux, the default there; a wait with a deadline is
// epoll_pwait2(2), whose timeout keeps nanoseconds, where the kernel has
// it, and epoll_wait(2), in whole milliseconds rounded up, where not),
// poll (ppoll(2) with a nil signal mask on Linux, poll(2) on darwin and
// freebsd) and select. Every backend keeps the contract written in
// backend.go, and the same tests run against each one available on the
// platform.
//
// Every system call the package makes goes through one table (sys.go) and is
// counted; Stats reports the counts so experiments and benchmarks can see
// what a call cost.
//
// # Handlers and timer funcs
//
// A Loop calls them one at a time on the goroutine that runs it, with the
// lock held, so they must never block: no File.Read, no net.Conn Read or
// Write, no sleeping, no waiting on a channel or another lock. Such a call
// parks the goroutine (in Go's own netpoller, for a file or connection that
// has nothing to read or no room to write) while it holds the lock, and
// every fd and timer of the loop, and every goroutine waiting for the lock,
// waits with it. Read and write the fd with raw system calls instead:
// unix.Read and unix.Write on the fd the handler is given, or the value's
// SyscallConn, whose RawConn.Read and RawConn.Write funcs must return true
// (false makes them wait in the netpoller). Readiness may be stale: EAGAIN
// means nothing after all, so return and wait for the next event. A write
// that meets EAGAIN keeps the rest and watches Write (Modify) until there
// is room.
//
// A Loop is level-triggered: an fd is reported at every wait until it is
// drained. On Hangup or Error, Remove the fd (see Hangup for what each
// backend reports). A panic in a handler or timer func propagates out of
// Run or RunOnce; the loop stays consistent and may be run again.
package poller
