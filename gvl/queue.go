package gvl

// A waiter is one goroutine's place in the queue. Records are reused, so a
// handoff allocates nothing once the lock has made as many records as it
// ever had goroutines waiting at once.
type waiter struct {
	// ch receives exactly one grant per wait. Its capacity of one lets the
	// releaser send without blocking, before or after the waiter sleeps.
	ch chan struct{}

	// since is when the wait began (nanotime), for waits that are timed:
	// those of acquireSlow, not Yield's. Written by the waiting goroutine
	// before it queues, read by it after it wakes.
	since int64

	// Guarded by Lock.mu.
	prev, next *waiter // queue links; next also links the free list
	queued     bool    // in the queue, no grant sent yet
	seenAt     int64   // nanotime when first known at the head; 0: not yet
}

// queue is an intrusive FIFO list of waiters, guarded by Lock.mu.
type queue struct {
	head, tail *waiter
}

func (q *queue) pushBack(w *waiter) {
	w.prev, w.next = q.tail, nil
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
	w.queued, w.seenAt = true, 0
}

func (q *queue) remove(w *waiter) {
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	w.queued = false
}

// popHead removes w, which must be the head: remove, cheaper.
func (q *queue) popHead(w *waiter) {
	q.head = w.next
	if q.head == nil {
		q.tail = nil
	} else {
		q.head.prev = nil
	}
	w.next = nil
	w.queued = false
}

// record returns an unused waiter record. Must be called with mu held.
func (l *Lock) record() *waiter {
	if w := l.free; w != nil {
		l.free = w.next
		w.next = nil
		return w
	}
	return &waiter{ch: make(chan struct{}, 1)}
}

// pushFree returns w to the free list. Must be called with mu held, and w
// must be neither queued nor have a grant pending.
func (l *Lock) pushFree(w *waiter) {
	w.next = l.free
	l.free = w
}

// recycle returns the record of a wait that has ended. The caller holds the
// lock: the record is kept as the holder's spare for its next Yield, or goes
// to the free list.
func (l *Lock) recycle(w *waiter) {
	if l.spare == nil {
		l.spare = w
		return
	}
	l.free1(w)
}

// free1 returns w to the free list, taking mu: recycle's rare case, out of
// line so that recycle is inlined.
func (l *Lock) free1(w *waiter) {
	l.mu.Lock()
	l.pushFree(w)
	l.mu.Unlock()
}

type waitResult uint8

const (
	granted     waitResult = iota // the lock was handed over
	cancelled                     // done closed; left the queue
	grantedLate                   // done closed, but the lock was already handed over
)

// wait blocks until w is granted the lock or done (which may be nil) is
// closed.
func (l *Lock) wait(w *waiter, done <-chan struct{}) waitResult {
	if done == nil {
		<-w.ch
		return granted
	}
	select {
	case <-w.ch:
		return granted
	case <-done:
	}
	l.mu.Lock()
	if !w.queued {
		// A releaser dequeued us and is sending the grant.
		l.mu.Unlock()
		<-w.ch
		return grantedLate
	}
	l.q.remove(w)
	l.state.Add(-waiterUnit)
	l.headChanged()
	l.pushFree(w)
	l.stats.cancelled++
	l.mu.Unlock()
	return cancelled
}

// granted finishes a wait that got the lock: the caller now holds it. The
// releaser has counted the acquisition already, as a handoff.
func (l *Lock) granted(w *waiter) {
	l.recycle(w)
	l.emit(EventAcquired)
}

// timedWait accounts a wait of acquireSlow that ended with the lock.
func (l *Lock) timedWait(since int64) {
	d := nanotime() - since
	l.waits.contended.Add(1)
	l.waits.total.Add(d)
	for {
		m := l.waits.max.Load()
		if d <= m || l.waits.max.CompareAndSwap(m, d) {
			return
		}
	}
}
