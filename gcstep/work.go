package gcstep

import (
	"sync"
	"sync/atomic"
	"time"
)

// A Work is a Runtime's handle for code without an event loop, such as a
// server with a goroutine per request: the code says when each piece of
// work begins and ends, and the stretches with nothing in flight are its
// quiet. Once nothing has been in flight for the quiet period, and every
// loop and Work sharing the Runtime is quiet too, the Runtime returns the
// memory the work left to the OS, as it does for its loops: once per
// quiet stretch, on a goroutine of its own, within the budget.
//
// Begin, End, Pause and Resume take no lock and allocate nothing: an
// atomic add each, and when nothing unpaused is left in flight a clock
// reading and a timer, armed if none is, that looks once the quiet period
// has passed. With nothing to release, no timer and no goroutine runs.
//
// A piece of work that waits for its peer for a long time (a stream
// between messages, a long poll) can say so with Pause and Resume: while
// every piece in flight is paused, the handle is quiet.
type Work struct {
	n atomic.Int64 // work in flight: paused<<32 + not paused (see split)
	_ [56]byte     // n alone on its cache line: every Begin and End writes it

	end    atomic.Int64 // env.now in ns when nothing unpaused was last in flight
	armed  atomic.Bool  // the timer is armed or its function runs
	closed atomic.Bool

	c       *core
	t       timer
	pending sync.WaitGroup // 1 while armed: Close waits for it
	// arm is held to arm the timer and to close: an arming comes before
	// Close's Stop and Wait, or sees the handle closed and arms nothing
	// (pending's Add from zero must not race its Wait).
	arm sync.Mutex
}

// timer is what a Work needs of a time.Timer made by time.AfterFunc; the
// tests give it a fake they fire themselves.
type timer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// Work returns a new handle for code that tells when its work begins and
// ends (see Work). Close it when no more work can come, or close the Runtime.
func (rt *Runtime) Work() *Work {
	return rt.newWork(func(f func()) timer {
		t := time.AfterFunc(time.Hour, f)
		t.Stop()
		return t
	})
}

func (rt *Runtime) newWork(after func(f func()) timer) *Work {
	w := &Work{c: rt.c}
	w.t = after(w.fire)
	if !rt.own(w.Close) {
		w.closed.Store(true)
		return w
	}
	rt.c.mu.Lock()
	rt.c.works = append(rt.c.works, w)
	rt.c.mu.Unlock()
	return w
}

// Begin records that a piece of work began. Each Begin must be matched
// by one End, also when the work fails or panics (defer it). After Close
// the count is still kept, and nothing else is done.
func (w *Work) Begin() { w.n.Add(1) }

// End records that a piece of work begun with Begin ended. It panics,
// with a message that starts with "gcstep:", if more work ended than
// began, leaving the count as it was for the pairs that follow.
func (w *Work) End() {
	switch n, _ := split(w.n.Add(-1)); {
	case n == 0:
		w.fell()
	case n < 0:
		w.n.Add(1)
		panic("gcstep: Work.End without a Begin")
	}
}

// Pause records that a piece of work in flight waits for its peer: until
// Resume, it does not keep the handle from being quiet. Pause and Resume
// must pair inside a Begin and its End; Pause panics, with a message that
// starts with "gcstep:", if no work is in flight to pause.
func (w *Work) Pause() {
	switch n, _ := split(w.n.Add(pauseOne)); {
	case n == 0:
		w.fell()
	case n < 0:
		w.n.Add(-pauseOne)
		panic("gcstep: Work.Pause without a Begin")
	}
}

// Resume records that a paused piece of work goes on. It panics, with a
// message that starts with "gcstep:", without a Pause.
func (w *Work) Resume() {
	if _, p := split(w.n.Add(-pauseOne)); p < 0 {
		w.n.Add(pauseOne)
		panic("gcstep: Work.Resume without a Pause")
	}
}

// pauseOne moves a piece of work to paused in one add: n is read whole.
const pauseOne = 1<<32 - 1

// split is the counts in n: not paused (the low 32 bits, signed), paused.
func split(v int64) (unpaused, paused int64) { u := int64(int32(v)); return u, (v - u) >> 32 }

func (w *Work) unpaused() int64 { u, _ := split(w.n.Load()); return u }

// InFlight reports how much work has begun and not yet ended, paused or not.
func (w *Work) InFlight() int { u, p := split(w.n.Load()); return int(u + p) }

// Paused reports how much of the work in flight is paused.
func (w *Work) Paused() int { _, p := split(w.n.Load()); return int(p) }

// fell records that nothing unpaused is in flight, and arms the timer.
func (w *Work) fell() {
	if w.closed.Load() {
		return
	}
	w.end.Store(int64(w.c.env.now()))
	if w.c.cfg.releaseDelay > 0 && w.armed.CompareAndSwap(false, true) {
		w.arm.Lock()
		defer w.arm.Unlock()
		if w.closed.Load() {
			w.armed.Store(false)
			return
		}
		w.pending.Add(1)
		w.t.Reset(w.c.cfg.releaseDelay)
	}
}

// fire is the timer's function: a look once the handle has been quiet
// for the quiet period, or the timer again for what is left of it.
func (w *Work) fire() {
	if w.closed.Load() {
		w.disarm()
		return
	}
	if w.unpaused() == 0 {
		left := time.Duration(w.end.Load()) + w.c.cfg.releaseDelay - w.c.env.now()
		if left > 0 {
			if w.rearm(left) {
				return
			}
		} else {
			w.c.step(nil, time.Millisecond) // a look that may act: any budget > 0
			// A loop worked meanwhile, or another goroutine held the look: again.
			if d, ok := w.c.releaseDue(); ok && w.unpaused() == 0 && w.rearm(max(d, lookEvery)) {
				return
			}
		}
	}
	w.disarm()
	// An End may have come between the look and the disarm and found
	// the timer armed: look after it too.
	if w.unpaused() == 0 && time.Duration(w.end.Load()) > w.c.env.now()-w.c.cfg.releaseDelay {
		w.fell()
	}
}

// rearm sets the armed timer, from its own function, to fire again
// after d, unless the handle closed meanwhile; it reports whether it did.
func (w *Work) rearm(d time.Duration) bool {
	w.arm.Lock()
	defer w.arm.Unlock()
	if w.closed.Load() {
		return false
	}
	w.t.Reset(d)
	return true
}

func (w *Work) disarm() {
	if w.armed.CompareAndSwap(true, false) {
		w.pending.Done()
	}
}

// Close detaches the handle from its Runtime and stops its timer,
// waiting for the timer's function if it runs. Begin and End after Close
// only count. Close is idempotent.
func (w *Work) Close() {
	w.arm.Lock()
	if w.closed.Swap(true) {
		w.arm.Unlock()
		return
	}
	stopped := w.t.Stop()
	w.arm.Unlock()
	if stopped {
		w.disarm()
	}
	w.pending.Wait()
	remove(w.c, &w.c.works, w)
}
