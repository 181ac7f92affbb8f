package gvl

import (
	"sync/atomic"
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
	// passed the lock to the longest waiter without ever unlocking it.
	Handoffs uint64
	// Yields counts the Yield calls that handed the lock over. Calls that
	// found nobody waiting return at once and are not counted.
	Yields uint64
	// Cancelled counts waits abandoned because a context was done.
	Cancelled uint64
	// WaitTotal and WaitMax are the total and the longest time a contended
	// acquisition spent in the queue, measured by the waiter from joining
	// the queue until it ran again holding the lock.
	WaitTotal time.Duration
	WaitMax   time.Duration
}

// counters are the Lock's statistics. Every field is updated atomically, so
// Stats may read them at any time; they are counters, not a snapshot, and two
// fields read together may disagree by an event in flight.
type counters struct {
	acquisitions atomic.Uint64
	contended    atomic.Uint64
	handoffs     atomic.Uint64
	yields       atomic.Uint64
	cancelled    atomic.Uint64
	waitTotal    atomic.Int64
	waitMax      atomic.Int64
}

// Stats returns the lock's counters. It may be called at any time, by any
// goroutine, holding the lock or not.
func (l *Lock) Stats() Stats {
	c := &l.stats
	return Stats{
		Acquisitions: c.acquisitions.Load(),
		Contended:    c.contended.Load(),
		Handoffs:     c.handoffs.Load(),
		Yields:       c.yields.Load(),
		Cancelled:    c.cancelled.Load(),
		WaitTotal:    time.Duration(c.waitTotal.Load()),
		WaitMax:      time.Duration(c.waitMax.Load()),
	}
}

// recordWait accounts one contended acquisition that waited d nanoseconds.
func (c *counters) recordWait(d int64) {
	c.contended.Add(1)
	c.waitTotal.Add(d)
	for {
		m := c.waitMax.Load()
		if d <= m || c.waitMax.CompareAndSwap(m, d) {
			return
		}
	}
}
