package gcstep

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// reading is what the Runtime needs to know about the heap at one
// moment, all of it from runtime/metrics: no stop-the-world.
type reading struct {
	allocs   uint64 // /gc/heap/allocs:bytes, cumulative
	cycles   uint64 // /gc/cycles/total:gc-cycles, completed
	live     uint64 // /gc/heap/live:bytes, marked live by the last cycle
	goal     uint64 // /gc/heap/goal:bytes
	gogc     int    // /gc/gogc:percent, -1 for off
	limit    int64  // /gc/gomemlimit:bytes, math.MaxInt64 for none
	scanned  uint64 // /gc/scan/stack:bytes + /gc/scan/globals:bytes
	mapped   uint64 // /memory/classes/total:bytes less /memory/classes/heap/released:bytes
	heap     uint64 // heap objects, unused and free bytes: the heap's share of mapped
	objects  uint64 // /memory/classes/heap/objects:bytes: live objects and garbage not yet swept
	free     uint64 // /memory/classes/heap/free:bytes: free pages not returned to the OS
	released uint64 // /memory/classes/heap/released:bytes
	// scavenged is the runtime scavenger's CPU time so far
	// (/cpu/classes/scavenge/total), and gc the collector's
	// (/cpu/classes/gc/total), which counts a cycle once it ended.
	scavenged, gc time.Duration
}

// env is the seam between the Runtime and the world. NewRuntime fills it
// with the real runtime; the tests with a fake, so every rule can be
// checked without timing anything.
type env struct {
	now  func() time.Duration // monotonic time since an arbitrary origin
	read func(*reading)
	cpu  func() time.Duration // the CPU time the whole process has used so far
	// collect starts a cycle and, with wait > 0, sleeps until the last
	// cycle's sweep and then its mark phase end, or wait has passed. It
	// reports whether a cycle started and whether its mark phase ended.
	collect func(wait time.Duration) (started, ended bool)
	// gcCPU is the collector's CPU time so far (/cpu/classes/gc/total:
	// its workers, assists, and pauses times GOMAXPROCS), counting a
	// cycle once it has ended.
	gcCPU   func() time.Duration
	lastEnd func() time.Duration // when the last cycle's mark ended, on now's clock
	release func()               // collect, and return the free memory to the OS
	spawn   func(f func())       // run f on a goroutine of its own
	procs   func() int           // GOMAXPROCS
	// pagePrices is what returning one page to the OS and faulting it
	// back cost the process, measured once.
	pagePrices     func() (fault, ret time.Duration)
	setGCPercent   func(int) int     // runtime/debug's
	setMemoryLimit func(int64) int64 // runtime/debug's
}

func realEnv() env {
	m := newMetricsReader()
	k := &kicker{m: newMetricsReader()}
	origin := time.Now()
	gc := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	var gs debug.GCStats // its slices are kept: a read allocates once
	return env{
		gcCPU: func() time.Duration {
			metrics.Read(gc)
			return time.Duration(gc[0].Value.Float64() * float64(time.Second))
		},
		lastEnd: func() time.Duration {
			debug.ReadGCStats(&gs)
			return gs.LastGC.Sub(origin)
		},
		now:            func() time.Duration { return time.Since(origin) },
		read:           m.read,
		cpu:            processCPU,
		collect:        k.collect,
		release:        debug.FreeOSMemory, // one cycle: see core.release
		spawn:          func(f func()) { go f() },
		procs:          func() int { return runtime.GOMAXPROCS(0) },
		pagePrices:     pagePrices,
		setGCPercent:   debug.SetGCPercent,
		setMemoryLimit: debug.SetMemoryLimit,
	}
}

// pagePrices is measurePages's, once a process.
var pagePrices = sync.OnceValues(measurePages)

// metricsReader reads the samples of a reading into a slice it keeps, so
// a read allocates nothing. Not safe for concurrent use.
type metricsReader struct{ s []metrics.Sample }

var readingNames = [...]string{
	"/gc/heap/allocs:bytes",
	"/gc/cycles/total:gc-cycles",
	"/gc/heap/live:bytes",
	"/gc/heap/goal:bytes",
	"/gc/gogc:percent",
	"/gc/gomemlimit:bytes",
	"/gc/scan/stack:bytes",
	"/gc/scan/globals:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/cpu/classes/scavenge/total:cpu-seconds",
	"/cpu/classes/gc/total:cpu-seconds",
}

func newMetricsReader() *metricsReader {
	s := make([]metrics.Sample, len(readingNames))
	for i, n := range readingNames {
		s[i].Name = n
	}
	return &metricsReader{s: s}
}

func (m *metricsReader) read(r *reading) {
	metrics.Read(m.s)
	u := func(i int) uint64 { return m.s[i].Value.Uint64() }
	r.allocs, r.cycles, r.live, r.goal = u(0), u(1), u(2), u(3)
	r.gogc = int(int64(u(4))) // off reads as -1 in two's complement
	r.limit = int64(u(5))
	r.scanned = u(6) + u(7)
	r.released = u(9)
	r.mapped = u(8) - r.released
	r.objects, r.free = u(10), u(12)
	r.heap = r.objects + u(11) + r.free
	sec := func(i int) time.Duration { return time.Duration(m.s[i].Value.Float64() * float64(time.Second)) }
	r.scavenged, r.gc = sec(13), sec(14)
}

func (m *metricsReader) cycles() uint64 {
	metrics.Read(m.s[1:2])
	return m.s[1].Value.Uint64()
}

// A kicker starts cycles without runtime.GC (doc/policy.md says why): GOGC
// goes to 1 % for the moment of one allocation too large for the size
// classes (those check the trigger), which starts the cycle, and comes
// straight back; the caller sleeps while the last cycle's sweep ends and
// while the new one marks, leaving its P to the background sweeper and
// the collector's workers. A call to debug.SetGCPercent by the program
// inside that moment returns 1; its own value stays (see restoreGOGC and
// core.repair).
type kicker struct {
	m   *metricsReader
	buf []byte // the trigger allocation, kept so that it escapes
}

const (
	// kickGOGC is the GOGC of the moment a cycle is started.
	kickGOGC = 1
	// kickSize is the smallest allocation that is not a small object.
	kickSize = 32<<10 + 1
	// markPoll is how long a waiting caller sleeps between looks at the
	// cycle count: parked, its P is free for the collector.
	markPoll = 20 * time.Microsecond
	// sweepSlack is how far above the live heap the goal may be at
	// kickGOGC (1 % of the heap, stacks and globals, with room to spare)
	// before the kicker takes it for the sweep distance.
	sweepSlack = 512 << 10
)

func (k *kicker) collect(wait time.Duration) (started, ended bool) {
	before := k.m.cycles()
	start := time.Now()
	var r reading
	prev := debug.SetGCPercent(kickGOGC)
	k.m.read(&r)
	// While the last cycle's garbage is not all swept the runtime keeps
	// its trigger at least 1 MiB above the heap (its sweep distance), and
	// the allocation would start nothing. The caller sleeps, as for a
	// mark, so that the background sweeper gets its P: with one P it gets
	// none while the loop blocks in a system call, and the garbage grew to
	// twice a cycle's before the sweep was done. Only a sweep that
	// outlasts wait means no cycle now (runtime.GC sweeps on its caller,
	// a span at a time: several times slower).
	for r.goal > r.live+r.live/50+sweepSlack {
		restoreGOGC(prev)
		if time.Since(start) >= wait {
			return false, false
		}
		time.Sleep(markPoll)
		prev = debug.SetGCPercent(kickGOGC)
		k.m.read(&r)
	}
	k.buf = make([]byte, kickSize)
	k.buf = nil
	restoreGOGC(prev)
	for time.Since(start) < wait && k.m.cycles() == before {
		time.Sleep(markPoll)
	}
	return true, k.m.cycles() != before
}

// restoreGOGC puts back prev after the kick, unless the program set one.
func restoreGOGC(prev int) {
	if got := debug.SetGCPercent(prev); got != kickGOGC {
		debug.SetGCPercent(got)
	}
}

// noLimit is the memory limit of a program that set none.
const noLimit = math.MaxInt64
