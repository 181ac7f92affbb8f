package gvl

// Yield hands the lock to the goroutine that has waited longest and queues
// the caller behind it; Yield returns when the lock is the caller's again.
// Every goroutine that was waiting runs before the caller does, which is
// what Unlock followed by Lock on a sync.Mutex does not promise: there the
// releaser usually barges straight back in.
//
// If nobody waits, Yield returns at once. A goroutine that has called
// Acquire but not yet queued is not waiting (see Contended); at GOMAXPROCS=1
// a caller that wants such goroutines to get a turn must let them run first,
// for example with runtime.Gosched before Yield.
//
// Yield must be called holding the lock; called on an unlocked Lock it
// panics.
func (l *Lock) Yield() {
	s := l.state.Load()
	if s&mutexLocked == 0 {
		panic("gvl: Yield of unlocked Lock")
	}
	if s < waiterUnit {
		return
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
	now := nanotime()
	// The caller replaces h in the queue: the waiter count is unchanged.
	l.q.remove(h)
	l.holderSince = now
	w.since = now
	l.q.pushBack(w)
	l.headChanged(now)
	l.stats.handoffs.Add(1)
	l.stats.yields.Add(1)
	l.mu.Unlock()
	h.ch <- struct{}{}

	l.emit(EventWaiting)
	l.wait(w, nil)
	l.granted(w)
}

// Blocking releases the lock, runs fn and takes the lock again before
// returning: Ruby's BLOCKING_REGION, for a blocking system call or anything
// else that does not need the lock. If anyone waits, the lock is handed to
// the longest waiter for the duration, and the caller queues behind the
// waiters to get it back.
//
// If fn panics, Blocking reacquires the lock and lets the panic continue, so
// the caller holds the lock on every way out, as it did on the way in.
// With nobody waiting, entering and leaving cost one compare-and-swap each,
// with no wakeup and no allocation.
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
