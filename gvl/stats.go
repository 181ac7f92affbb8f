package gvl

import (
	"sync/atomic"
	"time"
)

// Stats counts what a Lock has done since it was made.
type Stats struct {
	// Acquisitions counts every time the lock was taken, by any path,
	// including the reacquisitions inside Yield and Blocking, and a lock
	// handed to a waiter that had just given up (which passes it on).
	Acquisitions uint64
	// Contended counts the acquisitions by Acquire, AcquireContext and
	// Blocking that had to wait in the queue.
	Contended uint64
	// Handoffs counts direct handoffs: a releaser (Release, Yield, Blocking)
	// passed the lock to the longest waiter without ever unlocking it. A
	// waiter gets the lock in no other way, so Handoffs is Contended plus
	// the turns that came back to yielders.
	Handoffs uint64
	// Yields counts the Yield calls that handed the lock over. Calls that
	// found nobody waiting return at once and are not counted.
	Yields uint64
	// Cancelled counts waits abandoned because a context was done.
	Cancelled uint64
	// WaitTotal and WaitMax are the total and the longest time a Contended
	// acquisition waited: from joining the queue until the waiter ran again
	// holding the lock. A Yield's turn in the queue is given away, not
	// waited for, and is not timed, so that a Yield reads no clock.
	WaitTotal time.Duration
	WaitMax   time.Duration
}

// counters are the slow paths' statistics, guarded by Lock.mu: every
// event they count happens with mu held already, so a plain increment is
// cheaper than an atomic one. Acquisitions, handoffs included, are
// counted in Lock.acquisitions, atomically (see Lock.Acquisitions).
type counters struct {
	handoffs, yields, cancelled uint64
}

// waitCounters account the timed waits. A waiter updates them after it
// wakes, without mu, so they are atomic.
type waitCounters struct {
	contended  atomic.Uint64
	total, max atomic.Int64
}

// Stats returns the lock's counters. It may be called at any time, by any
// goroutine, holding the lock or not.
func (l *Lock) Stats() Stats {
	l.mu.Lock()
	c := l.stats
	// Read with mu held: a handoff counts itself in both under mu, so
	// Acquisitions is never below Handoffs in a snapshot.
	acquisitions := l.acquisitions.Load()
	l.mu.Unlock()
	return Stats{
		Acquisitions: acquisitions,
		Contended:    l.waits.contended.Load(),
		Handoffs:     c.handoffs,
		Yields:       c.yields,
		Cancelled:    c.cancelled,
		WaitTotal:    time.Duration(l.waits.total.Load()),
		WaitMax:      time.Duration(l.waits.max.Load()),
	}
}
