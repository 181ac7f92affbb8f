package gvl

import "time"

// DefaultTimeslice is how long a holder may keep the lock while another
// goroutine waits before it is asked to yield (between one and one and a
// half slices; see ShouldYield).
//
// 10 ms is Go's own scheduling quantum (the runtime preempts a goroutine
// that has run that long), so on a single P a waiter behind a spinning
// holder gets to run and queue on about that scale anyway: a shorter slice
// would promise what GOMAXPROCS=1 cannot keep. A handoff costs
// microseconds, so switching that often costs next to nothing. (Ruby uses
// 100 ms, CPython 5 ms.)
const DefaultTimeslice = 10 * time.Millisecond

// An Option configures a Lock made by New. A nil Option is ignored, as in
// every package of this module.
type Option func(*Lock)

// WithTimeslice sets how long a holder may keep the lock while others wait
// before ShouldYield reports true. A d of zero or less disables timeslices:
// waiters then never ask the holder to yield, and the lock sets no timer.
//
// Slices shorter than a millisecond are honored late: when no P is running
// goroutines, the runtime sleeps in epoll_wait, which counts in whole
// milliseconds (runtime/netpoll_epoll.go), so a timer due sooner may fire a
// millisecond after it was set.
func WithTimeslice(d time.Duration) Option {
	return func(l *Lock) {
		if d <= 0 {
			l.slice = -1
			return
		}
		l.slice = int64(d)
	}
}

// WithHook installs fn as the lock's event hook. fn is called synchronously,
// on the goroutine concerned, for every event; it must be quick and must not
// use the lock. A Lock without a hook pays one nil check per event.
func WithHook(fn func(Event)) Option {
	return func(l *Lock) { l.hook = fn }
}
