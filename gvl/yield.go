package gvl

import "runtime"

// Yield hands the lock to the goroutine that has waited longest and queues
// the caller behind it; Yield returns when the lock is the caller's again.
// Every goroutine that was waiting runs before the caller does, which is
// what Unlock followed by Lock on a sync.Mutex does not promise: there the
// releaser usually barges straight back in.
//
// If nobody waits, Yield does not block: it lets other runnable goroutines
// run first (runtime.Gosched), since one of them may be about to call
// Acquire, and hands over if one has queued by then; otherwise it returns
// holding the lock. Without that, at GOMAXPROCS=1 a goroutine that has not
// yet queued could not run, and so could not queue, until the scheduler
// preempted the caller, up to 10 ms later (BenchmarkYieldWait/gvl measures
// rounds of 11 µs with it and 21 ms without).
//
// Yield must be called holding the lock; called on an unlocked Lock it
// panics.
func (l *Lock) Yield() {
	s := l.state.Load()
	if s&mutexLocked == 0 {
		panic("gvl: Yield of unlocked Lock")
	}
	if s < waiterUnit {
		// Nobody is queued, but somebody may be about to: a goroutine that
		// is runnable and will call Acquire. At GOMAXPROCS=1 it cannot run
		// while the caller does, so it would only get its chance when the
		// scheduler preempts the caller, up to 10 ms later. Let it run
		// now, then look again. This costs ~100 ns when nobody else is
		// runnable, which is cheap for a call whose purpose is to let
		// others run.
		runtime.Gosched()
		if s = l.state.Load(); s < waiterUnit {
			return
		}
	}
	w := l.spare
	l.spare = nil
	l.emit(EventReleased)
	l.mu.Lock()
	h := l.q.head
	if h == nil {
		// The waiters gave up meanwhile.
		if w != nil {
			l.spare = w
		}
		l.mu.Unlock()
		l.emit(EventAcquired)
		return
	}
	if w == nil {
		w = l.record()
	}
	// The caller takes h's place in the count: the lock word is unchanged.
	// Its turn in the queue is given away, not waited for, so it is not
	// timed: a Yield reads no clock.
	l.handoff(h)
	l.q.pushBack(w)
	if !l.watching && l.slice >= 0 { // the queue holds w: headChanged's other case
		l.watchHead()
	}
	l.stats.yields++
	l.mu.Unlock()
	h.ch <- struct{}{}

	l.emit(EventWaiting)
	// A Yield cannot be abandoned, so its wait is the receive alone, here
	// rather than in wait: a goroutine that wakes from a receive returns
	// through every frame it parked in, and the fewer the cheaper.
	<-w.ch
	l.recycle(w)
	l.emit(EventAcquired)
}

// Blocking releases the lock, runs fn and takes the lock again before
// returning: Ruby's BLOCKING_REGION, for a blocking system call or anything
// else that does not need the lock. If anyone waits, the lock is handed to
// the longest waiter for the duration, and the caller queues behind the
// waiters to get it back.
//
// If fn panics, Blocking reacquires the lock and lets the panic continue, so
// the caller holds the lock on every way out, as it did on the way in.
// With nobody waiting, entering and leaving take the fast paths of Release
// and Acquire (a compare-and-swap each, and a counter increment): no
// wakeup, no allocation.
//
// Blocking must be called holding the lock; called on an unlocked Lock it
// panics.
func (l *Lock) Blocking(fn func()) {
	if l.state.Load()&mutexLocked == 0 {
		panic("gvl: Blocking on unlocked Lock")
	}
	l.Release()
	defer l.Acquire()
	fn()
}
