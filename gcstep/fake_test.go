package gcstep

import (
	"math"
	"math/rand/v2"
	"time"
)

// A profile is what a machine charges: the process's CPU and the wall
// time a loop waits for one cycle of ours, and what a release costs.
// noise spreads each cycle's price uniformly by up to that share either
// way.
type profile struct {
	name      string
	cycleWall time.Duration
	cycleCPU  time.Duration
	release   time.Duration
	noise     float64
	procs     int // GOMAXPROCS; 0: 2
}

// The machines the policy is judged on. Where each number comes from:
//   - bare metal: a 2-P cycle of an almost empty heap at 0.1 ms of wall
//     and CPU (the runtime's own STW phases take tens of microseconds on
//     a desktop CPU; wakes cost microseconds, not 0.2 ms);
//   - previous: this project's first VM, where a 2-P cycle took
//     0.12-0.13 ms (DESIGN.md, "Priced, not gated");
//   - today: this VM, both CPUs, as the demo's loop sees a cycle: 0.28 ms
//     of wall (bench/machine) and about 0.8 ms of the process's CPU
//     (getrusage over inline cycles of the urandom stream: 66-74 ms for
//     86 cycles);
//   - one P: this VM with GOMAXPROCS=1, 0.15 ms of wall and CPU (the
//     same measurement: 12-33 ms for 89 cycles);
//   - contended: a core busy with another process, a cycle 5-10 times
//     dearer and noisy (1.5 ms of wall, 2 ms of CPU, ±60 %).
var profiles = []profile{
	{name: "bare metal", cycleWall: 100 * us, cycleCPU: 100 * us, release: 1 * ms},
	{name: "previous", cycleWall: 130 * us, cycleCPU: 250 * us, release: 2 * ms},
	{name: "today", cycleWall: 280 * us, cycleCPU: 800 * us, release: 2 * ms, noise: 0.3},
	{name: "one P", cycleWall: 150 * us, cycleCPU: 150 * us, release: 2 * ms, noise: 0.3, procs: 1},
	{name: "contended", cycleWall: 1500 * us, cycleCPU: 2 * ms, release: 6 * ms, noise: 0.6},
}

// fake is a process in a fake environment: a clock, a CPU counter, a
// heap with a pacer, and a machine's prices. It is driven by the test,
// one goroutine, and never sleeps.
type fake struct {
	p   profile
	rng *rand.Rand

	now, cpu time.Duration
	allocs   uint64 // cumulative
	base     uint64 // allocs at the end of the last cycle
	cycles   uint64
	live     uint64
	gogc     int
	limit    int64
	released uint64
	peak     uint64 // the highest heap (live + garbage) seen
	gcCPU    time.Duration
	lastEnd  time.Duration
	other    float64 // CPU of the program's other goroutines a second
	heapSum  float64 // the heap times how long it was held, summed

	procs                 int
	ours, pacer, releases int
	spawned               []func()
}

func newFake(p profile) *fake {
	if p.procs == 0 {
		p.procs = 2
	}
	return &fake{now: time.Second, p: p, rng: rand.New(rand.NewPCG(1, 2)), gogc: 100, limit: noLimit, live: 256 << 10, procs: p.procs, cycles: 1}
}

func (f *fake) env() env {
	return env{
		now:  func() time.Duration { return f.now },
		read: f.read,
		cpu:  func() time.Duration { return f.cpu },
		collect: func(wait time.Duration) (bool, bool) {
			f.ours++
			w, c := f.price(f.p.cycleWall), f.price(f.p.cycleCPU)
			at := f.now
			if wait > 0 {
				f.now += min(w, wait)
			}
			f.cpu += c
			f.gcCPU += c
			f.cycle()
			f.lastEnd = at + w
			return true, wait >= w
		},
		gcCPU:   func() time.Duration { return f.gcCPU },
		lastEnd: func() time.Duration { return f.lastEnd },
		release: func() {
			f.now += f.p.release
			f.cpu += f.p.release
			f.cycle()
			f.released += 1 << 20
			f.releases++
		},
		spawn:        func(fn func()) { f.spawned = append(f.spawned, fn) },
		procs:        func() int { return f.procs },
		setGCPercent: func(p int) int { old := f.gogc; f.gogc = p; return old },
		setMemoryLimit: func(l int64) int64 {
			old := f.limit
			if l >= 0 {
				f.limit = l
			}
			return old
		},
	}
}

func (f *fake) price(d time.Duration) time.Duration {
	if f.p.noise == 0 {
		return d
	}
	return time.Duration(float64(d) * (1 + f.p.noise*(2*f.rng.Float64()-1)))
}

// goal is the pacer's heap goal: GOGC's, and the memory limit's.
func (f *fake) goal() uint64 {
	g := uint64(math.MaxUint64 / 2)
	if f.gogc >= 0 {
		g = max(f.live+f.live*uint64(f.gogc)/100, heapMinimum*uint64(f.gogc)/100)
	}
	if f.limit != noLimit {
		g = min(g, uint64(f.limit)-otherMemory-1<<20)
	}
	return g
}

// otherMemory is what the fake runtime maps besides the heap.
const otherMemory = 2 << 20

func (f *fake) read(r *reading) {
	h := f.live + f.allocs - f.base
	*r = reading{allocs: f.allocs, cycles: f.cycles, live: f.live, goal: f.goal(), gogc: f.gogc, limit: f.limit,
		mapped: h + otherMemory, heap: h, objects: h, released: f.released}
}

func (f *fake) cycle() {
	f.cycles++
	f.base = f.allocs
}

// alloc allocates n bytes; the pacer collects when the heap reaches its
// goal, at the price of a background cycle (its CPU; no wall for the
// loop).
func (f *fake) alloc(n uint64) {
	f.allocs += n
	h := f.live + f.allocs - f.base
	f.peak = max(f.peak, h)
	if h >= f.goal() {
		c := f.price(f.p.cycleCPU)
		f.cpu += c
		f.gcCPU += c
		f.lastEnd = f.now
		f.pacer++
		f.cycle()
	}
}

// run does the releases spawned so far.
func (f *fake) run() {
	for len(f.spawned) > 0 {
		fn := f.spawned[0]
		f.spawned = f.spawned[1:]
		fn()
	}
}
