package gvl

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The lock word, Lock.state, packs the whole answer to "who has it and who
// waits" into one int64 so that Contended and the fast paths are single
// atomic operations:
//
//	bit 0      locked: somebody holds the lock (or it is being handed over)
//	bits 1..62 the number of goroutines queued waiting for it
//
// Invariants:
//   - waiters > 0 implies locked. A goroutine joins the queue only after a
//     CAS that sees the lock held, and a release with waiters hands the lock
//     over without ever clearing the locked bit. So an uncontended acquire is
//     CAS(0, locked), and a newcomer can never barge past a queued waiter.
//   - The waiter count is changed only with Lock.mu held, together with the
//     queue, so it equals the queue's length whenever mu is free.
//   - The locked bit alone is set and cleared by CAS on the fast paths
//     without mu; with mu held it may only be set from an unlocked state
//     with no waiters.
const (
	mutexLocked = 1 << 0
	waiterShift = 1
	waiterUnit  = 1 << waiterShift
)

// A Lock is a global VM lock: at most one goroutine holds it at a time, and
// it knows how many others wait for it.
//
// The zero value is an unlocked Lock with the default timeslice and no
// hook. A Lock must not be copied after first use.
type Lock struct {
	// state is the lock word described above.
	state atomic.Int64
	// acquisitions counts every acquisition (see Acquisitions): the fast
	// paths and acquireSlow finding the lock free count their own, a
	// releaser counts the acquisition it hands over. It sits beside state,
	// which every acquisition writes anyway.
	acquisitions atomic.Uint64
	// yieldReq is raised, with mu held, by the lock's watch once the
	// holder has kept the lock for a timeslice while the same waiter was at
	// the head of the queue; it is cleared, with mu held, at every handoff
	// and when the queue empties. ShouldYield reads it alone.
	yieldReq atomic.Bool

	// slice and hook are set by New and never change afterwards.
	slice int64 // timeslice in ns; 0 means DefaultTimeslice, < 0 disabled
	hook  func(Event)

	// spare is a waiter record kept for the holder's next Yield. It is
	// guarded by the lock itself: only the goroutine holding the Lock reads
	// or writes it.
	spare *waiter

	// waits accounts the waits of acquireSlow, updated by each waiter
	// after it wakes holding the lock.
	waits waitCounters

	// mu guards the queue and everything in it (the waiter records'
	// links and flags), the free list, the watch and stats. It is held
	// only for a few instructions at a time, never while blocking.
	mu    sync.Mutex
	q     queue
	free  *waiter // unused waiter records, linked through next
	stats counters
	// watch is the lock's timeslice timer (timeslice.go), made at the
	// first wait; watching says it is pending or its tick is under way.
	watch    *time.Timer
	watching bool
}

// New returns an unlocked Lock configured by opts.
func New(opts ...Option) *Lock {
	l := new(Lock)
	for _, o := range opts {
		if o != nil {
			o(l)
		}
	}
	return l
}

// Contended reports whether any goroutine is queued waiting for the lock.
// It is a single atomic load and may be called by anyone at any time; the
// answer is exact for the moment of the load. A goroutine that has called
// Acquire but has not yet run far enough to join the queue (likely at
// GOMAXPROCS=1, where it needs the holder to block or be preempted first)
// is not yet waiting, and is not counted.
func (l *Lock) Contended() bool {
	return l.state.Load() >= waiterUnit
}

// Acquisitions returns how many times the lock has been taken since it was
// made, by any path: Stats().Acquisitions, read with a single atomic load
// and without the mutex Stats takes, so it may be called on every wait.
// Two reads that differ say the lock was taken in between. A lock handed
// to a waiter is counted by the releaser, before the new holder runs, so
// a goroutine that reads it before releasing the lock around a wait and
// again before taking the lock back learns whether anybody else held it
// meanwhile: whether its wait was idle time for the program, or time the
// program spent working on another goroutine.
func (l *Lock) Acquisitions() uint64 {
	return l.acquisitions.Load()
}

// Waiters returns how many goroutines are queued waiting for the lock,
// including a goroutine queued again by Yield. See Contended.
func (l *Lock) Waiters() int {
	return int(l.state.Load() >> waiterShift)
}

// TryAcquire takes the lock if nobody holds it and reports whether it did.
// It never waits.
func (l *Lock) TryAcquire() bool {
	if l.state.CompareAndSwap(0, mutexLocked) {
		l.acquired()
		return true
	}
	return false
}

// Acquire takes the lock, waiting in FIFO order behind the goroutines
// already queued if it is held.
func (l *Lock) Acquire() {
	// Fast path: nobody holds it, so nobody waits either.
	if l.state.CompareAndSwap(0, mutexLocked) {
		l.acquired()
		return
	}
	l.acquireSlow(nil)
}

// AcquireContext is Acquire that gives up when ctx is done. It returns nil
// holding the lock, or ctx.Err() not holding it. A done ctx fails even if the
// lock is free. A goroutine that gives up leaves no trace: it is no longer
// counted by Waiters, and if the lock was handed to it at the very moment it
// gave up, it passes the lock on as Release would.
func (l *Lock) AcquireContext(ctx context.Context) error {
	done := ctx.Done()
	if done == nil {
		l.Acquire()
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.state.CompareAndSwap(0, mutexLocked) {
		l.acquired()
		return nil
	}
	if !l.acquireSlow(done) {
		return ctx.Err()
	}
	return nil
}

// acquired does the bookkeeping of an acquisition that was not handed over.
func (l *Lock) acquired() {
	l.acquisitions.Add(1)
	l.emit(EventAcquired)
}

// acquireSlow takes the lock or queues for it; done, if not nil, abandons
// the wait. It reports whether the caller holds the lock.
func (l *Lock) acquireSlow(done <-chan struct{}) bool {
	l.mu.Lock()
	for {
		s := l.state.Load()
		if s&mutexLocked == 0 {
			// Released since the fast path failed. No waiters (invariant),
			// so taking it barges past nobody.
			if l.state.CompareAndSwap(s, s|mutexLocked) {
				l.mu.Unlock()
				l.acquired()
				return true
			}
			continue
		}
		// Held: join the queue. The CAS fails if the holder released on its
		// fast path meanwhile; then look again.
		if l.state.CompareAndSwap(s, s+waiterUnit) {
			break
		}
	}
	w := l.record()
	since := nanotime()
	w.since = since
	l.q.pushBack(w)
	if l.q.head == w {
		w.seenAt = since // at the head from now on; see timeslice.go
	}
	l.headChanged()
	l.mu.Unlock()

	l.emit(EventWaiting)
	switch l.wait(w, done) {
	case granted:
		l.granted(w)
		l.timedWait(since)
		return true
	case grantedLate:
		// We gave up, but the lock was already ours: pass it on.
		l.granted(w)
		l.Release()
		l.mu.Lock()
		l.stats.cancelled++
		l.mu.Unlock()
		return false
	default: // cancelled
		return false
	}
}

// Release gives the lock up. If anyone waits, the lock goes straight to the
// longest waiter. Release of an unlocked Lock panics.
func (l *Lock) Release() {
	l.emit(EventReleased)
	// Fast path: held and nobody waits.
	if l.state.CompareAndSwap(mutexLocked, 0) {
		return
	}
	l.releaseSlow()
}

// releaseSlow releases a lock that has waiters (or is not held at all).
func (l *Lock) releaseSlow() {
	l.mu.Lock()
	s := l.state.Load()
	if s&mutexLocked == 0 {
		l.mu.Unlock()
		panic("gvl: Release of unlocked Lock")
	}
	if w := l.spare; w != nil {
		// Let queued acquirers reuse the holder's spare record.
		l.spare = nil
		l.pushFree(w)
	}
	h := l.q.head
	if h == nil {
		// The waiters counted when the fast path failed have gone (a
		// context was cancelled); nobody can join while mu is held.
		l.clearYieldReq()
		l.state.Store(0)
		l.mu.Unlock()
		return
	}
	l.handoff(h)
	l.headChanged()
	l.state.Add(-waiterUnit)
	l.mu.Unlock()
	h.ch <- struct{}{}
}

// handoff dequeues h, the head waiter, as the next holder. The caller holds
// mu and the lock; it adjusts the waiter count, calls headChanged once the
// queue is final and, after unlocking mu, sends the grant on h.ch.
func (l *Lock) handoff(h *waiter) {
	l.q.popHead(h)
	l.clearYieldReq() // a new holder starts a new slice
	l.stats.handoffs++
	l.acquisitions.Add(1)
}
