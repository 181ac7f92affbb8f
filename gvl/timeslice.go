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
// Why nothing on the handoff path sets the watch: a pending timer costs a
// clock reading (about 30 ns here) each time the P whose heap holds it
// looks for a goroutine to run, which a ping-pong of handoffs does twice a
// round trip, and a timer stays on the P that set it: for the handoffs, the
// busy one. The tick runs wherever the expired timer was run, and a busy P
// runs its own first, so this helps less than it might. A watch outside
// the timer heaps, a goroutine reading a timerfd through the netpoller,
// took that cost away but made a waiter that sleeps between its turns
// slower (BenchmarkYieldWait), so the watch stays a Go timer.

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
// slices under a millisecond). A goroutine that has called Acquire but
// has not yet run far enough to queue is not waiting yet: at
// GOMAXPROCS=1 a holder that never blocks lets such a goroutine run only
// when the Go scheduler preempts it, after about 10 ms, so there
// ShouldYield may turn true up to one scheduling quantum later.
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
	d := time.Duration(l.timeslice() / 2) // the head may change before a slice
	if l.watch == nil {
		l.watch = time.AfterFunc(d, l.tick)
		return
	}
	l.watch.Reset(d)
}

// tick runs, on a goroutine of its own, when the watch fires.
func (l *Lock) tick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.q.head
	if h == nil {
		l.watching = false
		return
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
	l.watch.Reset(time.Duration(min(d, slice/2)))
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
