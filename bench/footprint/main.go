package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/idlemux/idlemux/bench/footprint/internal/lab"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/internal/cpuburn"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.out, "out", "", "directory for results.json, charts and heap profiles (required)")
	flag.BoolVar(&cfg.quick, "quick", false, "a reduced run that finishes in under a minute, for CI")
	flag.IntVar(&cfg.rounds, "rounds", 0, "rounds of every configuration (default 3, 1 with -quick)")
	flag.StringVar(&cfg.workloads, "workloads", "urandom,bursty,tcp,bigheap", "comma-separated workloads to run")
	flag.StringVar(&cfg.gogc, "gogc", "", `comma-separated GOGC values to run, from 50, 100, 400 and "off" (default all; 100 and off with -quick)`)
	flag.StringVar(&cfg.steppings, "stepping", strings.Join(lab.Steppings, ","), "comma-separated stepping policies to run")
	flag.StringVar(&cfg.busy, "busy", "0", "comma-separated percentages of one CPU kept busy by another process during each run, such as 0,50,100")
	flag.DurationVar(&cfg.sample, "sample", 10*time.Millisecond, "RSS and heap sampling period")
	flag.BoolVar(&cfg.profiles, "profiles", true, "also take heap profiles at peak for stepping off and runtime, and compare them (with -quick, of the first workload only)")
	replot := flag.Bool("replot", false, "run nothing: print the tables and redraw the charts from DIR/results.json")
	frontier := flag.Bool("frontier", false, "the frontier mode: every workload without a stepper at each GOGC of -frontier-gogc and with GOMEMLIMIT near its floor, and with gcstep.NewRuntime() at the program's GOGC, under each of -conditions; memory over the floor against CPU (default workloads "+defaultFrontierWorkloads+")")
	runs := flag.Int("runs", 0, "with -frontier: runs of every point, interleaved (default 3, 1 with -quick)")
	frontierGOGC := flag.String("frontier-gogc", strings.Join(defaultFrontierGOGC, ","), "with -frontier: the GOGC settings of the pacer's points")
	warmup := flag.Int("warmup", 0, "with -frontier: MiB every child allocates, 2 MiB live at a time, before its workload and its stepper, as a program with a past (lab.ChildSpec.WarmupMiB); judge by the average then, since the warm-up sets every peak")
	budget := flag.Float64("budget", 0, "with -frontier: the stepper points' budget (gcstep.WithBudget), a share of the program's CPU in (0, 1]; 0: the Runtime's default")
	conds := flag.String("conditions", "both,1P,quota,busy", "with -frontier: the conditions, some of both (both CPUs), 1P (GOMAXPROCS=1), quota (a 1-CPU cgroup quota), busy (one CPU kept busy)")
	flag.Parse()
	cfg.command = strings.Join(append([]string{"go run ./bench/footprint"}, os.Args[1:]...), " ")
	if cfg.out == "" {
		fmt.Fprintln(os.Stderr, "footprint: -out DIR is required")
		os.Exit(2)
	}
	if *frontier && *replot {
		if err := replotFrontier(cfg.out, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "footprint:", err)
			os.Exit(1)
		}
		return
	}
	if *frontier {
		workloads := ""
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "workloads" {
				workloads = cfg.workloads
			}
		})
		fc, err := newFrontierConfig(cfg.out, cfg.quick, *runs, workloads, *frontierGOGC, *conds, cfg.sample, *warmup, cfg.command)
		if err == nil {
			err = fc.setBudget(*budget)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "footprint:", err)
			os.Exit(2)
		}
		rep, err := runFrontier(context.Background(), fc, os.Stdout, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "footprint:", err)
			os.Exit(1)
		}
		if !rep.frontierOK() {
			fmt.Fprintln(os.Stderr, "footprint: some runs failed their checks (see the ok column)")
			os.Exit(1)
		}
		return
	}
	if *replot {
		if err := replotDir(cfg.out, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "footprint:", err)
			os.Exit(1)
		}
		return
	}
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "footprint:", err)
		os.Exit(2)
	}
	rep, err := runLab(context.Background(), cfg, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "footprint:", err)
		os.Exit(1)
	}
	if !rep.allOK() {
		fmt.Fprintln(os.Stderr, "footprint: some runs failed their checks (see the ok column)")
		os.Exit(1)
	}
}

// config is what the flags ask for.
type config struct {
	out        string
	quick      bool
	rounds     int
	workloads  string
	gogc       string // GOGC values to keep, "" for all
	steppings  string
	busy       string // -busy as given
	busyLevels []int
	sample     time.Duration
	profiles   bool
	command    string // as typed, for results.json
}

func (c *config) validate() error {
	if c.rounds == 0 {
		c.rounds = 3
		if c.quick {
			c.rounds = 1
		}
	}
	if c.rounds < 1 {
		return errors.New("-rounds must be at least 1")
	}
	if c.sample <= 0 {
		return errors.New("-sample must be positive")
	}
	if len(c.list()) == 0 {
		return errors.New("-workloads: no workload given")
	}
	for _, w := range c.list() {
		if _, ok := lab.FindWorkload(w); !ok {
			return fmt.Errorf("unknown workload %q", w)
		}
	}
	if c.steppings == "" {
		c.steppings = strings.Join(lab.Steppings, ",")
	}
	for _, st := range splitList(c.steppings) {
		if !slices.Contains(lab.Steppings, st) {
			return fmt.Errorf("-stepping: unknown policy %q, want some of %s", st, strings.Join(lab.Steppings, ","))
		}
	}
	if len(splitList(c.steppings)) == 0 {
		return errors.New("-stepping: no policy given")
	}
	if c.busy == "" {
		c.busy = "0"
	}
	c.busyLevels = nil
	for _, f := range splitList(c.busy) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n > 100 || slices.Contains(c.busyLevels, n) {
			return fmt.Errorf("-busy %q: want distinct percentages of one CPU from 0 to 100", c.busy)
		}
		c.busyLevels = append(c.busyLevels, n)
	}
	if len(c.busyLevels) == 0 {
		return fmt.Errorf("-busy %q: no level given", c.busy)
	}
	for _, g := range splitList(c.gogc) {
		if !slices.Contains([]string{"50", "100", "400", "off"}, g) {
			return fmt.Errorf(`-gogc: %q is not one of the lab's settings 50, 100, 400, off`, g)
		}
	}
	if w, _ := lab.FindWorkload(c.list()[0]); len(c.gcSettings(w)) == 0 {
		return fmt.Errorf(`-gogc %q: none of the settings this run has (-quick runs 100 and off only)`, c.gogc)
	}
	return nil
}

func (c *config) list() []string { return splitList(c.workloads) }

// gcSettings returns the GC settings to run w under: the lab's, less those
// -gogc leaves out.
func (c *config) gcSettings(w lab.Workload) []lab.GCSetting {
	keep := splitList(c.gogc)
	var out []lab.GCSetting
	for _, gc := range lab.GCSettings(w, c.quick) {
		if len(keep) == 0 || slices.Contains(keep, gc.GOGC) {
			out = append(out, gc)
		}
	}
	return out
}

// stepping returns the policies to run, in table order.
func (c *config) stepping() []string {
	keep := splitList(c.steppings)
	var out []string
	for _, st := range lab.Steppings {
		if slices.Contains(keep, st) {
			out = append(out, st)
		}
	}
	return out
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// report is results.json.
type report struct {
	Machine  machine         `json:"machine"`
	Command  string          `json:"command"`
	Started  time.Time       `json:"started"`
	Duration float64         `json:"duration_seconds"`
	Quick    bool            `json:"quick"`
	Rounds   int             `json:"rounds"`
	About    []about         `json:"workloads"`
	Summary  []summary       `json:"summary"`
	HeapDiff []heapDiff      `json:"heap_diff,omitempty"`
	Runs     []lab.RunResult `json:"runs"`
}

type about struct {
	Name  string `json:"name"`
	About string `json:"about"`
}

type machine struct {
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	CPUs      int    `json:"cpus"`
	CPU       string `json:"cpu,omitempty"`
	Kernel    string `json:"kernel,omitempty"`
	GoVersion string `json:"go_version"`
	// LoadBefore and LoadAfter are the one-minute load average before
	// the first run and after the last, where the system reports it: how
	// busy the machine was besides the lab.
	LoadBefore float64 `json:"load_before,omitempty"`
	LoadAfter  float64 `json:"load_after,omitempty"`
}

// thisMachine describes where the lab runs, as far as it can tell.
func thisMachine() machine {
	m := machine{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

func (r *report) allOK() bool {
	for _, run := range r.Runs {
		if !run.OK {
			return false
		}
	}
	return true
}

// childTimeout bounds one child run, so that a hung workload fails the lab
// instead of hanging it.
func childTimeout(quick bool) time.Duration {
	if quick {
		return time.Minute
	}
	return 5 * time.Minute
}

// childPkg is the command every run executes, built once per lab.
const childPkg = "github.com/idlemux/idlemux/bench/footprint/child"

// buildChild builds the child command into a new temporary directory,
// which the caller removes, and returns both.
func buildChild(ctx context.Context, progress io.Writer) (tmp, exe string, err error) {
	tmp, err = os.MkdirTemp("", "idlemux-footprint-")
	if err != nil {
		return "", "", err
	}
	exe = filepath.Join(tmp, "child")
	build := exec.CommandContext(ctx, "go", "build", "-o", exe, childPkg)
	build.Stdout, build.Stderr = progress, progress
	if err := build.Run(); err != nil {
		os.RemoveAll(tmp)
		return "", "", fmt.Errorf("building the child command: %w", err)
	}
	return tmp, exe, nil
}

// runLab builds the child command, runs every configuration in a child
// process of its own, then writes results.json, the tables, the charts and
// the heap comparison.
func runLab(ctx context.Context, cfg config, stdout, progress io.Writer) (*report, error) {
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return nil, err
	}
	tmp, exe, err := buildChild(ctx, progress)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	rep := &report{
		Machine: thisMachine(),
		Command: cfg.command,
		Started: time.Now().UTC(),
		Quick:   cfg.quick,
		Rounds:  cfg.rounds,
	}
	var ws []lab.Workload
	for _, name := range cfg.list() {
		w, _ := lab.FindWorkload(name)
		ws = append(ws, w)
		rep.About = append(rep.About, about{w.Name, w.About(cfg.quick)})
	}

	child := func(spec lab.ChildSpec, busy int) lab.RunResult {
		spec.Quick, spec.SampleEvery = cfg.quick, cfg.sample
		spec.Out = filepath.Join(tmp, "result.json")
		os.Remove(spec.Out)
		res := lab.RunResult{Workload: spec.Workload, Stepping: spec.Stepping, GC: spec.GC, BusyPercent: busy}
		// The busy core: the child command started again as a burner,
		// for as long as the run lasts and no longer.
		burner, err := cpuburn.Start(exe, busy)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		res = runChildIn(ctx, exe, spec, res, progress, childPlace{frozen: true})
		u, err := burner.Stop()
		if err != nil && res.Error == "" {
			res.Error = err.Error()
		}
		res.BusyPercent, res.BusyShare = busy, u.Share()
		return res
	}

	rep.Machine.LoadBefore, _ = cpuburn.LoadAverage()
	t0 := time.Now()
	for round := range cfg.rounds {
		for _, w := range ws {
			for _, gc := range cfg.gcSettings(w) {
				// Rotate the order of the policies from round to
				// round, so none always runs first.
				order := cfg.stepping()
				for range round % len(order) {
					order = append(order[1:], order[0])
				}
				for _, busy := range cfg.busyLevels {
					for _, st := range order {
						cond := (&lab.RunResult{GC: gc, BusyPercent: busy}).Condition()
						fmt.Fprintf(progress, "round %d/%d  %-8s %-24s stepping=%-8s", round+1, cfg.rounds, w.Name, cond, st)
						res := child(lab.ChildSpec{Workload: w.Name, Stepping: st, GC: gc}, busy)
						res.Round = round
						fmt.Fprintf(progress, " peak %6.1f MiB  wall %6.2fs  ok=%v %s\n", mib(res.PeakRSS), res.Wall, res.OK, res.Error)
						rep.Runs = append(rep.Runs, res)
					}
				}
			}
		}
	}
	rep.Summary = summarise(rep.Runs)

	if cfg.profiles {
		profiled := ws
		if cfg.quick {
			// Enough to show the comparison works, for a run that
			// has to be short.
			profiled = ws[:1]
		}
		for _, w := range profiled {
			gc := lab.GCSetting{Name: "GOGC=100", GOGC: "100"}
			var paths [2]string
			failed := false
			for i, st := range []string{"off", "runtime"} {
				paths[i] = filepath.Join(cfg.out, fmt.Sprintf("heap-%s-%s.pprof", w.Name, st))
				fmt.Fprintf(progress, "heap profile at peak: %s stepping=%s\n", w.Name, st)
				res := child(lab.ChildSpec{Workload: w.Name, Stepping: st, GC: gc, Profile: paths[i]}, 0)
				if res.Error != "" || !res.OK {
					fmt.Fprintf(progress, "  failed: %s %s\n", res.Error, res.Check)
					failed = true
				}
			}
			if failed {
				continue
			}
			d, err := diffHeapProfiles(w.Name, paths[0], paths[1], 10)
			if err != nil {
				return nil, err
			}
			rep.HeapDiff = append(rep.HeapDiff, d)
		}
	}
	rep.Duration = time.Since(t0).Seconds()
	rep.Machine.LoadAfter, _ = cpuburn.LoadAverage()

	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(cfg.out, "results.json"), b, 0o644); err != nil {
		return nil, err
	}
	writeTables(stdout, rep)
	if err := drawCharts(cfg.out, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// A childPlace is where a child runs besides its spec: GOMAXPROCS (0: the
// runtime's own choice, whatever this process's environment says) and a
// cgroup directory to start it in ("": this process's).
type childPlace struct {
	procs  int
	cgroup string
	frozen bool // leave GOMAXPROCS as this process's environment has it
}

// runChildIn runs the child command exe for one run, in place, and returns
// res completed with what the child reported.
func runChildIn(ctx context.Context, exe string, spec lab.ChildSpec, res lab.RunResult, progress io.Writer, place childPlace) lab.RunResult {
	b, _ := json.Marshal(spec)
	cctx, cancel := context.WithTimeout(ctx, childTimeout(spec.Quick))
	defer cancel()
	cmd := exec.CommandContext(cctx, exe)
	if place.cgroup != "" {
		// Join the cgroup before exec, so that the runtime sees its
		// quota from the start.
		cmd = exec.CommandContext(cctx, "/bin/sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$2"`, "sh", place.cgroup, exe)
	}
	cmd.Env = append(childEnviron(!place.frozen), lab.ChildEnv+"="+string(b), "GOGC="+spec.GC.GOGC)
	if place.procs > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(place.procs))
	}
	if spec.GC.MemLimit != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+spec.GC.MemLimit)
	}
	cmd.Stdout, cmd.Stderr = progress, progress
	if err := cmd.Run(); err != nil {
		res.Error = fmt.Sprintf("child: %v", err)
		return res
	}
	out, err := os.ReadFile(spec.Out)
	if err == nil {
		err = json.Unmarshal(out, &res)
	}
	if err != nil {
		res.Error = fmt.Sprintf("child result: %v", err)
	}
	return res
}

// replotDir prints the tables and redraws the charts of an earlier run
// from dir/results.json.
func replotDir(dir string, stdout io.Writer) error {
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("results.json: %w", err)
	}
	// The medians again from the runs, so that a summary this version
	// knows and the one that wrote the file did not is filled in.
	rep.Summary = summarise(rep.Runs)
	writeTables(stdout, &rep)
	return drawCharts(dir, &rep)
}

// childEnviron is this process's environment without the variables the
// lab sets per run, and without GOMAXPROCS if dropProcs.
func childEnviron(dropProcs bool) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "GOGC" || k == "GOMEMLIMIT" || k == lab.ChildEnv || k == lab.ClientEnv || dropProcs && k == "GOMAXPROCS" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
