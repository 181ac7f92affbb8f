package poller

import (
	"sync/atomic"
	"time"
)

// Stats counts what a Mux or Loop did since it was made. Every field only
// grows; subtract two snapshots to see what happened in between.
type Stats struct {
	// ZeroPolls counts waits with a zero timeout: the idle loop's probes and
	// callers' own zero timeouts. They never block and keep the lock.
	ZeroPolls uint64
	// BlockingPolls counts waits that could block (a nonzero timeout); each
	// released the lock, if there is one. EINTR restarts are not counted
	// again. BlockedTime is the wall time they took together, not counting
	// the time spent getting the lock back: the caller's idle time, which
	// is also reported to a stepper that is a gcstep.LoopObserver or a
	// gcstep.IdleObserver.
	BlockingPolls uint64
	BlockedTime   time.Duration
	// Parked counts the waits that parked the goroutine in Go's netpoller
	// instead of blocking its thread: a Mux's shared under a lock (see
	// Mux), a Loop's on epoll (see Loop). Each is part of a wait counted
	// in BlockingPolls.
	Parked uint64
	// Events counts readiness reports: fds found ready by Mux calls, handler
	// calls by a Loop.
	Events uint64
	// Steps counts calls to the stepper's Step, and StepTime the wall time
	// they took together.
	Steps    uint64
	StepTime time.Duration
	// DelayedSteps counts steps after which the zero-timeout poll found
	// work ready, and StepDelay their total duration: a bound on how long
	// that work waited behind the steps.
	DelayedSteps uint64
	StepDelay    time.Duration
	// Timers counts Loop timers fired.
	Timers uint64
	// WakeCalls counts Loop.Wake calls; Wakeups counts the wakeups the loop
	// received. Coalescing makes Wakeups much smaller than WakeCalls when
	// many goroutines call Wake at once.
	WakeCalls uint64
	Wakeups   uint64
	// Restarts counts waits interrupted by EINTR: each was restarted with
	// the time left recomputed from the call's deadline, or, with no time
	// left, reported as a timeout. Spurious counts waits that returned
	// nothing (or EAGAIN) before their deadline and were restarted.
	Restarts uint64
	Spurious uint64
	// Syscalls counts every system call made, waits and restarts included.
	Syscalls uint64
}

// counters is the live, concurrently updated form of Stats.
type counters struct {
	zeroPolls, blockingPolls, events     atomic.Uint64
	parked                               atomic.Uint64
	blockedNanos                         atomic.Uint64
	steps, stepNanos, timers             atomic.Uint64
	wakeCalls, wakeups, restarts, spurio atomic.Uint64
	syscalls                             atomic.Uint64
	delayedSteps, delayNanos             atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		ZeroPolls:     c.zeroPolls.Load(),
		BlockingPolls: c.blockingPolls.Load(),
		BlockedTime:   time.Duration(c.blockedNanos.Load()),
		Parked:        c.parked.Load(),
		Events:        c.events.Load(),
		Steps:         c.steps.Load(),
		StepTime:      time.Duration(c.stepNanos.Load()),
		DelayedSteps:  c.delayedSteps.Load(),
		StepDelay:     time.Duration(c.delayNanos.Load()),
		Timers:        c.timers.Load(),
		WakeCalls:     c.wakeCalls.Load(),
		Wakeups:       c.wakeups.Load(),
		Restarts:      c.restarts.Load(),
		Spurious:      c.spurio.Load(),
		Syscalls:      c.syscalls.Load(),
	}
}
