// Package gvl is a global VM lock for goroutines that share a
// single-threaded runtime: an interpreter, an event loop, anything that
// allows one holder at a time, like Ruby's GVL or CPython's GIL.
//
// Unlike sync.Mutex, a Lock knows who is waiting for it. Contended answers
// the question Ruby's gvl_contended_p asked ("is anybody waiting?") with a
// single atomic load, so an idle holder can decide whether its idle time
// belongs to another goroutine or may be spent on housekeeping such as a
// garbage-collection step.
//
// Waiters are served in FIFO order and the lock is handed over directly: a
// releaser never barges back in ahead of a goroutine that was already
// waiting. Yield hands the lock to the longest waiter and queues behind it
// (Ruby's Thread.pass). Blocking releases the lock around a blocking call
// (Ruby's BLOCKING_REGION). A holder that keeps the lock longer than a
// timeslice while others wait is asked to yield; it learns so from
// ShouldYield, and Checkpoint yields for it. No background goroutine keeps
// time: one timer per lock, pending only while goroutines wait, looks once
// a timeslice whether the head of the queue has moved.
//
// Misuse that can be detected, such as releasing a lock nobody holds,
// panics with a message that starts with "gvl:". A Lock does not record
// which goroutine holds it, so releasing a lock held by another goroutine
// cannot be detected, exactly as with sync.Mutex.
package gvl
