package gvl

import (
	"time"
)

// How timeslices work without a timer goroutine. The waiter at the head of
// the queue has waited longest, so it alone times the holder: its record's
// timer is set to fire a timeslice after the later of (a) when it started
// waiting and (b) when the lock was last handed over. When it fires and the
// slice is used up, it raises yieldReq, which the holder reads in
// ShouldYield. No goroutine keeps time meanwhile: the runtime runs the timer's
// few instructions when it fires, at most about once per timeslice.
//
// Acquisitions that are not handoffs do not record the time, and need not:
// they happen only with nobody queued, so every waiter started waiting after
// them and (a) is the later time.
//
// Resetting a timer on every wait would cost more than the handoff itself
// in a tight Yield loop, so a timer that is still armed for an earlier
// deadline is left alone: it fires early, the head finds the slice not yet
// used up and sets it again. That costs one extra wakeup per timeslice at
// most.

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
// A goroutine that has called Acquire but has not yet run far enough to
// queue is not waiting yet. At GOMAXPROCS=1 a holder that never blocks lets
// such a goroutine run only when the Go scheduler preempts it (after about
// 10 ms), so there ShouldYield turns true after the timeslice plus up to one
// scheduling quantum.
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

// headChanged re-evaluates the timeslice after the queue's head or the
// holder may have changed. Must be called with mu held.
func (l *Lock) headChanged(now int64) {
	h := l.q.head
	if h == nil {
		l.yieldReq.Store(false)
		return
	}
	slice := l.timeslice()
	if slice < 0 {
		return
	}
	deadline := max(l.holderSince, h.since) + slice
	if now >= deadline {
		l.yieldReq.Store(true)
		return
	}
	l.yieldReq.Store(false)
	if h.armed && h.deadline <= deadline {
		return // fires early; expired will set it again
	}
	h.timer.Reset(time.Duration(deadline - now))
	h.armed, h.deadline = true, deadline
}

// expired runs when w's timer fires. By then w may be head of the queue,
// further back, or recycled; only a head re-evaluates the timeslice.
func (l *Lock) expired(w *waiter) {
	l.mu.Lock()
	w.armed = false
	if w.queued && l.q.head == w {
		l.headChanged(nanotime())
	}
	l.mu.Unlock()
}

var epoch = time.Now()

// nanotime returns a monotonic clock reading in nanoseconds.
func nanotime() int64 {
	return int64(time.Since(epoch))
}
