package poller

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/idlemux/idlemux/gcstep"
)

// An alarm does the deferred work (gcstep.Deferred) of a Mux whose
// goroutines share a lock, in place of bounding each wait by NextStep.
//
// Why not bound the waits, as a Loop and a Mux without a lock do: such a
// Mux parks its waits in Go's netpoller (park_linux.go), where a finite
// timeout is a read deadline, and setting one moves a runtime timer at
// every wait. Goroutines that bounce work between them wait hundreds of
// times a millisecond, each time with a bound about a quiet period (a
// tenth of a second, by default) away, and the timer moved for every
// wait cost them about a tenth of a round trip (bench/README.md). The
// alarm is one timer for the whole Mux instead: a wait arms it only if it
// would not fire in time, and it asks NextStep again when it fires, so in
// a busy program it fires about once per quiet period and finds the work
// not due yet.
//
// When it fires, the alarm takes the lock as any goroutine sharing it
// does (waiting behind the holder, if there is one) and does what a wait
// woken for deferred work would: it steps while NextStep says the work is
// due, the stepper has more and nobody waits for the lock, then arms
// itself for the next deferred work, if any. A goroutine of the Mux whose
// fd becomes ready meanwhile queues for the lock and so stops the steps,
// as a ready fd found by the poll after a step would.
type alarm struct {
	d  *idler
	ds gcstep.Deferred

	// at is when the timer fires, in nanoseconds since d.epoch, or 0 when
	// it is not armed. It is written with mu held and read without.
	at atomic.Int64

	mu sync.Mutex  // serialises arming and the timer's bookkeeping
	t  *time.Timer // nil until first armed; runs fire
}

func newAlarm(d *idler, ds gcstep.Deferred) *alarm {
	return &alarm{d: d, ds: ds}
}

// arm makes sure the alarm fires within next (positive) from now. It
// leaves a timer that fires sooner as it is: that one asks again.
func (a *alarm) arm(next time.Duration) {
	now := a.d.since(time.Now())
	at := now + int64(next)
	// A timer due in the past has fired, or is about to: it may be past
	// the point where it would see this wait's need, so arm anew.
	if cur := a.at.Load(); cur > now && cur <= at {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur := a.at.Load(); cur > now && cur <= at {
		return
	}
	a.at.Store(at)
	if a.t == nil {
		a.t = time.AfterFunc(next, a.fire)
	} else {
		a.t.Reset(next)
	}
}

// pending reports whether the alarm is armed to fire after now (in
// nanoseconds since a.d.epoch).
func (a *alarm) pending(now int64) bool { return a.at.Load() > now }

// fire runs on the timer's goroutine.
func (a *alarm) fire() {
	a.mu.Lock()
	if !a.pending(a.d.since(time.Now())) {
		a.at.Store(0) // not re-armed meanwhile for later
	}
	a.mu.Unlock()

	d := a.d
	d.lock.Acquire()
	defer d.lock.Release()
	next, ok := a.ds.NextStep()
	if !ok {
		return
	}
	if next <= 0 {
		for !d.lock.Contended() {
			more, took := d.step(d.budget)
			d.stepped(took, d.lock.Contended())
			if !more {
				break
			}
		}
		if next, ok = a.ds.NextStep(); !ok {
			return
		}
	}
	// Not due yet, due again, or due but somebody waits for the lock:
	// ask again later, never sooner than a budget, so that work due but
	// not doable now cannot spin.
	a.arm(max(next, d.budget))
}
