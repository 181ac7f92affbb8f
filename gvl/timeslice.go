package gvl

import (
	"time"
)

// How timeslices work without a timer goroutine, and without reading the
// clock on a handoff. Every handoff dequeues the head of the queue, so while
// one waiter stays at the head the holder cannot change: a waiter that has
// been at the head for a whole timeslice has waited a timeslice behind one
// and the same holder. So the head alone times the holder, with the timer
// in its record, and raises yieldReq when its timer fires after a whole
// slice as head.
//
// Setting a timer costs more than the rest of a handoff, and a Yield loop
// makes a new head at every turn. So a record whose timer is still pending
// from an earlier turn keeps it: when it fires, the head knows it was not
// set during this stint (fresh is false), sets it again for a whole slice
// and decides at the next firing. A holder is therefore asked to yield
// between one and two timeslices after the longest waiter reached the head
// of the queue, and a busy lock costs at most one timer firing per record
// and timeslice. No goroutine keeps time meanwhile: the runtime runs the
// timer's few instructions when it fires.

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
// It turns true between one and two timeslices after the longest waiter
// reached the head of the queue (see WithTimeslice for slices under a
// millisecond). A goroutine that has called Acquire but has not yet run far
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

// headChanged starts the timing of a waiter that has just reached the head
// of the queue, and lowers yieldReq if the queue is empty. Must be called
// with mu held, whenever the head may have changed.
func (l *Lock) headChanged() {
	h := l.q.head
	if h == nil {
		l.clearYieldReq()
		return
	}
	if h.headed || h.timer == nil {
		return
	}
	h.headed = true
	if h.armed {
		h.fresh = false // pending from an earlier turn; see above
		return
	}
	h.timer.Reset(time.Duration(l.timeslice()))
	h.armed, h.fresh = true, true
}

// expired runs when w's timer fires. By then w may be head of the queue,
// further back, or recycled; only a head acts on it.
func (l *Lock) expired(w *waiter) {
	l.mu.Lock()
	w.armed = false
	if w.queued && w.headed {
		if w.fresh {
			l.yieldReq.Store(true)
		} else {
			w.timer.Reset(time.Duration(l.timeslice()))
			w.armed, w.fresh = true, true
		}
	}
	l.mu.Unlock()
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
