package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"
)

// options are the driver's flags.
type options struct {
	run      string
	servers  string
	rounds   int
	load     string
	out      string
	chart    string
	smoke    bool
	merge    string
	bursty   burstyParams
	idle     int
	settle   time.Duration
	slow     slowParams
	pipe     loadParams
	pipeSrv  string
	pipeLoop int
	pinSrv   string
	pinCli   string
}

func main() {
	var o options
	flag.StringVar(&o.run, "run", "bursty", "experiments to run, comma-separated: bursty, idle, slow, pipeline")
	flag.StringVar(&o.servers, "servers", "netloop-step,netloop-step-2,netloop,netloop-2,gnet,gnet-1,nbio,net", "servers to compare, comma-separated")
	flag.IntVar(&o.rounds, "rounds", 3, "interleaved rounds of every server")
	flag.StringVar(&o.load, "load", "auto", "load generator: redis-benchmark, go, or auto (redis-benchmark if on PATH)")
	flag.StringVar(&o.out, "out", "", "directory for results.json and rss.png (none: print only)")
	flag.StringVar(&o.chart, "chart", "", "where to write the RSS chart (default OUT/rss.png)")
	flag.StringVar(&o.merge, "merge", "", "run nothing: merge these results.json files (comma-separated) as rounds of one run, print and write them")
	flag.BoolVar(&o.smoke, "smoke", false, "a few seconds of everything at small sizes with the Go load generator, one round (for CI)")
	flag.IntVar(&o.bursty.Bursts, "bursts", 4, "bursts per session")
	flag.IntVar(&o.bursty.Load.Requests, "n", 10000, "requests per test (SET, GET) per burst")
	flag.IntVar(&o.bursty.Load.Clients, "c", 50, "connections")
	flag.IntVar(&o.bursty.Load.Size, "d", 16384, "value size in bytes")
	flag.IntVar(&o.bursty.Load.Keys, "r", 1000, "keyspace")
	flag.DurationVar(&o.bursty.Gap, "gap", time.Second, "silence between bursts")
	flag.DurationVar(&o.bursty.Tail, "tail", 3*time.Second, "silence after the last burst before the final reading")
	flag.DurationVar(&o.bursty.Sample, "sample", 20*time.Millisecond, "RSS sampling period")
	flag.StringVar(&o.bursty.Values, "values", "reuse", "how the store keeps SET values: reuse (in place over a value of about the same size) or copy (new memory each SET, the old value garbage)")
	flag.IntVar(&o.idle, "idle-conns", 10000, "idle connections to hold")
	flag.DurationVar(&o.settle, "idle-settle", 2*time.Second, "how long idle connections sit before the reading")
	flag.IntVar(&o.slow.Value, "slow-value", 1<<20, "slow reader: value size")
	flag.IntVar(&o.slow.Gets, "slow-gets", 64, "slow reader: pipelined GETs of the value")
	flag.IntVar(&o.slow.Rate, "slow-rate", 1<<20, "slow reader: bytes read per second")
	flag.DurationVar(&o.slow.Duration, "slow-time", 3*time.Second, "slow reader: how long it reads before hanging up")
	flag.IntVar(&o.pipe.Requests, "pipe-n", 200000, "pipelined load: requests per test")
	flag.IntVar(&o.pipe.Pipeline, "P", 16, "pipelined load: requests in flight per connection")
	flag.IntVar(&o.pipe.Size, "pipe-d", 128, "pipelined load: value size in bytes (small, so the loops' CPU is what limits)")
	flag.StringVar(&o.pipeSrv, "pipe-servers", "netloop-step", "pipelined load: servers, each with 1 loop and with -loops")
	flag.IntVar(&o.pipeLoop, "loops", runtime.NumCPU(), "pipelined load: the many-loops count")
	flag.StringVar(&o.pinSrv, "pin-server", "", "pipelined load: run the servers on these CPUs (taskset -c list, e.g. 0)")
	flag.StringVar(&o.pinCli, "pin-client", "", "pipelined load: run redis-benchmark on these CPUs (taskset -c list, e.g. 1)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "servers:", err)
		os.Exit(1)
	}
}

// applySmoke shrinks every experiment to a few seconds in all.
func applySmoke(o *options) {
	o.rounds, o.load, o.run = 1, "go", "bursty,idle,slow,pipeline"
	o.bursty = burstyParams{Load: loadParams{Requests: 1000, Clients: 10, Size: 128, Keys: 100}, Values: o.bursty.Values,
		Bursts: 2, Gap: 200 * time.Millisecond, Tail: 300 * time.Millisecond, Sample: 20 * time.Millisecond}
	o.idle, o.settle = 200, 200*time.Millisecond
	o.slow = slowParams{Value: 256 << 10, Gets: 16, Rate: 1 << 20, Duration: 500 * time.Millisecond, Sample: 20 * time.Millisecond}
	o.pipe.Requests = 2000
}

func run(o options) error {
	if o.merge != "" {
		rep, err := mergeReports(strings.Split(o.merge, ","))
		if err != nil {
			return err
		}
		printAll(rep)
		if o.out != "" {
			return writeResults(o, rep)
		}
		return nil
	}
	if o.smoke {
		applySmoke(&o)
	}
	o.bursty.Load.Tests = []string{"set", "get"}
	o.slow.Sample = o.bursty.Sample
	o.pipe = loadParams{Tests: []string{"set", "get"}, Clients: o.bursty.Load.Clients, Requests: o.pipe.Requests,
		Size: o.pipe.Size, Keys: o.bursty.Load.Keys, Pipeline: o.pipe.Pipeline}
	if o.bursty.Values != "reuse" && o.bursty.Values != "copy" {
		return fmt.Errorf("-values %q: want reuse or copy", o.bursty.Values)
	}
	if o.rounds < 1 || o.bursty.Bursts < 1 {
		return fmt.Errorf("-rounds %d, -bursts %d: want at least 1", o.rounds, o.bursty.Bursts)
	}
	names := strings.Split(o.servers, ",")
	var srvs []server
	for _, n := range names {
		s, ok := findServer(n)
		if !ok {
			return fmt.Errorf("unknown server %q", n)
		}
		srvs = append(srvs, s)
	}
	ld, err := pickLoader(o.load)
	if err != nil {
		return err
	}
	pipeLd := ld
	if o.pinCli != "" {
		rb, ok := ld.(redisBenchmark)
		if !ok {
			return fmt.Errorf("-pin-client needs redis-benchmark, not the %s load generator", ld.Name())
		}
		rb.pin = o.pinCli
		pipeLd = rb
	}
	binDir, err := os.MkdirTemp("", "idlemux-servers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(binDir)
	toBuild := srvs
	for _, n := range strings.Split(o.pipeSrv, ",") {
		if s, ok := findServer(n); ok && strings.Contains(o.run, "pipeline") {
			toBuild = append(toBuild, s)
		}
	}
	if err := buildServers(binDir, toBuild); err != nil {
		return err
	}
	rep := &report{Load: ld.Name(), Command: strings.Join(os.Args, " "), Bursty: o.bursty, ServerSet: names}
	var errs []error
	for _, exp := range strings.Split(o.run, ",") {
		switch exp {
		case "bursty":
			for r := range o.rounds {
				for _, s := range rotate(srvs, r) {
					fmt.Fprintf(os.Stderr, "bursty: round %d/%d, %s\n", r+1, o.rounds, s.Name)
					ss, err := runBursty(binDir, s, ld, o.bursty, r)
					if err != nil {
						errs = append(errs, err)
						continue
					}
					rep.Sessions = append(rep.Sessions, ss)
				}
			}
			rep.Summary = summarizeSessions(rep.Sessions, names)
			rep.Checks = append(rep.Checks, burstyChecks(rep.Sessions)...)
		case "idle":
			lim, err := raiseNoFile()
			if err != nil {
				return err
			}
			// Each side holds one fd per connection, plus a margin.
			if need := uint64(o.idle) + 200; lim < need {
				rep.IdleSkip = fmt.Sprintf("RLIMIT_NOFILE hard limit %d is below the %d that %d connections need", lim, need, o.idle)
				break
			}
			for r := range o.rounds {
				for _, s := range rotate(srvs, r) {
					fmt.Fprintf(os.Stderr, "idle: round %d/%d, %s\n", r+1, o.rounds, s.Name)
					ir, err := runIdle(binDir, s, o.idle, o.settle, r)
					if err != nil {
						errs = append(errs, err)
						continue
					}
					rep.Idle = append(rep.Idle, ir)
				}
			}
			rep.Checks = append(rep.Checks, idleChecks(rep.Idle)...)
		case "slow":
			for r := range o.rounds {
				for _, s := range rotate(srvs, r) {
					fmt.Fprintf(os.Stderr, "slow: round %d/%d, %s\n", r+1, o.rounds, s.Name)
					sr, err := runSlow(binDir, s, o.slow, r)
					if err != nil {
						errs = append(errs, err)
						continue
					}
					rep.Slow = append(rep.Slow, sr)
				}
			}
		case "pipeline":
			type cfg struct {
				s     server
				loops int
			}
			var cfgs []cfg
			for _, n := range strings.Split(o.pipeSrv, ",") {
				s, ok := findServer(n)
				if !ok {
					return fmt.Errorf("unknown server %q", n)
				}
				s.Pin = o.pinSrv
				cfgs = append(cfgs, cfg{s, 1}, cfg{s, o.pipeLoop})
			}
			for r := range o.rounds {
				for _, c := range rotate(cfgs, r) {
					fmt.Fprintf(os.Stderr, "pipeline: round %d/%d, %s -loops %d\n", r+1, o.rounds, c.s.Name, c.loops)
					pr, err := runPipeline(binDir, c.s, c.loops, pipeLd, o.pipe, r)
					if err != nil {
						errs = append(errs, err)
						continue
					}
					rep.Pipeline = append(rep.Pipeline, pr)
				}
			}
			rep.Checks = append(rep.Checks, pipelineChecks(rep.Pipeline)...)
		default:
			return fmt.Errorf("unknown experiment %q (want bursty, idle, slow or pipeline)", exp)
		}
	}
	if o.smoke {
		fmt.Println("(smoke: sizes far too small for these numbers to mean anything; it checks that everything runs)")
	}
	printAll(rep)
	if o.out != "" {
		if err := writeResults(o, rep); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeResults writes results.json and, for the bursty experiment, the RSS
// chart of its first round.
func writeResults(o options, rep *report) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "results.json"), b, 0o644); err != nil {
		return err
	}
	if len(rep.Sessions) == 0 {
		return nil
	}
	chart := o.chart
	if chart == "" {
		chart = filepath.Join(o.out, "rss.png")
	}
	return rssChart(chart, rep, 0)
}

// pickLoader returns the load generator called name; auto picks
// redis-benchmark when it is on PATH and the Go generator otherwise.
func pickLoader(name string) (loader, error) {
	switch name {
	case "go":
		return goLoad{}, nil
	case "redis-benchmark", "auto":
		path, err := exec.LookPath("redis-benchmark")
		if err == nil {
			return redisBenchmark{path: path}, nil
		}
		if name == "auto" {
			fmt.Fprintln(os.Stderr, "servers: redis-benchmark not found (Debian: apt-get install redis-tools); using the Go load generator")
			return goLoad{}, nil
		}
		return nil, err
	}
	return nil, fmt.Errorf("unknown load generator %q (want redis-benchmark, go or auto)", name)
}

// rotate returns xs rotated left by r, so that each round starts with a
// different server and none always runs first or last.
func rotate[T any](xs []T, r int) []T {
	if len(xs) == 0 {
		return xs
	}
	r %= len(xs)
	return slices.Concat(xs[r:], xs[:r])
}

// printAll prints every table the report has, then the checks.
func printAll(rep *report) {
	printBursty(os.Stdout, rep)
	printLoopRatios(os.Stdout, rep)
	printIdle(os.Stdout, rep)
	printSlow(os.Stdout, rep)
	printPipeline(os.Stdout, rep)
	printChecks(os.Stdout, rep.Checks)
}

// mergeReports reads earlier results.json files and joins them into one
// report whose rounds are all of theirs, renumbered in file order, with
// the medians and checks taken again over all of them. The parameters and
// servers are the first file's; files measured with other parameters are
// refused.
func mergeReports(paths []string) (*report, error) {
	var out *report
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var r report
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if out == nil {
			out = &report{Load: r.Load, Bursty: r.Bursty, ServerSet: r.ServerSet, IdleSkip: r.IdleSkip}
		} else if r.Load != out.Load || !reflect.DeepEqual(r.Bursty, out.Bursty) {
			return nil, fmt.Errorf("%s: measured with other parameters than %s", p, paths[0])
		}
		if out.Command != "" {
			out.Command += "; "
		}
		out.Command += r.Command
		base := 1 + maxRound(out)
		for _, s := range r.Sessions {
			s.Round += base
			out.Sessions = append(out.Sessions, s)
		}
		for _, x := range r.Idle {
			x.Round += base
			out.Idle = append(out.Idle, x)
		}
		for _, x := range r.Slow {
			x.Round += base
			out.Slow = append(out.Slow, x)
		}
		for _, x := range r.Pipeline {
			x.Round += base
			out.Pipeline = append(out.Pipeline, x)
		}
	}
	if out == nil {
		return nil, errors.New("-merge: no files")
	}
	out.Summary = summarizeSessions(out.Sessions, out.ServerSet)
	out.Checks = slices.Concat(burstyChecks(out.Sessions), idleChecks(out.Idle), pipelineChecks(out.Pipeline))
	return out, nil
}

// maxRound is the highest round number in rep, -1 if it has none.
func maxRound(rep *report) int {
	m := -1
	for _, s := range rep.Sessions {
		m = max(m, s.Round)
	}
	for _, x := range rep.Idle {
		m = max(m, x.Round)
	}
	for _, x := range rep.Slow {
		m = max(m, x.Round)
	}
	for _, x := range rep.Pipeline {
		m = max(m, x.Round)
	}
	return m
}
