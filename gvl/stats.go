package gvl

import (
	"time"
)

// Stats counts what a Lock has done since it was made.
type Stats struct {
	// Acquisitions counts every time the lock was taken, by any path,
	// including the reacquisitions inside Yield and Blocking.
	Acquisitions uint64
	// Contended counts the acquisitions that had to wait in the queue.
	Contended uint64
	// Handoffs counts direct handoffs: a releaser (Release, Yield, Blocking)
	// passed the lock to the longest waiter without ever unlocking it. A
	// waiter gets the lock in no other way, so it equals Contended; both
	// are reported because they answer different questions.
	Handoffs uint64
	// Yields counts the Yield calls that handed the lock over. Calls that
	// found nobody waiting return at once and are not counted.
	Yields uint64
	// Cancelled counts waits abandoned because a context was done.
	Cancelled uint64
	// WaitTotal and WaitMax are the total and the longest time a contended
	// acquisition spent in the queue: from joining it until the lock was
	// handed over. The releaser measures it with the clock reading it takes
	// anyway, so it leaves out the scheduler's delay in running the waiter.
	WaitTotal time.Duration
	WaitMax   time.Duration
}

// counters are the slow paths' statistics, guarded by Lock.mu: every
// event they count happens with mu held already, so a plain increment is
// cheaper than an atomic one. Every handoff is an acquisition; the others
// are counted in Lock.fastAcquisitions, atomically.
type counters struct {
	handoffs, yields, cancelled uint64
	waitTotal, waitMax          int64
}

// Stats returns the lock's counters. It may be called at any time, by any
// goroutine, holding the lock or not.
func (l *Lock) Stats() Stats {
	fast := l.fastAcquisitions.Load()
	l.mu.Lock()
	c := l.stats
	l.mu.Unlock()
	return Stats{
		Acquisitions: fast + c.handoffs,
		Contended:    c.handoffs,
		Handoffs:     c.handoffs,
		Yields:       c.yields,
		Cancelled:    c.cancelled,
		WaitTotal:    time.Duration(c.waitTotal),
		WaitMax:      time.Duration(c.waitMax),
	}
}
