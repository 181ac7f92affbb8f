package gcstep

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// A Work is a Runtime's handle for code without an event loop, such as a
// server with a goroutine per request: the code says when each piece of
// work begins and ends (Begin, End), and the Runtime takes the stretches
// with nothing in flight for what a loop's waits are. Once nothing has
// been in flight for the handle's quiet period, and every loop sharing
// the Runtime is quiet too, the Runtime empties the gap as it does for
// its loops (see Runtime): once per quiet stretch, on a goroutine of its
// own, charged to the CPU cap, and only if the program allocated enough
// since the last time.
//
// Begin and End take no lock and allocate nothing: an atomic add each,
// and a clock reading and a few atomic stores when the count leaves or
// reaches zero. The End that brings the count to zero arms a timer if
// none is armed, so at most once per quiet period; the timer's goroutine
// tells the Runtime what happened since it last ran (the gaps between
// work, as a loop's waits) and empties the gap when that is due. With
// nothing in flight and nothing allocated since the last release, no
// timer is armed and no goroutine runs.
//
// While a Work has work in flight, the process is not quiet for the
// loops sharing its Runtime either. Package httpidle counts the requests
// of a net/http server this way.
type Work struct {
	n atomic.Int64 // work in flight
	_ [56]byte     // n alone on its cache line: every Begin and End writes it

	// Written when the count leaves or reaches zero, read by the timer's
	// goroutine. Times are in nanoseconds of rt.env.now.
	start    atomic.Int64 // when the count last rose from zero
	end      atomic.Int64 // when it last fell to zero (only ever moves forward)
	gap      atomic.Int64 // how long it had been zero when it last rose; 0: unknown
	idle     atomic.Int64 // time at zero not yet reported to the Runtime
	credited atomic.Int64 // up to when the timer reported the time at zero so far
	// asleep says that the timer found the handle quiet; the first rise
	// after that stores its time in woke, so that the quiet stretch is
	// reported whole however many rises follow before the timer runs
	// again. The timer swaps woke back to 0.
	asleep atomic.Bool
	woke   atomic.Int64
	wait   atomic.Int64 // what a fall arms the timer for: the quiet period; 0: never (no release)
	armed  atomic.Bool  // the timer is armed, or its goroutine runs
	closed atomic.Bool

	rt      *Runtime
	l       *Loop
	t       timer
	pending sync.WaitGroup // 1 while armed: Close waits for it

	mu        sync.Mutex // held by the timer's goroutine and by Close
	seen      int64      // the start the timer last reported
	sleepFrom int64      // the end the quiet stretch began at, when asleep was set
}

// timer is what a Work needs of a time.Timer made by time.AfterFunc;
// the tests give it a fake one they fire themselves.
type timer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// never is the quiet deadline of a handle with work in flight.
const never = time.Duration(math.MaxInt64)

// workStepBudget is the budget of the timer's step: what emptying the gap
// needs is only that it is positive (the release runs on a goroutine of
// its own).
const workStepBudget = time.Millisecond

// Work returns a new handle for code that tells when its work begins and
// ends (see Work). Close it when no more work can come.
func (rt *Runtime) Work() *Work {
	return rt.newWork(func(f func()) timer {
		t := time.AfterFunc(time.Hour, f)
		t.Stop()
		return t
	})
}

// newWork makes a Work whose timer is made by after, stopped, to run f.
func (rt *Runtime) newWork(after func(f func()) timer) *Work {
	w := &Work{rt: rt, l: rt.Loop()}
	w.t = after(w.fire)
	now := int64(rt.env.now())
	w.end.Store(now) // the time before the first Begin is the first wait, as a loop's
	w.credited.Store(now)
	w.l.mu.Lock()
	w.l.work = w
	if rt.cfg.releaseDelay > 0 {
		w.wait.Store(int64(w.l.quietPeriod()))
	}
	w.l.mu.Unlock()
	return w
}

// Begin records that a piece of work began. Each Begin must be matched
// by one End, also when the work fails or panics (defer it).
func (w *Work) Begin() {
	if w.n.Add(1) == 1 {
		w.rose()
	}
}

// End records that a piece of work begun with Begin ended. It panics, with
// a message that starts with "gcstep:", if more work ended than began.
func (w *Work) End() {
	switch n := w.n.Add(-1); {
	case n == 0:
		w.fell()
	case n < 0:
		panic("gcstep: Work.End without a Begin")
	}
}

// InFlight reports how much work has begun and not yet ended.
func (w *Work) InFlight() int { return int(w.n.Load()) }

// busy reports whether work is in flight.
func (w *Work) busy() bool { return w.n.Load() > 0 }

// rose records the count's rise from zero. Rises never run concurrently:
// the next one needs the count back at zero, after this one's Begin
// returned.
func (w *Work) rose() {
	now := int64(w.rt.env.now())
	end := w.end.Load()
	if end >= w.start.Load() {
		// The first rise ends no gap: nothing was in flight before it.
		w.gap.Store(0)
		if end > 0 {
			w.gap.Store(now - end)
		}
		// Less what the timer reported of this stretch already (it may
		// have read a later clock than this rise: then nothing).
		if d := now - max(end, w.credited.Load()); d > 0 {
			w.idle.Add(d)
		}
	} else {
		// The fall before this rise has not stored its time yet (its
		// End was preempted between the count and the clock): the
		// gap is unknown, and it is short.
		w.gap.Store(0)
	}
	w.start.Store(now)
	if w.asleep.Load() && w.asleep.CompareAndSwap(true, false) {
		w.woke.Store(now)
	}
}

// fell records the count's fall to zero and arms the timer if it is not
// armed.
func (w *Work) fell() {
	now := int64(w.rt.env.now())
	// Falls may land out of order (an End preempted before its clock
	// reading): end only moves forward.
	for old := w.end.Load(); old < now && !w.end.CompareAndSwap(old, now); old = w.end.Load() {
	}
	if w.armed.Load() || w.closed.Load() {
		return
	}
	d := w.wait.Load()
	if d <= 0 || !w.armed.CompareAndSwap(false, true) {
		return
	}
	w.pending.Add(1)
	w.t.Reset(time.Duration(d))
}

// fire runs on the timer's goroutine. It reports what happened since it
// last ran and then, with nothing in flight, asks the handle when the
// Runtime will have work (NextStep: when every loop and this handle have
// been quiet for their quiet periods, if the program allocated enough to
// make a release worth asking about). When that is now, it steps: the
// Runtime empties the gap. It arms the timer for the next time, if there
// is one, and otherwise leaves it disarmed, for the next fall to arm.
// With work in flight it leaves the timer disarmed too.
func (w *Work) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		if w.closed.Load() {
			w.pending.Done()
			return
		}
		now := w.rt.env.now()
		n, end := w.n.Load(), w.end.Load()
		w.report(now, n, end)
		if n > 0 {
			if w.disarm(end) {
				continue
			}
			return
		}
		quiet := w.quietPeriod()
		if now >= time.Duration(end)+quiet {
			w.sleep(end)
		}
		next, ok := w.l.NextStep()
		if ok && next <= 0 {
			w.l.Step(workStepBudget)
			next, ok = w.l.NextStep()
			// Due and still not done (the CPU cap, or another loop
			// stepping): not before a quiet period, so it cannot spin.
			next = max(next, quiet)
		}
		if !ok {
			w.sleep(end) // the next rise ends the stretch that began at end
			if w.disarm(end) {
				continue
			}
			return
		}
		w.t.Reset(next)
		return
	}
}

// report tells the handle what happened since the timer last ran: the gap
// that ended the last quiet stretch, the latest gap between work (a sample
// of the rest, as a loop's waits would tell them), the time spent at
// zero, and, with nothing in flight, when the work ended. w.mu must be
// held.
func (w *Work) report(now time.Duration, n, end int64) {
	var woke int64
	if t := w.woke.Swap(0); t != 0 {
		woke = t
		w.l.waitedAt(time.Duration(t), time.Duration(t-w.sleepFrom), true)
	}
	if s := w.start.Load(); s > w.seen {
		w.seen = s
		if g := w.gap.Load(); s != woke && g > 0 {
			w.l.waitedAt(time.Duration(s), time.Duration(g), true)
		}
	}
	idle := w.idle.Swap(0)
	if n == 0 {
		// The stretch at zero so far, as a loop's wait that timed out:
		// it earns the CPU cap that a release due in it will spend.
		if from := max(end, w.credited.Load()); int64(now) > from {
			idle += int64(now) - from
			w.credited.Store(int64(now))
		}
		w.l.workedAt(time.Duration(end))
	}
	if idle > 0 {
		w.rt.Idled(time.Duration(idle))
	}
}

// workedAt records that the loop's work ended at t, unless it knows of
// later work: a Work tells it after the fact.
func (l *Loop) workedAt(t time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.observed = true
	if t > l.lastWork {
		l.active(t)
	}
}

// quietPeriod is the handle's quiet period, which the next fall arms the
// timer for.
func (w *Work) quietPeriod() time.Duration {
	w.l.mu.Lock()
	q := w.l.quietPeriod()
	w.l.mu.Unlock()
	w.wait.Store(int64(q))
	return q
}

// sleep marks the handle as quiet since end, so that the next rise
// records when the stretch at zero that began at end ended, however many
// rises follow before the timer runs again. w.mu must be held.
func (w *Work) sleep(end int64) {
	if w.asleep.Load() {
		return
	}
	w.sleepFrom = end
	w.asleep.Store(true)
	if w.n.Load() > 0 || w.end.Load() != end {
		// Work came between the look and the mark: if its rise did
		// not see the mark, take it back (its gap is reported as the
		// latest one).
		w.asleep.CompareAndSwap(true, false)
	}
}

// disarm leaves the timer disarmed, for the next fall to arm. It reports
// true if a fall came after the timer's look (end) and found the timer
// armed: the timer is then armed again, and the caller goes on. w.mu must
// be held.
func (w *Work) disarm(end int64) (again bool) {
	w.armed.Store(false)
	if w.n.Load() == 0 && w.end.Load() != end && w.armed.CompareAndSwap(false, true) {
		return true
	}
	w.pending.Done()
	return false
}

// Close detaches the handle from its Runtime and stops its timer, waiting
// for the timer's goroutine if it runs. Call it once no Begin or End can
// come (after the server has shut down); Begin and End after Close only
// count.
func (w *Work) Close() {
	if w.closed.Swap(true) {
		return
	}
	w.mu.Lock() // the timer's goroutine is not between a look and a Reset
	if w.t.Stop() {
		w.pending.Done() // armed, and now it will not fire
	}
	w.mu.Unlock()
	w.pending.Wait()
	w.l.Close()
}
