package gcstep

import (
	"math"
	"time"
)

// world is a fake environment: a clock that moves only when told, a heap
// whose counters the test sets, a collector that records what it was
// asked to do, and a program that may call debug.SetGCPercent inside a
// step's window.
type world struct {
	t time.Duration
	r reading

	gcCost    time.Duration // how far the clock moves during a gc
	liveAfter uint64        // live heap a gc leaves
	onGC      func()        // called inside gc, before it returns
	inWindow  func()        // called while a step has GOGC lowered
	noStart   bool          // start reports that no cycle could start
	unended   bool          // gc returns with the cycle still marking: the test completes it
	quickBG   bool          // a started cycle completes at once, as a small heap's does

	gcCPU                   time.Duration // the collector's CPU time so far
	gcs, starts, releases   int
	gogc                    int
	spawned                 []func() // goroutines the Runtime started, not yet run
	releaseCost, spawnCount int
	reads                   int // heap readings taken
}

// newWorld starts with the heap goal out of reach, as with GOGC=off, so
// that only the tests about the pacer's runway meet it.
func newWorld() *world {
	w := &world{gogc: 100, gcCost: 100 * time.Microsecond}
	w.r.goal = math.MaxUint64
	return w
}

// setGOGC is debug.SetGCPercent in the fake world.
func (w *world) setGOGC(p int) int {
	prev := w.gogc
	w.gogc = p
	return prev
}

// collected completes a cycle as the runtime would, with the sweep done.
func (w *world) collected() {
	w.r.cycles++
	w.r.live = w.liveAfter
	w.r.objects = w.liveAfter
}

func (w *world) env() env {
	return env{
		now: func() time.Duration { return w.t },
		read: func(r *reading) {
			w.reads++
			*r = w.r
			r.gogc = w.gogc
		},
		gc: func(time.Duration) window {
			w.gcs++
			var win window
			win.before = w.setGOGC(nudgedGOGC)
			if w.inWindow != nil {
				w.inWindow()
			}
			win.close(w.setGOGC(-1), nudgedGOGC)
			w.t += w.gcCost
			if !w.unended {
				w.collected()
			}
			win.close(w.setGOGC(win.before), -1)
			if win.kept {
				w.setGOGC(win.set)
			}
			if w.onGC != nil {
				w.onGC()
			}
			return win
		},
		start: func(time.Duration) (window, bool) {
			var win window
			win.before = w.setGOGC(nudgedGOGC)
			if w.inWindow != nil {
				w.inWindow()
			}
			win.close(w.setGOGC(win.before), nudgedGOGC)
			if win.kept {
				w.setGOGC(win.set)
			}
			if w.noStart {
				return win, false
			}
			w.starts++
			if w.quickBG {
				w.collected()
			}
			return win, true
		},
		gcCPU:        func() time.Duration { return w.gcCPU },
		setGCPercent: w.setGOGC,
		release: func() {
			w.releases++
			w.t += time.Duration(w.releaseCost)
			w.collected()
			w.r.released += 3 << 20
		},
		spawn: func(f func()) {
			w.spawnCount++
			w.spawned = append(w.spawned, f)
		},
	}
}

// alloc pretends the program allocated n bytes.
func (w *world) alloc(n uint64) {
	w.r.allocs += n
	w.r.objects += n
}

// run runs the goroutines the Runtime started.
func (w *world) run() {
	for len(w.spawned) > 0 {
		f := w.spawned[0]
		w.spawned = w.spawned[1:]
		f()
	}
}
