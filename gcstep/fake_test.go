package gcstep

import (
	"cmp"
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

	gcCost     time.Duration // how far the clock moves during a gc
	liveAfter  uint64        // live heap a gc leaves
	onGC       func()        // called inside gc, before it returns
	inWindow   func()        // called while a step has GOGC lowered
	noStart    bool          // start reports that no cycle could start
	unended    bool          // gc returns with the cycle still marking: the test completes it
	quickBG    bool          // a started cycle completes at once, as a small heap's does
	mark       markGoal      // the goal the last started cycle was asked to mark with
	inlineMark markGoal      // and the last inline one, if it outlives its budget
	// overdue says the cycle marking now has used up its allowance
	// (env.overdue); awaits counts the waits for it (env.awaitMark).
	overdue bool
	awaits  int

	gcCPU                   time.Duration // the collector's CPU time so far
	gcs, starts, releases   int
	trims                   int
	gogc                    int
	spawned                 []func() // goroutines the Runtime started, not yet run
	releaseCost, spawnCount int
	reads                   int           // heap readings taken
	fault                   time.Duration // what the fault probe measures

	// pacer, if not zero, is the program's GOGC, and the world collects
	// on its own (pacerCycles) once the heap reaches its goal, as the
	// runtime's pacer would. Zero: the goal is out of reach, as with
	// GOGC=off, unless a test sets it.
	pacer       int
	pacerCycles int

	// A machine's prices (see profile): a started cycle completes
	// bgDelay after it starts, costing bgCost of collector CPU, and
	// starting it holds the caller for kickCost; an inline cycle's
	// collector CPU is gcCost times cpuPerWall (1 if zero; less than one
	// where the rest of the wall time runs other goroutines).
	bgDelay, bgCost, kickCost time.Duration
	cpuPerWall                float64
	// The process's CPU time is the loop's thread, running on the
	// clock, and the collector's, on other threads, less stalled:
	// throttled is how much of that each inline cycle loses (a cgroup
	// quota's throttling stops every thread).
	throttled, stalled time.Duration
	procs              int           // GOMAXPROCS
	bgDoneAt           time.Duration // a started cycle completes then; 0: none pending
	lastEnd            time.Duration // when the last cycle completed
	peak               uint64        // the most heap objects seen

	// A cycle frees the garbage into free pages that stay resident,
	// and an allocation takes free pages first. pages, if set, keeps
	// the rest of the heap's pages as the runtime does: a release
	// returns the free pages to the OS, and an allocation takes
	// returned ones after the free, each of which the program faults
	// back in at the price fault (faults counts them), then new ones.
	// Without it a release just adds 3 MiB to released.
	pages  bool
	faults int
}

// newWorld starts with the heap goal out of reach, as with GOGC=off, so
// that only the tests about the pacer's runway meet it.
func newWorld() *world {
	w := &world{gogc: 100, gcCost: 100 * time.Microsecond, procs: 2}
	w.r.goal = math.MaxUint64
	return w
}

// farLimit puts the heap goal far out of reach, but not out of existence:
// GOGC=off with a memory limit of 1 TiB. The runtime collects near the
// limit, so the stepper's pile has no bound of its own (offBound), and
// only the stepper's prices and its CPU cap decide.
func (w *world) farLimit() {
	w.r.goal = 1 << 40
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
	w.lastEnd = w.t
	if w.r.objects > w.liveAfter {
		w.r.free += w.r.objects - w.liveAfter // freed, not returned to the OS
	}
	w.r.live = w.liveAfter
	w.r.objects = w.liveAfter
	w.goal()
}

func (w *world) env() env {
	return env{
		now:      func() time.Duration { return w.t },
		cycleEnd: func() time.Duration { return w.lastEnd },
		read: func(r *reading) {
			w.reads++
			w.settle()
			*r = w.r
			r.gogc = w.gogc
			if w.pages {
				r.total = r.objects + r.free + r.released + 4*mib
			} else if r.total == 0 {
				r.total = r.objects + r.free + r.released + 4*mib // stacks, metadata, ...
			}
		},
		gc: func(_ time.Duration, g markGoal) window {
			w.gcs++
			w.inlineMark = g
			var win window
			win.before = w.setGOGC(nudgedGOGC)
			if w.inWindow != nil {
				w.inWindow()
			}
			win.close(w.setGOGC(-1), nudgedGOGC)
			w.t += w.gcCost
			w.stalled += w.throttled
			w.gcCPU += time.Duration(cmp.Or(w.cpuPerWall, 1) * float64(w.gcCost))
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
		start: func(_ time.Duration, g markGoal) (window, bool) {
			w.mark = g
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
			w.t += w.kickCost
			switch {
			case w.quickBG:
				w.collected()
			case w.bgDelay > 0:
				w.bgDoneAt = w.t + w.bgDelay
			}
			return win, true
		},
		gcCPU:        func() time.Duration { return w.gcCPU },
		procCPU:      func() (time.Duration, bool) { return w.t + w.gcCPU - w.stalled, true },
		setGCPercent: w.setGOGC,
		release: func() {
			w.releases++
			w.giveBack()
		},
		trim: func() {
			w.trims++
			w.giveBack()
		},
		faultProbe: func() time.Duration { return w.fault },
		procs:      func() int { return w.procs },
		settle:     func(bool) bool { return false },
		standing:   func() bool { return false },
		marking:    func() bool { return false },
		overdue:    func(cycles uint64) bool { return w.overdue && w.bgDoneAt != 0 && w.r.cycles == cycles },
		awaitMark: func(budget time.Duration, cycles uint64) time.Duration {
			w.awaits++
			start, end := w.t, w.t+budget
			if w.bgDoneAt != 0 {
				end = min(end, w.bgDoneAt)
			}
			w.t = end
			w.settle()
			return w.t - start
		},
		spawn: func(f func()) {
			w.spawnCount++
			w.spawned = append(w.spawned, f)
		},
	}
}

// giveBack is a release's work, and a trim's: it takes releaseCost, runs
// a cycle and returns the free pages to the OS (without pages, 3 MiB).
func (w *world) giveBack() {
	w.t += time.Duration(w.releaseCost)
	w.collected()
	if w.pages {
		w.r.released += w.r.free
	} else {
		w.r.released += 3 << 20
	}
	w.r.free = 0
}

// alloc pretends the program allocated n bytes, in a microsecond. With a pacer, the heap
// reaching its goal runs the runtime's own cycle.
func (w *world) alloc(n uint64) {
	if n == 0 {
		return
	}
	w.t += time.Microsecond // allocating takes time: garbage is held from here
	free := min(n, w.r.free)
	w.r.free -= free
	if w.pages {
		back := min(n-free, w.r.released)
		w.r.released -= back
		faults := int((back + pageSize - 1) / pageSize)
		w.faults += faults
		w.t += time.Duration(faults) * w.fault
	}
	w.r.allocs += n
	w.r.objects += n
	w.peak = max(w.peak, w.r.objects)
	w.settle()
	if w.pacer > 0 && w.r.objects >= w.r.goal {
		w.collected()
		w.pacerCycles++
	}
}

// setPacer gives the world a pacer at GOGC gogc: the heap goal follows the
// live heap as the runtime's does (at least 4 MiB at GOGC=100).
func (w *world) setPacer(gogc int) {
	w.pacer = gogc
	w.goal()
}

// goal sets the heap goal from the live heap, if the world has a pacer.
func (w *world) goal() {
	if w.pacer > 0 {
		w.r.goal = max(w.r.live+w.r.live*uint64(w.pacer)/100, 4*mib*uint64(w.pacer)/100)
	}
}

// settle completes a started cycle whose time has come, as the runtime
// would, charging its collector CPU.
func (w *world) settle() {
	if w.bgDoneAt != 0 && w.t >= w.bgDoneAt {
		done := w.bgDoneAt
		w.bgDoneAt = 0
		w.gcCPU += w.bgCost
		w.collected()
		w.lastEnd = done
	}
}

// run runs the goroutines the Runtime started.
func (w *world) run() {
	for len(w.spawned) > 0 {
		f := w.spawned[0]
		w.spawned = w.spawned[1:]
		f()
	}
}
