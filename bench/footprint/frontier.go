package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idlemux/idlemux/bench/footprint/internal/lab"
	"github.com/idlemux/idlemux/internal/cpuburn"
)

// The frontier mode (-frontier) measures the stepper against Go's own
// knob: a user can always turn GOGC down or set GOMEMLIMIT instead of
// running a stepper, so a memory win counts only against GOGC's frontier
// at the stepper's cost (judge). Every workload runs without a stepper at
// each GOGC of the frontier and with GOMEMLIMIT near its floor, and with
// gcstep.NewRuntime() (no options) at the program's GOGC, under each
// condition; the tables and charts put memory over the floor against CPU.

// defaultFrontierGOGC are the pacer points.
var defaultFrontierGOGC = []string{"400", "200", "100", "50", "25", "10"}

// defaultFrontierWorkloads are the workloads of the frontier: the streams
// and the request/response servers, every one with a floor variant.
const defaultFrontierWorkloads = "urandom,paced,bursty,tcp,chunk"

// memLimitFactor sets GOMEMLIMIT for the memory-limit point at this
// multiple of the floor: near enough that the collector may thrash, which
// the table then shows in CPU.
const memLimitFactor = 1.25

// A condition is a way the machine is shared with a run.
type condition struct {
	Name  string `json:"name"`
	About string `json:"about"`
	procs int    // GOMAXPROCS, 0 for the runtime's own choice
	quota bool   // in a cgroup with a one-CPU quota
	busy  int    // percent of one CPU kept busy by another process
}

// conditions are the frontier's conditions, in the order they run.
var conditions = []condition{
	{Name: "both", About: "both CPUs, the runtime's own GOMAXPROCS"},
	{Name: "1P", About: "GOMAXPROCS=1: a 1-vCPU machine, or a process per core", procs: 1},
	{Name: "quota", About: "a cgroup with a 1-CPU quota (cpu.cfs_quota_us=100000 per 100000): the usual container; Go still runs 2 Ps there", quota: true},
	{Name: "busy", About: "both CPUs, one of them kept busy by another process", busy: 100},
}

// frontierConfig is what the flags ask of the frontier mode.
type frontierConfig struct {
	out        string
	quick      bool
	runs       int
	workloads  []lab.Workload
	gogcs      []string
	conditions []condition
	sample     time.Duration
	command    string
	warmup     int     // MiB each child allocates before its workload (lab.ChildSpec.WarmupMiB)
	budget     float64 // the stepper points' gcstep.WithBudget; 0: the default
}

// setBudget sets the stepper points' budget: a share of the program's CPU
// in (0, 1], or 0 for the Runtime's default.
func (c *frontierConfig) setBudget(b float64) error {
	if b != 0 && !(b > 0 && b <= 1) {
		return fmt.Errorf("-budget %v: want a share of the CPU in (0, 1], or 0 for the default", b)
	}
	c.budget = b
	return nil
}

// newFrontierConfig checks the flags the frontier mode reads.
func newFrontierConfig(out string, quick bool, runs int, workloads, gogcs, conds string, sample time.Duration, warmup int, command string) (frontierConfig, error) {
	c := frontierConfig{out: out, quick: quick, runs: runs, sample: sample, warmup: warmup, command: command}
	if c.warmup < 0 {
		return c, fmt.Errorf("-warmup %d: must not be negative", c.warmup)
	}
	if c.runs == 0 {
		c.runs = 3
		if quick {
			c.runs = 1
		}
	}
	if c.runs < 1 {
		return c, errors.New("-runs must be at least 1")
	}
	if workloads == "" {
		workloads = defaultFrontierWorkloads
	}
	for _, name := range splitList(workloads) {
		w, ok := lab.FindWorkload(name)
		if !ok || !w.Floor {
			return c, fmt.Errorf("-workloads: %q is not a workload with a floor variant, which the frontier needs (%s)", name, defaultFrontierWorkloads)
		}
		c.workloads = append(c.workloads, w)
	}
	c.gogcs = defaultFrontierGOGC
	if gogcs != "" {
		c.gogcs = nil
		for _, g := range splitList(gogcs) {
			if n, err := strconv.Atoi(g); err != nil || n < 1 || slices.Contains(c.gogcs, g) {
				return c, fmt.Errorf("-frontier-gogc %q: want distinct GOGC percentages", gogcs)
			}
			c.gogcs = append(c.gogcs, g)
		}
	}
	if conds == "" {
		c.conditions = conditions
	} else {
		for _, name := range splitList(conds) {
			i := slices.IndexFunc(conditions, func(c condition) bool { return c.Name == name })
			if i < 0 {
				return c, fmt.Errorf("-conditions: unknown condition %q, want some of both,1P,quota,busy", name)
			}
			c.conditions = append(c.conditions, conditions[i])
		}
	}
	if len(c.workloads) == 0 || len(c.gogcs) == 0 || len(c.conditions) == 0 {
		return c, errors.New("-frontier: no workload, GOGC point or condition left to run")
	}
	return c, nil
}

// A point is one configuration of a workload on the frontier.
type point struct {
	Kind     string // kindFloor, kindPacer, kindLimit or kindStepper
	GOGC     string
	MemLimit string // GOMEMLIMIT, for kindLimit
}

const (
	kindFloor   = "floor"   // the no-garbage variant, no stepper, GOGC=100
	kindPacer   = "pacer"   // no stepper, at a GOGC of the frontier
	kindLimit   = "limit"   // no stepper, GOGC=off, GOMEMLIMIT near the floor
	kindStepper = "stepper" // gcstep.NewRuntime() with no options
)

// Name is how tables and charts call the point.
func (p point) Name() string {
	switch p.Kind {
	case kindFloor:
		return "floor (no garbage)"
	case kindLimit:
		return "GOGC=off GOMEMLIMIT=" + p.MemLimit
	case kindStepper:
		return "stepper GOGC=" + p.GOGC
	}
	return "GOGC=" + p.GOGC
}

// stepperGOGCs are the program GOGC settings the stepper runs at on w:
// 100, and off for a stream, where a loop idle most of the time must not
// let its heap grow without bound.
func stepperGOGCs(w lab.Workload) []string {
	if w.Stream {
		return []string{"100", "off"}
	}
	return []string{"100"}
}

// points lists w's points other than the floor, in run order; limit is the
// GOMEMLIMIT of the memory-limit point.
func (c frontierConfig) points(w lab.Workload, limit string) []point {
	var ps []point
	for _, g := range c.gogcs {
		ps = append(ps, point{Kind: kindPacer, GOGC: g})
	}
	ps = append(ps, point{Kind: kindLimit, GOGC: "off", MemLimit: limit})
	for _, g := range stepperGOGCs(w) {
		ps = append(ps, point{Kind: kindStepper, GOGC: g})
	}
	return ps
}

// A frontierRun is one run of one point: what the child measured, less
// its samples, plus the time-averaged RSS they give.
type frontierRun struct {
	Workload  string  `json:"workload"`
	Condition string  `json:"condition"`
	Point     string  `json:"point"`
	Kind      string  `json:"kind"`
	GOGC      string  `json:"gogc"`
	MemLimit  string  `json:"memlimit,omitempty"`
	Round     int     `json:"round"`
	OK        bool    `json:"ok"`
	Check     string  `json:"check"`
	Error     string  `json:"error,omitempty"`
	Bytes     int64   `json:"bytes"`
	PeakRSS   uint64  `json:"peak_rss_bytes"`
	AvgRSS    uint64  `json:"avg_rss_bytes"` // time-averaged over the run's samples
	CPU       float64 `json:"cpu_seconds"`   // user and system, the child's own
	Wall      float64 `json:"wall_seconds"`
	P99       int64   `json:"p99_ns,omitempty"` // request latency, request/response workloads
	GCCycles  uint64  `json:"gc_cycles"`
	Stepped   uint64  `json:"stepper_cycles"`             // cycles the stepper ran
	Releases  uint64  `json:"stepper_releases,omitempty"` // releases of memory to the OS it completed
	IdleShare float64 `json:"idle_share"`                 // the loop's blocked time over the wall time
	BusyShare float64 `json:"busy_share,omitempty"`
	// Own is the runtime's metadata and the resident file-backed pages
	// at the end of the run (lab.MemoryAtEnd.Own): memory that only
	// grows, most of it the collector's own structures and code.
	Own uint64 `json:"own_bytes,omitempty"`
}

// frontierReport is frontier.json.
type frontierReport struct {
	Machine     machine           `json:"machine"`
	Command     string            `json:"command"`
	Started     time.Time         `json:"started"`
	Duration    float64           `json:"duration_seconds"`
	Runs        int               `json:"runs_per_point"`
	Quick       bool              `json:"quick"`
	WarmupMiB   int               `json:"warmup_mib,omitempty"`
	Budget      float64           `json:"budget,omitempty"` // the stepper's gcstep.WithBudget; 0: the default
	About       []about           `json:"workloads"`
	Conditions  []condition       `json:"conditions"`
	Skipped     []string          `json:"skipped,omitempty"`
	Results     []frontierRun     `json:"results"`
	Summary     []frontierSummary `json:"summary"`
	Verdicts    []verdict         `json:"verdicts"`     // by peak RSS
	AvgVerdicts []verdict         `json:"verdicts_avg"` // by time-averaged RSS
}

// summarise takes the medians of the results and judges the stepper by
// both measures of memory: what a run and a replot both do.
func (rep *frontierReport) summarise() {
	rep.Summary = summariseFrontier(rep.Results)
	rep.Verdicts, rep.AvgVerdicts = judge(rep.Summary, memPeak), judge(rep.Summary, memAvg)
}

// runFrontier runs the frontier: for each round, condition and workload,
// the floor first, then every other point, in an order rotated from round
// to round. The memory-limit point's GOMEMLIMIT is memLimitFactor times
// the floor measured in the first round. It writes frontier.json, the
// tables (also to frontier.txt) and a chart per workload.
func runFrontier(ctx context.Context, c frontierConfig, stdout, progress io.Writer) (*frontierReport, error) {
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return nil, err
	}
	tmp, exe, err := buildChild(ctx, progress)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	rep := &frontierReport{Machine: thisMachine(), Command: c.command, Started: time.Now().UTC(), Runs: c.runs, Quick: c.quick, WarmupMiB: c.warmup, Budget: c.budget}
	for _, w := range c.workloads {
		rep.About = append(rep.About, about{w.Name, w.About(c.quick)})
	}
	var conds []condition
	quotaDir := ""
	for _, cond := range c.conditions {
		if cond.quota {
			dir, remove, err := makeCPUQuota()
			if err != nil {
				msg := fmt.Sprintf("condition %s skipped: %v", cond.Name, err)
				fmt.Fprintln(progress, msg)
				rep.Skipped = append(rep.Skipped, msg)
				continue
			}
			defer remove()
			quotaDir = dir
		}
		conds = append(conds, cond)
	}
	rep.Conditions = conds
	if len(conds) == 0 {
		return nil, errors.New("no condition can run here")
	}

	rep.Machine.LoadBefore, _ = cpuburn.LoadAverage()
	t0 := time.Now()
	limits := map[string]string{} // workload/condition: the GOMEMLIMIT of its limit point
	run := func(w lab.Workload, cond condition, p point, round int) error {
		spec := lab.ChildSpec{Workload: w.Name, Stepping: "off", GC: lab.GCSetting{Name: p.Name(), GOGC: p.GOGC, MemLimit: p.MemLimit},
			Quick: c.quick, SampleEvery: c.sample, Floor: p.Kind == kindFloor, WarmupMiB: c.warmup}
		if p.Kind == kindStepper {
			spec.Stepping, spec.Budget = "default", c.budget
		}
		spec.Out = filepath.Join(tmp, "result.json")
		os.Remove(spec.Out)
		fmt.Fprintf(progress, "round %d/%d  %-8s %-6s %-34s", round+1, c.runs, w.Name, cond.Name, p.Name())
		res := lab.RunResult{Workload: w.Name, Stepping: spec.Stepping, GC: spec.GC}
		burner, err := cpuburn.Start(exe, cond.busy)
		if err != nil {
			return err
		}
		place := childPlace{procs: cond.procs}
		if cond.quota {
			place.cgroup = quotaDir
		}
		res = runChildIn(ctx, exe, spec, res, progress, place)
		u, berr := burner.Stop()
		if berr != nil && res.Error == "" {
			res.Error = berr.Error()
		}
		fr := frontierRunOf(res, cond, p, round)
		fr.BusyShare = u.Share()
		releases := ""
		if fr.Releases > 0 {
			releases = fmt.Sprintf("  releases %d", fr.Releases)
		}
		fmt.Fprintf(progress, " peak %6.1f MiB  avg %6.1f MiB  cpu %5.2fs  wall %5.2fs%s  ok=%v %s\n",
			mib(fr.PeakRSS), mib(fr.AvgRSS), fr.CPU, fr.Wall, releases, fr.OK, fr.Error)
		rep.Results = append(rep.Results, fr)
		if p.Kind == kindFloor && round == 0 {
			limits[w.Name+"/"+cond.Name] = memLimitOf(fr.PeakRSS)
		}
		return ctx.Err()
	}
	for round := range c.runs {
		for _, cond := range conds {
			for _, w := range c.workloads {
				if err := run(w, cond, point{Kind: kindFloor, GOGC: "100"}, round); err != nil {
					return nil, err
				}
				ps := c.points(w, limits[w.Name+"/"+cond.Name])
				for range round % len(ps) {
					ps = append(ps[1:], ps[0])
				}
				for _, p := range ps {
					if err := run(w, cond, p, round); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	rep.Duration = time.Since(t0).Seconds()
	rep.Machine.LoadAfter, _ = cpuburn.LoadAverage()
	rep.summarise()

	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.out, "frontier.json"), b, 0o644); err != nil {
		return nil, err
	}
	var text strings.Builder
	writeFrontierTables(&text, rep)
	if _, err := io.WriteString(stdout, text.String()); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.out, "frontier.txt"), []byte(text.String()), 0o644); err != nil {
		return nil, err
	}
	if err := drawFrontierCharts(c.out, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// replotFrontier prints the tables and redraws the charts of an earlier
// frontier from dir/frontier.json, its summary and verdicts taken again
// from the runs.
func replotFrontier(dir string, stdout io.Writer) error {
	b, err := os.ReadFile(filepath.Join(dir, "frontier.json"))
	if err != nil {
		return err
	}
	var rep frontierReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("frontier.json: %w", err)
	}
	for i, c := range rep.Conditions {
		if j := slices.IndexFunc(conditions, func(k condition) bool { return k.Name == c.Name }); j >= 0 {
			rep.Conditions[i] = conditions[j]
		}
	}
	rep.summarise()
	writeFrontierTables(stdout, &rep)
	return drawFrontierCharts(dir, &rep)
}

// memLimitOf is the GOMEMLIMIT of the memory-limit point for a floor of
// peak bytes, in KiB.
func memLimitOf(peak uint64) string {
	return fmt.Sprintf("%dKiB", uint64(float64(peak)*memLimitFactor)>>10)
}

// frontierRunOf keeps what the frontier reads of a child's result.
func frontierRunOf(r lab.RunResult, cond condition, p point, round int) frontierRun {
	fr := frontierRun{
		Workload: r.Workload, Condition: cond.Name, Point: p.Name(), Kind: p.Kind, GOGC: p.GOGC, MemLimit: p.MemLimit,
		Round: round, OK: r.OK && r.Error == "", Check: r.Check, Error: r.Error, Bytes: r.Bytes,
		PeakRSS: r.PeakRSS, AvgRSS: timeAveraged(r.Samples), CPU: r.CPUUser + r.CPUSys, Wall: r.Wall, GCCycles: r.GCCycles,
		Own: r.Memory.Own(),
	}
	if r.Latency != nil && r.LatencyKind == "request" {
		fr.P99 = r.Latency.P99
	}
	if r.Stepper != nil {
		fr.Stepped = r.StepperCycles()
		fr.Releases = r.Stepper.Releases
	}
	if r.Wall > 0 {
		fr.IdleShare = r.Blocked / r.Wall
	}
	return fr
}

// timeAveraged is the mean RSS over the samples' time span, each sample
// holding until the next; 0 without samples.
func timeAveraged(s []lab.Sample) uint64 {
	switch len(s) {
	case 0:
		return 0
	case 1:
		return s[0].RSS
	}
	var area, span float64
	for i := 1; i < len(s); i++ {
		dt := s[i].T - s[i-1].T
		area += dt * float64(s[i-1].RSS)
		span += dt
	}
	if span <= 0 {
		return s[len(s)-1].RSS
	}
	return uint64(area / span)
}
