package gcstep

import "time"

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
}

func newWorld() *world { return &world{gogc: 100, gcCost: 100 * time.Microsecond} }

func (w *world) env() env {
	return env{
		now:  func() time.Duration { return w.t },
		read: func(r *reading) { *r = w.r },
		gc: func(time.Duration) {
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
	}
}

// alloc pretends the program allocated n bytes.
func (w *world) alloc(n uint64) { w.r.allocs += n }
