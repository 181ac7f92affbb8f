package gvl

import (
	"time"
)

// How timeslices work: one timer per lock, the watch, ticks while anybody
// waits and stops once nobody does. Every handoff dequeues the head of the
// queue, so while one waiter stays at the head the holder cannot change: a
// waiter that has been at the head for a whole slice has waited a slice
// behind one and the same holder. When a waiter got to the head is known
// (seenAt) if it queued into an empty queue, which reads the clock anyway
// to time the wait, or if it started the watch; otherwise, as after a
// handoff, the next tick sets it. A tick raises yieldReq once the head has
// been there a slice, and sleeps until then, or for half a slice if that
// is sooner. So a holder is asked to yield between one and one and a half
// timeslices after the longest waiter reached the head of the queue, and a
// handoff neither reads the clock nor touches a timer.
//
// Where the watch waits matters as much: a timer pending in the heap of a
// P costs a clock reading (about 30 ns here) each time that P looks for a
// goroutine to run, which a ping-pong of handoffs does twice a round trip,
// and a Go timer stays on the P that set it, or that ran its tick: for the
// handoffs, the busy one, since a busy P runs its own expired timers first
// (bench/README.md, "A third look"). On Linux the watch is therefore a
// goroutine reading a timerfd (watch_linux.go): it waits in the netpoller,
// which a P with goroutines to run does not look at, and its timer is the
// kernel's. The goroutine and its fd exist only while the watch runs.
// Elsewhere, and if no timerfd can be had, the watch is a Go timer
// (startTimer).

// timeslice returns the timeslice in nanoseconds, or a negative number if
// timeslices are disabled.
func (l *Lock) timeslice() int64 {
	if l.slice == 0 {
		return int64(DefaultTimeslice)
	}
	return l.slice
}

// ShouldYield reports whether a waiter has been kept waiting longer than the
// timeslice and asks the holder to yield. It is a single atomic load.
//
// It turns true between one and one and a half timeslices after the
// longest waiter reached the head of the queue (see WithTimeslice for
// slices under a millisecond). A goroutine that has called Acquire but has not yet run far
// enough to queue is not waiting yet: at GOMAXPROCS=1 a holder that never
// blocks lets such a goroutine run only when the Go scheduler preempts it,
// after about 10 ms, so there ShouldYield may turn true up to one scheduling
// quantum later.
func (l *Lock) ShouldYield() bool {
	return l.yieldReq.Load()
}

// Checkpoint yields the lock if a waiter has asked for it (see ShouldYield)
// and returns at once otherwise, at the cost of one atomic load. A
// long-running holder calls it at safe points, as Ruby checks its interrupt
// flag. Checkpoint must be called holding the lock.
func (l *Lock) Checkpoint() {
	if l.yieldReq.Load() {
		l.Yield()
	}
}

// headChanged starts the watch if somebody waits and it is not running, and
// lowers yieldReq if the queue is empty. Must be called with mu held,
// whenever the head may have changed.
func (l *Lock) headChanged() {
	if l.q.head == nil {
		l.clearYieldReq()
		return
	}
	if !l.watching && l.slice >= 0 {
		l.watchHead()
	}
}

// watchHead starts the watch for the head of the queue, which must not be
// empty: headChanged's rare case, which Yield, whose queue is never empty,
// tests for itself. Must be called with mu held.
func (l *Lock) watchHead() {
	h := l.q.head
	l.watching = true
	if h.seenAt == 0 {
		h.seenAt = nanotime()
	}
	l.startWatch(time.Duration(l.timeslice() / 2)) // the head may change before a slice
}

// startTimer starts the watch on Go's timers: the fallback where the
// platform's own watch (startWatch) is not to be had. Must be called with
// mu held.
func (l *Lock) startTimer(d time.Duration) {
	if l.watch == nil {
		l.watch = time.AfterFunc(d, l.timerTick)
		return
	}
	l.watch.Reset(d)
}

// timerTick is the tick of a watch on Go's timers. l.watch was set before
// the tick could take mu, so reading it after tick is ordered after the
// write.
func (l *Lock) timerTick() {
	if d, ok := l.tick(); ok {
		l.watch.Reset(d)
	}
}

// tick runs when the watch fires. It reports when the watch must fire
// next, or false if nobody waits and the watch has stopped: then
// watching is false and the next waiter starts a new watch. Only the
// goroutine running a tick re-arms the watch, and only after tick has
// returned true, so no two goroutines ever arm one watch.
func (l *Lock) tick() (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.q.head
	if h == nil {
		l.watching = false
		return 0, false
	}
	now := nanotime()
	if h.seenAt == 0 {
		h.seenAt = now
	}
	slice := l.timeslice()
	d := h.seenAt + slice - now
	if d <= 0 {
		l.yieldReq.Store(true)
		d = slice
	}
	return time.Duration(min(d, slice/2)), true
}

// clearYieldReq lowers yieldReq. It reads before it writes: the flag is
// usually down, and a load leaves the cache line shared with the holder's
// ShouldYield loads. Must be called with mu held.
func (l *Lock) clearYieldReq() {
	if l.yieldReq.Load() {
		l.yieldReq.Store(false)
	}
}

var epoch = time.Now()

// nanotime returns a monotonic clock reading in nanoseconds.
func nanotime() int64 {
	return int64(time.Since(epoch))
}
