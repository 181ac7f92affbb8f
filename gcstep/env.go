package gcstep

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// reading is what the policy needs to know about the heap at one moment.
// Every field comes from runtime/metrics; none needs a stop-the-world.
type reading struct {
	allocs   uint64 // /gc/heap/allocs:bytes, cumulative bytes allocated
	cycles   uint64 // /gc/cycles/total:gc-cycles, completed cycles
	live     uint64 // /gc/heap/live:bytes, heap marked live by the last cycle
	goal     uint64 // /gc/heap/goal:bytes, where the runtime starts its own cycle
	released uint64 // /memory/classes/heap/released:bytes, returned to the OS
	// objects is /memory/classes/heap/objects:bytes: live objects, the
	// garbage made since the last cycle, and garbage not yet swept.
	objects uint64
	gogc    int    // /gc/gogc:percent, -1 for off
	total   uint64 // /memory/classes/total:bytes, all the runtime has mapped
	free    uint64 // /memory/classes/heap/free:bytes, free and not yet returned to the OS
}

// A window is what happened to GOGC while a step had it lowered to start
// a cycle (see inliner). The program may call debug.SetGCPercent at any
// moment from another goroutine; a call that lands inside the window
// returns the step's value, not the program's, and a program that saves
// and restores would later put that value back.
type window struct {
	before int  // the program's GOGC when the window opened
	kept   bool // the program set its own GOGC inside the window, and it was kept
	set    int  // if kept: the value the program set
	read   int  // if kept: the value its call returned (the step's, not its own)
}

// env is the seam between the policy and the world: the clock, the heap
// readings and the actions on the collector. NewRuntime fills it with the
// real runtime; the unit tests fill it with fakes, so every rule can be
// checked deterministically and without timing anything.
type env struct {
	now  func() time.Duration // monotonic time since an arbitrary origin
	read func(*reading)       // the heap now
	// gc runs a whole cycle inline (see inliner); one still marking
	// when budget runs out goes on concurrently with the goal g asks
	// for once its allowance is used up (see markGoal).
	gc func(budget time.Duration, g markGoal) window
	// start starts a cycle for the runtime to run concurrently and
	// returns at once; the cycle marks with the heap goal g asks for
	// (see markGoal and inliner.start). started is false if the runtime
	// would not start one now.
	start func(budget time.Duration, g markGoal) (w window, started bool)
	// cycleEnd is when the last completed cycle's mark phase ended, on
	// now's clock (debug.ReadGCStats' LastGC); meaningless before the
	// first cycle.
	cycleEnd func() time.Duration
	// gcCPU is the CPU time the collector has used so far, all of it
	// (see cpuReader).
	gcCPU func() time.Duration
	// procCPU is the CPU time the whole process has used so far, and
	// false where it cannot be read (see Runtime.procSince).
	procCPU func() (time.Duration, bool)
	// setGCPercent is debug.SetGCPercent, used to repair GOGC.
	setGCPercent func(int) int
	release      func() // return memory to the OS (see releaseMemory)
	// trim returns memory to the OS in the middle of activity: one
	// cycle, then the free pages (see Runtime.trimPays).
	trim func()
	// faultProbe measures what faulting a page back in costs after it
	// was returned to the OS (see probeFault).
	faultProbe func() time.Duration
	// spawn runs f on a goroutine of its own: the release, which must
	// not hold the loop. The fake environment runs it when told.
	spawn func(f func())
	// procs is GOMAXPROCS.
	procs func() int
	// settle finishes what a cycle that outlived its step left to do,
	// once the cycle has ended (with force, at once, or for GOGC=off
	// waiting for that end): put back the program's GOGC after a cycle
	// that ran with a stand-in (see inliner). Before that, it gives a
	// started cycle that has used up its allowance the goal it asked
	// for, and reports whether it did (see markGoal).
	settle func(force bool) (goal bool)
	// standing reports whether a cycle's stand-in GOGC is in place: the
	// program's GOGC is off, without a memory limit, and the heap goal
	// read meanwhile is the stand-in's.
	standing func() bool
	// marking reports whether a started cycle's stand-in for a finite
	// GOGC is in place (see inliner.start), or a cycle marking beside
	// the program may yet take one (markGoal.after): settle puts the
	// program's GOGC back once the cycle has ended, and sets the
	// stand-in once the allowance is used up.
	marking func() bool
	// overdue reports whether the cycle that followed completed cycle
	// number cycles still marks past its allowance (markGoal.after), as
	// the last settle found (see inliner.overdue).
	overdue func(cycles uint64) bool
	// awaitMark sleeps while the cycle that followed completed cycle
	// number cycles marks, for at most budget, and returns how long it
	// slept: parked, the loop leaves its P to the collector's workers
	// (see Runtime.awaitMark).
	awaitMark func(budget time.Duration, cycles uint64) time.Duration
}

// realEnv is the environment over the Go runtime.
func realEnv() env {
	m := newMetricsReader()
	in := newInliner()
	origin := time.Now()
	var gs debug.GCStats // its slices are kept, so a read allocates once
	return env{
		now: func() time.Duration { return time.Since(origin) },
		cycleEnd: func() time.Duration {
			debug.ReadGCStats(&gs)
			return gs.LastGC.Sub(origin)
		},
		read: func(r *reading) {
			m.read(r)
			in.programs(r)
		},
		gc:           in.cycle,
		start:        in.start,
		gcCPU:        newCPUReader().read,
		procCPU:      processCPU,
		setGCPercent: debug.SetGCPercent,
		release:      releaseMemory,
		trim:         debug.FreeOSMemory,
		faultProbe:   probeFault,
		spawn:        func(f func()) { go f() },
		procs:        func() int { return runtime.GOMAXPROCS(0) },
		settle:       func(force bool) bool { return in.settle(nil, force) },
		standing:     func() bool { return in.standIn != 0 && in.standInFor < 0 },
		marking:      func() bool { return in.standIn != 0 && in.standInFor >= 0 || in.late.cycles != 0 },
		overdue:      func(cycles uint64) bool { return in.overdue == cycles+1 },
		awaitMark:    in.await,
	}
}

// releaseMemory collects twice and returns the free memory to the OS. One
// cycle is not enough after a burst: what sync.Pool holds (net/http's
// buffered readers and writers, for one) survives a cycle in the pool's
// victim cache, and only the next cycle frees it; debug.FreeOSMemory runs
// that second cycle and then returns the pages.
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// metricsReader reads the nine samples the policy uses into a slice it
// keeps, so a read allocates nothing. metrics.Read costs grow with the
// number and kind of samples asked for (the heap counters need the per-P
// statistics aggregated, once for all of them), so it asks for these and
// nothing else.
// Not safe for concurrent use; Runtime serialises it.
type metricsReader struct {
	s []metrics.Sample
}

func newMetricsReader() *metricsReader {
	return &metricsReader{s: []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/heap/goal:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/gogc:percent"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}}
}

func (m *metricsReader) read(r *reading) {
	metrics.Read(m.s)
	r.allocs = m.s[0].Value.Uint64()
	r.cycles = m.s[1].Value.Uint64()
	r.live = m.s[2].Value.Uint64()
	r.goal = m.s[3].Value.Uint64()
	r.released = m.s[4].Value.Uint64()
	r.objects = m.s[5].Value.Uint64()
	r.gogc = int(int64(m.s[6].Value.Uint64())) // off reads as -1 in two's complement
	r.total = m.s[7].Value.Uint64()
	r.free = m.s[8].Value.Uint64()
}

// cpuReader reads the collector's CPU time, all of it: marking on Ps that
// had nothing else to do is CPU the machine spends too. It is read when a
// cycle starts and ends, not at every step.
type cpuReader struct {
	s []metrics.Sample
}

func newCPUReader() *cpuReader {
	return &cpuReader{s: []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}}
}

func (c *cpuReader) read() time.Duration {
	metrics.Read(c.s)
	return time.Duration(c.s[0].Value.Float64() * float64(time.Second))
}

// inliner runs one whole cycle for a step, inline: it starts the cycle and
// sleeps until its mark phase has ended, for at most the step's budget. It
// does not wait for the sweep: the garbage the cycle found is swept by the
// runtime's background sweeper, or by the next allocations before they
// take new memory, as after any automatic cycle.
//
// Why not runtime.GC, which does the same and then sweeps: after mark
// termination it sweeps what is left and then spins, yielding with
// Gosched, until the goroutine that finished the mark phase has flushed
// every P's caches. That goroutine waits for every P to reach a safe
// point, and a P whose goroutine is in a system call is handed to a
// thread the kernel must first schedule, while the spinning caller keeps
// a core busy. On the urandom demo (2 cores, the writer in read(2) most of
// the time) that wait made a quarter of the cycles take 1.5-6 ms instead
// of 0.3 ms, and with any runtime timer pending (a ticker elsewhere in the
// program) the cycles took 2.3 times as long on average: 186 ms of a
// 0.6 s run, against 60 ms as inliner runs them (53 ms without the
// ticker).
//
// How: GOGC is set to 1 %, so that the heap is over the trigger; an
// allocation too large for the size classes (those check the trigger
// every time) starts the cycle; GOGC is restored at once, unless the
// program set its own meanwhile (a started cycle gets a stand-in instead:
// see start); then the step sleeps in short steps
// (markPoll) until the cycle count moves. It used to wait in
// debug.SetGCPercent(-1), which returns when the mark phase ends, but
// a cycle that ends with GOGC off ends with an unbounded heap goal, and
// the runtime then turns on huge pages for its heap metadata for good
// (past a 1 GiB goal): 2 MiB more resident memory for a process that
// collects to save memory. Sleeping instead also frees the loop's P for
// the collector's idle worker: on the urandom demo with GOMAXPROCS=1,
// 0.28 ms a cycle against 0.51 ms (see doc/policy.md).
//
// While the previous cycle's garbage is not all swept, the runtime keeps
// its trigger at least 1 MiB above the heap in use (its minimum sweep
// distance), so the allocation would start nothing. The step sees that in
// the heap goal, which then exceeds the live heap by more than GOGC=1
// allows, and yields the processor (runtime.Gosched) so that the
// background sweeper, runnable since that cycle ended, can finish; then it
// looks again, for at most half the step's budget. On the urandom demo the
// sweep was still going before 73-78 of 184 cycles; giving those to
// runtime.GC took the cycles' total from 53 ms to 91 ms. If no cycle
// started all the same (a runtime that paces its trigger differently),
// runtime.GC runs, so a step that decided to collect always collects.
//
// A program at GOGC=off (with no memory limit) would have its GOGC back
// before the cycle ends, and so the cycle would end with an unbounded
// heap goal and turn on huge pages for the heap metadata, as above: 2 MiB
// more resident memory in about one run in three here. So for such a
// program the step restores a stand-in instead (offStandIn: GOGC=100,
// whose goal is below the runtime's 1 GiB and near enough the heap to
// bound it while the stand-in is in place), and the program's GOGC once
// the cycle has ended. The cycle count moves before the runtime looks at
// the goal, and the look comes after the world restarts; it is over when
// the runtime lets the world be stopped again, so the step reads the
// memory statistics (a stop-the-world, a few tens of microseconds) before
// it restores GOGC=off. A started cycle, or
// an inline one still marking when the budget runs out, keeps the
// stand-in until a later step sees it ended (settle), or the Runtime is
// closed.
type inliner struct {
	buf []byte           // the trigger allocation, kept here so that it escapes to the heap
	s   []metrics.Sample // completed cycles, heap goal, live heap
	m   []metrics.Sample // what markGOGC needs, read once per started cycle
	ms  runtime.MemStats // read to wait for the end of a cycle under GOGC=off

	// A stand-in a cycle left in place because it outlived its step:
	// the GOGC it set (0: none), the cycle count before it, the
	// program's GOGC it stands in for (-1: off) and, for a finite one,
	// the program's heap goal, which readings report meanwhile.
	standIn       int
	standInCycles uint64
	standInFor    int
	standInGoal   uint64

	// A started cycle that takes its goal once the program has
	// allocated its allowance (markGoal.after) during its mark.
	late lateGoal
	// overdue is the cycle count, plus one, before the last cycle that
	// used up its allowance while it marked (0: none did): the cycle
	// that followed that count is past its allowance while the count
	// has not moved.
	overdue uint64
}

// A markGoal is the heap goal a started cycle marks with. The runtime
// paces its assists by the goal: the program's allocations during the
// mark help mark in proportion to how near the heap comes to it. At the
// program's own goal (GOGC=100: twice the live heap, at least 4 MiB) a
// small heap meets no assists at all, and a cycle that marks for
// milliseconds on a share of a P beside an allocating program leaves
// everything allocated meanwhile for the next cycle. With slack > 0 the
// cycle marks with a stand-in GOGC whose goal is slack above the heap
// (markGOGC), where the program's own goal is further: from the start
// if after is 0, and otherwise once the program has allocated after
// bytes since the start, from the first settle that sees it. Assists
// then bound what the rest of the mark leaves behind to about slack,
// and a mark that ends within its allowance meets none.
type markGoal struct {
	slack uint64 // the goal above the heap; 0: the program's goal throughout
	after uint64 // the program's allocations the mark lets pass before the goal is set
}

// A lateGoal is a started cycle that sets its goal once its allowance is
// used up (markGoal.after): the cycle count before it (0: none armed,
// else that count plus one), the heap's objects at its start, the goal's
// slack, the program's GOGC and the program's heap goal, which readings
// report meanwhile. A watch sets no goal, only records the cycle as
// overdue: a program at GOGC=off, whose cycles mark with the stand-in
// they end with (see offStandIn).
type lateGoal struct {
	cycles  uint64
	objects uint64
	after   uint64
	slack   uint64
	gogc    int
	goal    uint64
	watch   bool
}

func newInliner() *inliner {
	return &inliner{s: []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/gc/heap/goal:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}, m: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/scan/stack:bytes"},
		{Name: "/gc/scan/globals:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
	}}
}

const (
	// kickSize is the smallest allocation that is not a small object.
	kickSize = 32<<10 + 1
	// sweepSlack is how far above the live heap the goal may be at
	// GOGC=1 (1 % of the heap and of the stacks and globals, with room
	// to spare) before the step takes it for the sweep distance.
	sweepSlack = 512 << 10
)

// cycle runs the cycle. It yields to the background sweeper for at most
// half of budget.
func (in *inliner) cycle(budget time.Duration, g markGoal) window {
	metrics.Read(in.s)
	before := in.s[0].Value.Uint64()
	w, started := in.kick(budget, true, g)
	if !started {
		metrics.Read(in.s)
		if in.s[0].Value.Uint64() == before {
			if w.needsStandIn() {
				if got := debug.SetGCPercent(offStandIn); got != w.before {
					w.close(got, w.before) // the program set its own meanwhile
					debug.SetGCPercent(got)
				} else {
					in.standIn, in.standInCycles, in.standInFor = offStandIn, before, -1
				}
			}
			runtime.GC()
			in.settle(&w, false)
		}
	}
	return w
}

// start starts a cycle and returns as soon as it runs. The cycle marks
// concurrently with the goal g asks for (see markGoal): a stand-in GOGC
// whose goal is g.slack above the heap, from the start or once the
// program has allocated g.after during the mark, and the program's GOGC
// is back once the cycle has ended (settle). Holding GOGC at 1 % for the
// whole cycle, as an earlier version did, made every allocation during
// the mark phase pay assists as if the heap were far over its goal. For
// a program at GOGC=off the stand-in is offStandIn until the cycle has
// ended (see inliner), whatever g asks. It yields to
// the sweeper for at most half of budget and reports false if no cycle
// could start.
func (in *inliner) start(budget time.Duration, g markGoal) (window, bool) {
	return in.kick(budget, false, g)
}

// kick opens the window: GOGC to 1 %, the trigger allocation, GOGC
// restored (or a stand-in set: offStandIn for a program at GOGC=off, and
// without wait g's goal if it has no allowance; one with an allowance is
// armed for settle to set, with wait only if the cycle still marks when
// the wait ends). With wait it then sleeps in
// steps of markPoll until the cycle count moves (the mark phase is over)
// or budget has passed since it began; a cycle still marking then goes on
// concurrently. It reports false only if no cycle could start (see
// inliner).
func (in *inliner) kick(budget time.Duration, wait bool, g markGoal) (w window, started bool) {
	// A stand-in left by an earlier cycle is not the program's GOGC; a
	// finite one goes back even if that cycle still marks, so that the
	// window opens on the program's own value. A goal armed for an
	// earlier cycle is that cycle's.
	in.settle(nil, in.standIn != 0 && in.standInFor >= 0)
	in.late = lateGoal{}
	start := time.Now()
	metrics.Read(in.s)
	before := in.s[0].Value.Uint64()
	goal := in.s[1].Value.Uint64() // at the program's GOGC
	standIn := 0                   // the GOGC the cycle marks and ends with, if not the program's
	for {
		prev := debug.SetGCPercent(nudgedGOGC)
		if !w.kept {
			w.before = prev
		}
		metrics.Read(in.s)
		goal, live := in.s[1].Value.Uint64(), in.s[2].Value.Uint64()
		if goal > live+live/50+sweepSlack {
			w.close(debug.SetGCPercent(w.before), nudgedGOGC)
			if time.Since(start) >= budget/2 {
				return w, false
			}
			runtime.Gosched()
			continue
		}
		in.buf = make([]byte, kickSize)
		in.buf = nil
		restore := w.before
		switch {
		case w.needsStandIn():
			standIn = offStandIn
			restore = standIn
		case !wait && g.slack > 0 && g.after == 0 && w.before > nudgedGOGC:
			metrics.Read(in.m)
			if p := markGOGC(in.m, g.slack); p < w.before {
				standIn = p
				restore = standIn
			}
		}
		w.close(debug.SetGCPercent(restore), nudgedGOGC)
		break
	}
	if w.kept {
		debug.SetGCPercent(w.set) // the program's own value stays
		standIn = 0
	}
	marking := true
	if left := budget - time.Since(start); wait && left > 0 {
		in.await(left, before)
		marking = in.s[0].Value.Uint64() == before
	}
	// A started cycle, or an inline one that outlived its budget, goes on
	// beside the program: armed with an allowance, it takes its goal
	// once the program has allocated that much.
	if marking && g.slack > 0 && g.after > 0 && (standIn == 0 && w.before > nudgedGOGC || standIn == offStandIn) {
		// A program at GOGC=off gets a watch, no goal: a goal near the
		// heap would start the runtime's next cycle at once, and
		// putting off back while that one marks ends it with an
		// unbounded goal, which turns on huge pages for the heap
		// metadata (see offStandIn).
		metrics.Read(in.m)
		in.late = lateGoal{cycles: before + 1, objects: in.m[3].Value.Uint64(), after: g.after, slack: g.slack, gogc: w.before, goal: goal, watch: standIn == offStandIn}
	}
	if standIn != 0 {
		// The program's GOGC goes back now if the cycle has ended,
		// else at a later look.
		in.standIn, in.standInCycles, in.standInFor, in.standInGoal = standIn, before, w.before, goal
		in.settle(&w, false)
	}
	return w, true
}

// settle sets the goal of a started cycle that has used up its
// allowance (lateLook), and reports whether it did. It puts the
// program's GOGC back after a cycle that ran with a stand-in, once the
// cycle has ended. With force (Close) a finite GOGC goes back at once,
// and GOGC=off once the cycle has ended, waiting for that for at most
// backgroundTimeout. A value the program set meanwhile stays, and is
// recorded in w if the step that set the stand-in is still open.
func (in *inliner) settle(w *window, force bool) (goal bool) {
	if in.late.cycles != 0 {
		goal = in.lateLook(force)
	}
	if in.standIn == 0 {
		return goal
	}
	metrics.Read(in.s)
	if w == nil {
		w = &window{before: in.standInFor}
	}
	if in.standInFor >= 0 {
		// A finite goal: no huge pages to fear, the cycle's end is
		// enough (the next trigger is computed again from the
		// program's GOGC).
		if in.s[0].Value.Uint64() != in.standInCycles || force {
			in.restore(w, in.standIn)
			in.standIn = 0
		}
		return goal
	}
	if force {
		// Closing: wait for the cycle to end, as long as a started
		// cycle is waited for (backgroundTimeout).
		if in.s[0].Value.Uint64() == in.standInCycles {
			in.await(backgroundTimeout, in.standInCycles)
		}
	}
	if in.s[0].Value.Uint64() != in.standInCycles {
		runtime.ReadMemStats(&in.ms) // waits for the cycle's end
	} else if !force {
		return goal // still marking
	}
	in.restore(w, in.standIn)
	in.standIn = 0
	return goal
}

// lateLook sets the goal of a started cycle armed with an allowance
// (markGoal.after) once the program has allocated that much since the
// cycle started, records the cycle as overdue, and reports whether it
// set the goal. It disarms once the cycle has ended, with force, once
// the allowance is used up, and sets no goal for a watch, where the
// program's goal is already as near, or where the program has set its
// own GOGC.
func (in *inliner) lateLook(force bool) bool {
	l := in.late
	metrics.Read(in.s)
	if force || in.s[0].Value.Uint64() != l.cycles-1 {
		in.late = lateGoal{} // the cycle has ended
		return false
	}
	metrics.Read(in.m)
	if in.m[3].Value.Uint64() < l.objects+l.after {
		return false
	}
	in.late = lateGoal{}
	in.overdue = l.cycles
	if l.watch {
		return false
	}
	p := markGOGC(in.m, l.slack)
	if p >= l.gogc {
		return false // the program's goal is as near
	}
	if got := debug.SetGCPercent(p); got != l.gogc {
		debug.SetGCPercent(got) // the program set its own meanwhile: it stays
		return false
	}
	in.standIn, in.standInCycles, in.standInFor, in.standInGoal = p, l.cycles-1, l.gogc, l.goal
	return true
}

// await sleeps in steps of markPoll while the cycle that followed
// completed cycle number cycles marks, for at most budget, and returns
// how long it slept; in.s holds its last reading. Steps (awaitMark),
// inline cycles (kick) and Close (settle) wait with it.
func (in *inliner) await(budget time.Duration, cycles uint64) time.Duration {
	start := time.Now()
	for {
		time.Sleep(markPoll)
		metrics.Read(in.s)
		if d := time.Since(start); in.s[0].Value.Uint64() != cycles || d >= budget {
			return d
		}
	}
}

// restore puts the program's GOGC (w.before) back after a cycle that ran
// with standIn, keeping a value the program set meanwhile.
func (in *inliner) restore(w *window, standIn int) {
	if got := debug.SetGCPercent(w.before); got != standIn {
		w.close(got, standIn)
		debug.SetGCPercent(got) // the program's own value stays
	}
}

// offStandIn is the GOGC a cycle of a program at GOGC=off ends with:
// 100, the runtime's default, whose heap goal (twice the live heap, at
// least 4 MiB) is under the 1 GiB past which the runtime turns on huge
// pages for its heap metadata (runtime/mgc.go,
// minHeapForMetadataHugePages) until the live heap passes 512 MiB, where
// the runtime makes that choice at GOGC=100 too. A goal near the heap
// also bounds it while the stand-in is in place: the sweep is paced to
// it, a mark phase that stalls meets assists, and a heap that reaches
// the trigger before GOGC=off is back gets a cycle of the runtime's.
// A goal far above the heap (about 256 MiB, as the stand-in first had)
// left all that unbounded: on the urandom workload with both CPUs under
// GOGC=off, with Busy starting cycles in busy stretches, peaks of
// 11.5-18.0 MiB against 11.0-12.1 with this one (five runs each).
const offStandIn = 100

// programs makes a reading taken while a cycle marks with a stand-in for a
// finite GOGC report the program's GOGC and heap goal, which the policy
// prices the pacer by; the stand-in's goal is the cycle's alone.
func (in *inliner) programs(r *reading) {
	if in.standIn != 0 && in.standInFor > 0 {
		r.gogc, r.goal = in.standInFor, in.standInGoal
	}
}

// markGOGC is the GOGC whose heap goal is slack above the heap now (the
// objects, as read into inliner.m): the runtime's goal at GOGC g is the live heap
// plus g % of it and of the stacks and globals scanned, and at least
// g % of 4 MiB (runtime/mgcpacer.go: gcPercentHeapGoal, heapMinimum), so
// the smaller of the two solutions is the g whose goal is the target.
// Never below 2, one above the GOGC that starts a cycle.
func markGOGC(s []metrics.Sample, slack uint64) int {
	live := float64(s[0].Value.Uint64())
	scanned := live + float64(s[1].Value.Uint64()+s[2].Value.Uint64())
	target := float64(s[3].Value.Uint64() + slack)
	byMinimum := 100 * target / heapMinimum
	byLive := math.Inf(1)
	if scanned > 0 {
		byLive = 100 * (target - live) / scanned
	}
	return max(int(math.Ceil(min(byMinimum, byLive))), nudgedGOGC+1)
}

// heapMinimum is the runtime's smallest heap goal at GOGC=100
// (runtime/mgcpacer.go, defaultHeapMinimum).
const heapMinimum = 4 << 20

// needsStandIn reports whether a cycle whose window opened on w.before
// must end with offStandIn: the program is at GOGC=off with no memory
// limit, and did not set its own GOGC inside the window.
func (w window) needsStandIn() bool {
	return w.before < 0 && !w.kept && noMemoryLimit()
}

// noMemoryLimit reports whether the program runs without a memory limit,
// where GOGC=off means a heap goal without bound.
func noMemoryLimit() bool {
	return debug.SetMemoryLimit(-1) == math.MaxInt64
}

// markPoll is how long an inline cycle sleeps between looks at the cycle
// count: parked, the loop's P is free for the collector's idle worker.
const markPoll = 20 * time.Microsecond
