package gcstep

import (
	"sort"
	"time"
)

// world is a fake environment: a clock that moves only when told, a heap
// whose counters the test sets, and a collector that records what it was
// asked to do.
type world struct {
	t time.Duration
	r reading

	gcCost    time.Duration // how far the clock moves during a gc
	liveAfter uint64        // live heap a gc leaves
	onGC      func()        // called inside gc, before it returns

	gcCPU                 time.Duration // the collector's CPU time so far
	gcs, nudges, releases int
	gogc                  int
	nudgeDone             func()
	timers                []*timer
}

type timer struct {
	at      time.Duration
	f       func()
	stopped bool
}

func newWorld() *world { return &world{gogc: 100, gcCost: 100 * time.Microsecond} }

func (w *world) env() env {
	return env{
		now:  func() time.Duration { return w.t },
		read: func(r *reading) { *r = w.r },
		gc: func() {
			w.gcs++
			w.t += w.gcCost
			w.r.cycles++
			w.r.live = w.liveAfter
			if w.onGC != nil {
				w.onGC()
			}
		},
		nudge: func(done func()) int {
			w.nudges++
			w.nudgeDone = done
			prev := w.gogc
			w.gogc = nudgedGOGC
			return prev
		},
		gcCPU: func() time.Duration { return w.gcCPU },
		setGCPercent: func(p int) int {
			prev := w.gogc
			w.gogc = p
			return prev
		},
		release: func() {
			w.releases++
			w.r.cycles++
			w.r.released += 3 << 20
		},
		afterFunc: func(d time.Duration, f func()) stop {
			tm := &timer{at: w.t + d, f: f}
			w.timers = append(w.timers, tm)
			return func() bool {
				was := !tm.stopped
				tm.stopped = true
				return was
			}
		},
	}
}

// alloc pretends the program allocated n bytes.
func (w *world) alloc(n uint64) { w.r.allocs += n }

// pending reports how many timers are armed and not yet fired.
func (w *world) pending() int {
	n := 0
	for _, tm := range w.timers {
		if !tm.stopped {
			n++
		}
	}
	return n
}

// fireNext moves the clock to the earliest armed timer and runs it. It
// reports false if no timer is armed.
func (w *world) fireNext() bool {
	sort.SliceStable(w.timers, func(i, j int) bool { return w.timers[i].at < w.timers[j].at })
	for _, tm := range w.timers {
		if tm.stopped {
			continue
		}
		tm.stopped = true
		if tm.at > w.t {
			w.t = tm.at
		}
		tm.f()
		return true
	}
	return false
}
