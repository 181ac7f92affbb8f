package main

import (
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/idlemux/idlemux/internal/procfs"
	"github.com/idlemux/idlemux/internal/rsschart"
)

// A dayStep is one burst of a day's schedule and the quiet after it.
type dayStep struct {
	Burst time.Duration `json:"burst_ns"`
	Conns int           `json:"conns"`
	Gap   time.Duration `json:"gap_ns"`
}

// The schedules -day names. long goes past the runtime's forced
// collection (two minutes) in one of its gaps; short is for CI.
var daySchedules = map[string]string{
	"long":   "2s@32+1s,4s@16+5s,1s@64+20s,3s@32+150s,2s@8+10s,2s@32+3s",
	"medium": "2s@32+1s,4s@16+5s,1s@64+20s,2s@8+10s,2s@32+3s",
	"short":  "1s@16+1s,1s@32+2s",
}

// parseSchedule reads a schedule's name or its steps, each burst@conns+gap
// (2s@32+5s: 2 s of load from 32 clients, then 5 s of quiet). Bursts are
// whole seconds, wrk's unit.
func parseSchedule(s string) ([]dayStep, error) {
	if named, ok := daySchedules[s]; ok {
		s = named
	}
	var steps []dayStep
	for _, f := range strings.Split(s, ",") {
		burst, rest, ok1 := strings.Cut(strings.TrimSpace(f), "@")
		conns, gap, ok2 := strings.Cut(rest, "+")
		var st dayStep
		var err1, err2, err3 error
		st.Burst, err1 = time.ParseDuration(burst)
		st.Conns, err2 = strconv.Atoi(conns)
		st.Gap, err3 = time.ParseDuration(gap)
		if !ok1 || !ok2 || err1 != nil || err2 != nil || err3 != nil || st.Burst < time.Second || st.Burst%time.Second != 0 ||
			st.Conns < 1 || st.Gap <= 0 {
			return nil, fmt.Errorf("bad schedule step %q: want burst@conns+gap, a burst of whole seconds, as in 2s@32+5s, or one of long, medium, short", f)
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// dayReport is what a day run measured; day.json holds it.
type dayReport struct {
	Schedule []dayStep     `json:"schedule"`
	Servers  []string      `json:"servers"`
	Configs  []string      `json:"configs"`
	Rounds   int           `json:"rounds"`
	Procs    int           `json:"procs,omitempty"` // the servers' GOMAXPROCS; 0: the default
	Start    time.Time     `json:"start"`
	Took     time.Duration `json:"took_ns"`
	Sessions []daySession  `json:"sessions"`
}

// A daySession is one server process through the whole schedule.
type daySession struct {
	Server  string        `json:"server"`
	Config  string        `json:"config"`
	Round   int           `json:"round"`
	PreRSS  uint64        `json:"pre_rss"`
	Steps   []dayResult   `json:"steps"`
	Samples []sample      `json:"samples"`
	CPU     time.Duration `json:"cpu_ns"` // the server's, from the first burst to the end
	Summary string        `json:"summary"`
}

// A dayResult is what one step measured.
type dayResult struct {
	Start time.Duration `json:"start_ns"` // the burst's, since the session began
	End   time.Duration `json:"end_ns"`
	wrkResult
	// GapEnd is the RSS over the pre-load RSS at the end of the quiet.
	GapEnd int64 `json:"gap_end"`
}

// runDay runs every server of o through the schedule under every
// configuration, interleaved, rounds times, and reports.
func runDay(ctx context.Context, o *options) error {
	dir := filepath.Join(o.out, "day")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	targets, bins, err := buildTargets(ctx, o, dir)
	if err != nil {
		return err
	}
	rep := &dayReport{Schedule: o.day, Rounds: o.rounds, Procs: o.procs, Start: time.Now()}
	for _, t := range targets {
		rep.Servers = append(rep.Servers, t.Name)
	}
	for _, c := range o.configs {
		rep.Configs = append(rep.Configs, c.Name)
	}
	var total time.Duration
	for _, st := range o.day {
		total += st.Burst + st.Gap
	}
	fmt.Fprintf(os.Stderr, "day: %v a session, %d sessions\n", total, o.rounds*len(targets)*len(o.configs))
	for r := range o.rounds {
		for ti, t := range targets {
			for i := range o.configs {
				c := o.configs[(i+r)%len(o.configs)]
				fmt.Fprintf(os.Stderr, "round %d/%d, %s, %s\n", r+1, o.rounds, t.Name, c.Name)
				s, err := runDaySession(ctx, t, bins[ti], c, o.day)
				if err != nil {
					return fmt.Errorf("%s, %s: %v", t.Name, c.Name, err)
				}
				s.Round = r
				rep.Sessions = append(rep.Sessions, s)
			}
		}
	}
	rep.Took = time.Since(rep.Start)
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "day.json"), b, 0o644); err != nil {
		return err
	}
	printDay(os.Stdout, rep)
	return drawDay(dir, rep)
}

// buildTargets builds the servers o names (and the gRPC client) into dir.
func buildTargets(ctx context.Context, o *options, dir string) ([]target, []string, error) {
	var ts []target
	var bins []string
	for _, name := range o.servers {
		switch name {
		case "web":
			if _, err := exec.LookPath("wrk"); err != nil {
				return nil, nil, fmt.Errorf("wrk not found (Debian: apt-get install wrk): %v", err)
			}
			bin := o.bin
			if bin == "" {
				bin = filepath.Join(dir, "web-server")
				if err := goBuild(ctx, "", bin, "./examples/web"); err != nil {
					return nil, nil, err
				}
			}
			ts, bins = append(ts, webTargetFor(o.items)), append(bins, bin)
		case "grpc":
			// The gRPC example is a module of its own (grpcidle), so
			// that the core module keeps its few dependencies.
			srv, load := filepath.Join(dir, "grpc-server"), filepath.Join(dir, "grpc-load")
			if err := goBuild(ctx, "grpcidle", srv, "./example/server"); err != nil {
				return nil, nil, err
			}
			if err := goBuild(ctx, "grpcidle", load, "./example/load"); err != nil {
				return nil, nil, err
			}
			ts, bins = append(ts, grpcTarget(load, o.size)), append(bins, srv)
		case "kv":
			if _, err := exec.LookPath("redis-benchmark"); err != nil {
				return nil, nil, fmt.Errorf("redis-benchmark not found (Debian: apt-get install redis-tools): %v", err)
			}
			bin := filepath.Join(dir, "kv-server")
			if err := goBuild(ctx, "", bin, "./examples/kv"); err != nil {
				return nil, nil, err
			}
			ts, bins = append(ts, kvTarget(o.kvRate, o.size, o.kvKeys)), append(bins, bin)
		default:
			return nil, nil, fmt.Errorf("unknown server %q: want web, grpc or kv", name)
		}
	}
	return ts, bins, nil
}

// goBuild builds pkg of the module in sub (a directory under this
// module's root; "" for this module) into out.
func goBuild(ctx context.Context, sub, out, pkg string) error {
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if out, err = filepath.Abs(out); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-C", filepath.Join(root, sub), "-o", out, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s in %s: %v", pkg, filepath.Join(root, sub), err)
	}
	return nil
}

// grpcTarget is grpcidle's example server, driven by its example/load
// (bin) with unary calls of size bytes.
func grpcTarget(bin string, size int) target {
	return target{Name: "grpc", ready: "server: serving on ", load: func(ctx context.Context, addr string, conns int, d time.Duration) (wrkResult, error) {
		ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, "-addr", addr, "-c", strconv.Itoa(conns), "-d", d.String(),
			"-size", strconv.Itoa(size), "-json").Output()
		if err != nil {
			return wrkResult{}, fmt.Errorf("grpc load: %v", err)
		}
		var r struct {
			Calls       int           `json:"calls"`
			CallsPerSec float64       `json:"calls_per_sec"`
			P50         time.Duration `json:"p50_ns"`
			P99         time.Duration `json:"p99_ns"`
			Errors      int           `json:"errors"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			return wrkResult{}, fmt.Errorf("grpc load: %q: %v", out, err)
		}
		return wrkResult{P50: r.P50, P99: r.P99, Requests: r.Calls, ReqPerSec: r.CallsPerSec, Errors: r.Errors}, nil
	}}
}

// runDaySession runs one server through the schedule, sampling its RSS
// every 50 ms.
func runDaySession(ctx context.Context, t target, bin string, c config, steps []dayStep) (s daySession, err error) {
	s = daySession{Server: t.Name, Config: c.Name}
	srv, err := startServer(ctx, t, bin, c)
	if err != nil {
		return s, err
	}
	start := time.Now()
	stopSampling := sampleRSS(srv.pid, 50*time.Millisecond, start)
	defer func() {
		s.Samples = stopSampling()
		s.Summary = srv.stop()
	}()
	time.Sleep(300 * time.Millisecond) // settled, before any load
	if s.PreRSS, err = readRSS(srv.pid); err != nil {
		return s, err
	}
	cpu0, err := procfs.CPU(srv.pid)
	if err != nil {
		return s, err
	}
	for _, st := range steps {
		r := dayResult{Start: time.Since(start)}
		if r.wrkResult, err = t.load(ctx, srv.url, st.Conns, st.Burst); err != nil {
			return s, err
		}
		r.End = time.Since(start)
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(time.Until(start.Add(r.End + st.Gap))):
		}
		rss, err := readRSS(srv.pid)
		if err != nil {
			return s, err
		}
		r.GapEnd = int64(rss) - int64(s.PreRSS)
		s.Steps = append(s.Steps, r)
	}
	cpu, err := procfs.CPU(srv.pid)
	if err != nil {
		return s, err
	}
	s.CPU = cpu - cpu0
	return s, nil
}

// excessSeconds is the RSS over the pre-load RSS integrated over the
// schedule, in MiB·s: what the server held beyond its start-up, and for
// how long.
func (s *daySession) excessSeconds() float64 {
	if len(s.Steps) == 0 {
		return 0
	}
	from, to := s.Steps[0].Start, s.Samples[len(s.Samples)-1].T
	var sum float64
	for i := 1; i < len(s.Samples); i++ {
		a, b := s.Samples[i-1], s.Samples[i]
		if a.T < from || b.T > to {
			continue
		}
		ex := float64(int64(a.RSS)-int64(s.PreRSS)) / (1 << 20)
		sum += max(ex, 0) * (b.T - a.T).Seconds()
	}
	return sum
}

// dayRow is one configuration's measures in one session.
type dayRow struct {
	excess   float64   // MiB·s
	gapEnd   []float64 // MiB over start-up, a step each
	p99, rps []float64 // a step each
	cpuReq   float64   // µs of the server's CPU a request
	errors   int
}

func dayRowOf(s *daySession) dayRow {
	r := dayRow{excess: s.excessSeconds()}
	var reqs int
	for _, st := range s.Steps {
		r.gapEnd = append(r.gapEnd, float64(st.GapEnd)/(1<<20))
		r.p99 = append(r.p99, float64(st.P99))
		r.rps = append(r.rps, st.ReqPerSec)
		reqs += st.Requests
		r.errors += st.Errors
	}
	if reqs > 0 {
		r.cpuReq = float64(s.CPU.Microseconds()) / float64(reqs)
	}
	return r
}

// session finds the session of server, config and round.
func (rep *dayReport) session(server, config string, round int) *daySession {
	for i := range rep.Sessions {
		s := &rep.Sessions[i]
		if s.Server == server && s.Config == config && s.Round == round {
			return s
		}
	}
	return nil
}

// printDay prints a table per server: each configuration's medians over
// rounds, and its ratios to off as medians of the rounds' ratios (each
// step's against the same round's step, for p99 and req/s).
func printDay(w io.Writer, rep *dayReport) {
	var total time.Duration
	steps := make([]string, len(rep.Schedule))
	for i, st := range rep.Schedule {
		total += st.Burst + st.Gap
		steps[i] = fmt.Sprintf("%v@%d+%v", st.Burst, st.Conns, st.Gap)
	}
	procs := ""
	if rep.Procs > 0 {
		procs = fmt.Sprintf(", servers at GOMAXPROCS=%d", rep.Procs)
	}
	fmt.Fprintf(w, "day schedule (%v: %s)%s, %d rounds, took %v; medians over rounds, ×off the median of the rounds' ratios\n",
		total, strings.Join(steps, ","), procs, rep.Rounds, rep.Took.Round(time.Second))
	for _, server := range rep.Servers {
		fmt.Fprintf(w, "\n%s\n\n", server)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		head := "config\tRSS·s over start-up\t×off\tgap ends (MiB over start-up)\tmedian ×off\tworst ×off\tp99 ×off\treq/s ×off\tCPU/req\t×off\terrors\t"
		fmt.Fprintln(tw, head)
		for _, name := range rep.Configs {
			var excess, cpu, exR, gapR, worstR, p99R, rpsR, cpuR []float64
			gaps := make([][]float64, len(rep.Schedule))
			errs := 0
			for round := range rep.Rounds {
				s, off := rep.session(server, name, round), rep.session(server, "off", round)
				if s == nil || len(s.Steps) != len(rep.Schedule) {
					continue
				}
				r := dayRowOf(s)
				excess, cpu = append(excess, r.excess), append(cpu, r.cpuReq)
				errs += r.errors
				for i, g := range r.gapEnd {
					gaps[i] = append(gaps[i], g)
				}
				if off == nil || len(off.Steps) != len(rep.Schedule) {
					continue
				}
				o := dayRowOf(off)
				exR, cpuR = append(exR, r.excess/o.excess), append(cpuR, r.cpuReq/o.cpuReq)
				var gr, pr, rr []float64
				for i := range r.gapEnd {
					gr = append(gr, max(r.gapEnd[i], 0)/max(o.gapEnd[i], 0.1))
					pr = append(pr, r.p99[i]/o.p99[i])
					rr = append(rr, r.rps[i]/o.rps[i])
				}
				gapR, worstR = append(gapR, median(gr)), append(worstR, slices.Max(gr))
				p99R, rpsR = append(p99R, median(pr)), append(rpsR, median(rr))
			}
			if len(excess) == 0 {
				continue
			}
			ends := make([]string, len(gaps))
			for i, g := range gaps {
				ends[i] = fmt.Sprintf("%.1f", median(g))
			}
			ratio := func(xs []float64) string {
				if len(xs) == 0 {
					return "-"
				}
				return fmt.Sprintf("%.2f", median(xs))
			}
			fmt.Fprintf(tw, "%s\t%.0f MiB·s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f µs\t%s\t%d\t\n", name, median(excess), ratio(exR),
				strings.Join(ends, " "), ratio(gapR), ratio(worstR), ratio(p99R), ratio(rpsR), median(cpu), ratio(cpuR), errs)
		}
		tw.Flush()
	}
}

// dayColor extends configColor to the day's configurations.
var dayColor = map[string]color.Color{
	"tuner":  color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	"freeos": color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	"budget": color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
}

// drawDay draws, for every server, the RSS of every configuration's
// first-round session over the schedule, the bursts shaded.
func drawDay(dir string, rep *dayReport) error {
	for _, server := range rep.Servers {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: RSS through the day schedule (first round; shaded: bursts)", server)
		p.X.Label.Text = "seconds since the server started"
		p.Y.Label.Text = "RSS (MiB)"
		p.Y.Min = 0
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		var top float64
		shaded := false
		for _, name := range rep.Configs {
			s := rep.session(server, name, 0)
			if s == nil || len(s.Samples) == 0 {
				continue
			}
			if !shaded {
				shaded = true
				for _, st := range s.Steps {
					if err := rsschart.Shade(p, st.Start, st.End); err != nil {
						return err
					}
				}
			}
			l, high, err := rsschart.Line(len(s.Samples), func(i int) (time.Duration, uint64) {
				return s.Samples[i].T, s.Samples[i].RSS
			})
			if err != nil {
				return err
			}
			top = max(top, high)
			l.Color = color.Black
			base, _, _ := strings.Cut(name, "=")
			if c, ok := configColor[name]; ok {
				l.Color = c
			} else if c, ok := dayColor[base]; ok {
				l.Color = c
			} else if base == "memlimit" {
				l.Color = color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}
				rsschart.Dash(l)
			}
			p.Add(l)
			p.Legend.Add(name, l)
		}
		p.Y.Max = top * 1.3
		path := filepath.Join(dir, "day-"+server+".png")
		if err := rsschart.WritePNG(p, path, 10*vg.Inch, 4.5*vg.Inch); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote", path)
	}
	return nil
}
