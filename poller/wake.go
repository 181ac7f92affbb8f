package poller

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// waker is how any goroutine interrupts the loop's wait: an fd the loop
// watches for Read (an eventfd on Linux, a pipe's read end elsewhere), made
// ready by a write.
//
// Wakeups coalesce through pending, as in the runtime's netpoll: only the
// Wake that flips it from 0 to 1 writes; the loop sets it back to 0 after
// draining the fd. A Wake that finds it set needs no write, because the
// loop has not drained yet and will come round (or is past the drain and
// awake). So a thousand Wake calls before the loop runs cost one write.
type waker struct {
	pending atomic.Uint32

	// mu keeps the fds open while a Wake writes to them: Close may run
	// concurrently, and a write to a closed (and perhaps reused) fd would
	// land in somebody else's file.
	mu     sync.RWMutex
	rfd    int  // the fd the loop watches; set once by open
	wfd    int  // the fd Wake writes to (rfd for an eventfd); set by open
	closed bool // guarded by mu

	// buf is what drain reads into, the loop goroutine's only. Kept here
	// rather than on drain's stack: in a race build x/sys tells the race
	// detector about the bytes read, which moves a buffer on the stack to
	// the heap at every wakeup.
	buf [64]byte
}

// Wake makes the loop's current or next wait return, from any goroutine.
// Calls coalesce: many Wake calls before the loop runs make it wake once.
// After Close, Wake does nothing.
func (l *Loop) Wake() {
	l.c.wakeCalls.Add(1)
	w := &l.wake
	if !w.pending.CompareAndSwap(0, 1) {
		return
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return
	}
	if err := w.signal(&l.c); err != nil && err != unix.EAGAIN {
		// Nothing was written, so no drain will clear pending: clear
		// it here, or every later Wake would find it set and the loop
		// would never be woken again. (EAGAIN means the fd is full:
		// the loop is due to wake and will drain.)
		w.pending.Store(0)
	}
}

// drain empties the wake fd and clears pending. Loop goroutine only.
func (w *waker) drain(c *counters) {
	w.consume(c)
	w.pending.Store(0)
	c.wakeups.Add(1)
}

// close closes the wake fds, once; later Wake calls do nothing.
func (w *waker) close(c *counters) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return w.closeFDs(c)
}
