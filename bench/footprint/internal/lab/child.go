package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/internal/rss"
)

// warmUp allocates mib MiB in 64 KiB buffers and writes to every page
// of each, keeping the last 32 live (ChildSpec.WarmupMiB), and drops
// them all. Written: fresh pages from the OS are not zeroed by the
// runtime, so a buffer touched at one byte would be resident at one page.
func warmUp(mib int) {
	var live [][]byte
	for i := range mib * 16 {
		b := make([]byte, 64<<10)
		for j := 0; j < len(b); j += 4096 {
			b[j] = byte(i) // every page touched, as data loaded is
		}
		if len(live) == 32 {
			live = live[1:]
		}
		live = append(live, b)
	}
	runtime.KeepAlive(live)
}

// A sample is one reading of the process's memory during a run.
type Sample struct {
	T    float64 `json:"t"`    // seconds since the workload started
	RSS  uint64  `json:"rss"`  // resident set size, bytes
	Heap uint64  `json:"heap"` // heap objects, live and not yet swept, bytes
	Gap  bool    `json:"gap,omitempty"`
}

// Percentiles summarises latencies, in nanoseconds, by the nearest-rank
// method: the p-th percentile of n values is the ceil(p/100·n)-th smallest,
// always one of the values measured. With fewer than 1000 values p99.9 is
// the maximum, and with fewer than 100 so is p99.
type Percentiles struct {
	N    int   `json:"n"`
	P50  int64 `json:"p50_ns"`
	P90  int64 `json:"p90_ns"`
	P99  int64 `json:"p99_ns"`
	P999 int64 `json:"p999_ns"`
	Max  int64 `json:"max_ns"`
}

func percentilesOf(d []time.Duration) *Percentiles {
	if len(d) == 0 {
		return nil
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return &Percentiles{N: len(s), P50: nearestRank(s, 500), P90: nearestRank(s, 900),
		P99: nearestRank(s, 990), P999: nearestRank(s, 999), Max: int64(s[len(s)-1])}
}

// nearestRank returns the perMille/10-th percentile of the sorted s.
func nearestRank(s []time.Duration, perMille int) int64 {
	rank := (perMille*len(s) + 999) / 1000 // ceil(perMille/1000 · n), in integers
	return int64(s[max(rank, 1)-1])
}

// RunResult is one child's report, and one entry of results.json.
//
// Bytes counts what the workload moved: bytes read (urandom), bytes the
// server allocated for requests (bursty), payload bytes replaced (bigheap).
type RunResult struct {
	Workload string    `json:"workload"`
	Stepping string    `json:"stepping"`
	GC       GCSetting `json:"gc"`
	Round    int       `json:"round"`

	OK    bool   `json:"ok"`
	Check string `json:"check"`
	Error string `json:"error,omitempty"`

	Bytes int64 `json:"bytes"`
	// PeakRSS is the highest of the kernel's high-water mark (VmHWM)
	// and the RSS samples: see peakOf.
	PeakRSS      uint64  `json:"peak_rss_bytes"`
	HWM          uint64  `json:"vmhwm_bytes,omitempty"`   // VmHWM alone
	GapRSS       uint64  `json:"gap_rss_bytes,omitempty"` // median RSS during idle gaps (bursty)
	Wall         float64 `json:"wall_seconds"`
	CPUUser      float64 `json:"cpu_user_seconds"`
	CPUSys       float64 `json:"cpu_sys_seconds"`
	GCCycles     uint64  `json:"gc_cycles"`
	IdleSteps    uint64  `json:"idle_steps"`
	IdleStepTime float64 `json:"idle_step_seconds"`
	Syscalls     uint64  `json:"poller_syscalls"`
	// Blocked is the time the loop spent blocked in the kernel, waiting
	// for work: its idle time, in seconds.
	Blocked float64 `json:"blocked_seconds,omitempty"`

	// Requests counts the requests served and HandlerSyscalls the system
	// calls the workload's handlers made besides the poller's
	// (request/response workloads only).
	Requests        int64  `json:"requests,omitempty"`
	HandlerSyscalls uint64 `json:"handler_syscalls,omitempty"`
	// AfterBurstRSS[b][i] is the RSS read AfterBurstMS[i] milliseconds
	// after burst b ended, 0 where the gap was too short to read it.
	AfterBurstMS  []int      `json:"after_burst_ms,omitempty"`
	AfterBurstRSS [][]uint64 `json:"after_burst_rss,omitempty"`

	// BusyPercent is the share of one CPU another process was asked to
	// keep busy during the run, BusyShare the share it actually took.
	BusyPercent int     `json:"busy_percent,omitempty"`
	BusyShare   float64 `json:"busy_share,omitempty"`

	// Stepper is what the runtime policy's gcstep.Runtime reports at the
	// end of the run; nil for the other policies.
	Stepper *gcstep.Stats `json:"stepper,omitempty"`
	// Memory is what the process's memory was made of at the end.
	Memory *MemoryAtEnd `json:"memory_at_end,omitempty"`

	LatencyKind string       `json:"latency_kind,omitempty"`
	Latency     *Percentiles `json:"latency,omitempty"`
	Samples     []Sample     `json:"samples"`
}

// StepperCycles is how many cycles the run's gcstep.Runtime ran, 0
// without one.
func (r *RunResult) StepperCycles() uint64 {
	if r.Stepper == nil {
		return 0
	}
	return r.Stepper.CyclesInline // those that outlasted their step among them
}

// Condition names what the run was measured under besides its policy: the
// GC setting, and the busy core if there was one.
func (r *RunResult) Condition() string {
	if r.BusyPercent == 0 {
		return r.GC.Name
	}
	return fmt.Sprintf("%s busy=%d%%", r.GC.Name, r.BusyPercent)
}

// sampler reads RSS and heap size periodically, and with a profile path
// keeps the heap profile taken at the highest RSS seen.
type sampler struct {
	start   time.Time
	every   time.Duration
	profile bool

	mu      sync.Mutex
	gap     bool
	samples []Sample
	prof    bytes.Buffer
	profRSS uint64

	stop chan struct{}
	done chan struct{}
}

var heapMetric = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

func startSampler(every time.Duration, profile bool) *sampler {
	s := &sampler{start: time.Now(), every: every, profile: profile,
		samples: make([]Sample, 0, 4096), stop: make(chan struct{}), done: make(chan struct{})}
	s.take()
	go s.loop()
	return s
}

func (s *sampler) loop() {
	defer close(s.done)
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			s.take()
			return
		case <-t.C:
			s.take()
		}
	}
}

func (s *sampler) take() {
	cur, err := rss.Current()
	if err != nil {
		return // not on this platform: the peak alone is reported
	}
	metrics.Read(heapMetric)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, Sample{
		T: time.Since(s.start).Seconds(), RSS: cur, Heap: heapMetric[0].Value.Uint64(), Gap: s.gap,
	})
	// A profile at every new high (by 1/16 at least, to bound their cost):
	// the last one is the profile at the peak. Go's heap profile describes
	// the heap as of the last completed cycle.
	if s.profile && cur > s.profRSS+s.profRSS/16 {
		s.profRSS = cur
		s.prof.Reset()
		if err := pprof.Lookup("heap").WriteTo(&s.prof, 0); err != nil {
			s.prof.Reset()
		}
	}
}

// mark records whether the workload is in an idle gap from now on.
func (s *sampler) mark(gap bool) {
	s.mu.Lock()
	s.gap = gap
	s.mu.Unlock()
}

func (s *sampler) finish() []Sample {
	close(s.stop)
	<-s.done
	return s.samples
}

// gcCycles reads the number of completed GC cycles.
func gcCycles() uint64 {
	m := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}

func cpuTimes() (user, sys float64) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds()
}

// ChildMain runs the one workload described by specJSON (a ChildSpec) and
// writes its RunResult where the spec says. It exits the process on error.
func ChildMain(specJSON string) {
	var spec ChildSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "footprint child:", err)
		os.Exit(2)
	}
	if spec.Profile != "" {
		// Finer than the default 512 KiB, so that 16 KiB buffers show.
		runtime.MemProfileRate = 64 << 10
	}
	res := runChild(spec)
	b, err := json.Marshal(res)
	if err == nil {
		err = os.WriteFile(spec.Out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "footprint child:", err)
		os.Exit(1)
	}
}

func runChild(spec ChildSpec) RunResult {
	res := RunResult{Workload: spec.Workload, Stepping: spec.Stepping, GC: spec.GC}
	w, ok := FindWorkload(spec.Workload)
	if !ok {
		res.Error = fmt.Sprintf("unknown workload %q", spec.Workload)
		return res
	}
	if spec.Floor && !w.Floor {
		res.Error = fmt.Sprintf("workload %q has no floor variant", spec.Workload)
		return res
	}
	if spec.WarmupMiB < 0 {
		res.Error = fmt.Sprintf("warmup_mib %d: must not be negative", spec.WarmupMiB)
		return res
	}
	warmUp(spec.WarmupMiB)
	var opts []gcstep.Option
	if spec.Budget != 0 {
		if !(spec.Budget > 0 && spec.Budget <= 1) {
			res.Error = fmt.Sprintf("budget %v: must be a share of the CPU in (0, 1]", spec.Budget)
			return res
		}
		opts = append(opts, gcstep.WithBudget(spec.Budget))
	}
	if spec.MinGarbage != 0 {
		opts = append(opts, gcstep.WithMinGarbage(spec.MinGarbage))
	}
	var log *decisionLog
	if spec.Decisions != "" {
		l, err := newDecisionLog(decisionLogSize)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		log = l
		defer log.close()
		opts = append(opts, gcstep.WithDecisions(log.record))
	}
	st, closeStepper, err := stepper(spec.Stepping, opts...)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	u0, s0 := cpuTimes()
	c0 := gcCycles()
	smp := startSampler(spec.SampleEvery, spec.Profile != "")
	t0 := time.Now()
	wr, err := w.run(st, runOptions{quick: spec.Quick, floor: spec.Floor, mark: smp.mark})
	res.Wall = time.Since(t0).Seconds()
	res.Samples = smp.finish()
	if rt, ok := st.(*gcstep.Runtime); ok {
		s := rt.Stats()
		res.Stepper = &s
	}
	closeStepper()
	res.GCCycles = gcCycles() - c0
	u1, s1 := cpuTimes()
	res.CPUUser, res.CPUSys = u1-u0, s1-s0
	if p, perr := rss.Peak(); perr == nil {
		res.HWM = p
	}
	res.PeakRSS = peakOf(res.HWM, res.Samples)
	res.Memory = readMemoryAtEnd()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.OK, res.Check, res.Bytes = wr.OK, wr.Check, wr.Bytes
	res.IdleSteps, res.IdleStepTime, res.Syscalls = wr.Loop.Steps, wr.Loop.StepTime.Seconds(), wr.Loop.Syscalls
	res.Blocked = wr.Loop.BlockedTime.Seconds()
	res.LatencyKind, res.Latency = wr.LatencyKind, percentilesOf(wr.Latencies)
	res.Requests, res.HandlerSyscalls = wr.Requests, wr.HandlerSyscalls
	if wr.AfterBurst != nil {
		for _, off := range AfterBurstOffsets {
			res.AfterBurstMS = append(res.AfterBurstMS, int(off/time.Millisecond))
		}
		res.AfterBurstRSS = wr.AfterBurst
	}
	var gap []uint64
	for _, s := range res.Samples {
		if s.Gap {
			gap = append(gap, s.RSS)
		}
	}
	if len(gap) > 0 {
		slices.Sort(gap)
		res.GapRSS = gap[len(gap)/2]
	}
	if spec.Profile != "" {
		if err := os.WriteFile(spec.Profile, smp.prof.Bytes(), 0o644); err != nil {
			res.Error = err.Error()
		}
	}
	if log != nil {
		if err := log.write(spec.Decisions); err != nil {
			res.Error = err.Error()
		}
	}
	return res
}

// decisionLogSize is how many decisions a run records at most: a stepper
// decides at most a few thousand times a second, and the lab's runs last
// seconds.
const decisionLogSize = 1 << 20

// peakOf is a run's peak RSS: the highest of the kernel's high-water
// mark and the RSS samples. The kernel updates VmHWM only when it is
// about to lower the RSS, from counters it keeps per CPU and sums
// approximately for the purpose; so a process whose RSS falls after its
// peak (a scavenger's madvise, an munmap) reads a VmHWM below the VmRSS it
// had at the peak: by 0.1-0.3 MiB on this project's 2-CPU Linux 6.18
// machine, where VmRSS itself reads within 20 KiB of smaps_rollup's exact
// count. A sample of VmRSS at the peak's plateau is the better reading;
// with 10 ms samples the highest one was 0-116 KiB above VmHWM on the
// paced child.
func peakOf(hwm uint64, samples []Sample) uint64 {
	p := hwm
	for _, s := range samples {
		p = max(p, s.RSS)
	}
	return p
}
