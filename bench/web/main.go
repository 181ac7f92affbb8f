package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/internal/procfs"
)

// options are the command's flags.
type options struct {
	configs []config
	gaps    []time.Duration
	rounds  int
	bursts  int
	burst   time.Duration
	steady  time.Duration
	conns   int
	items   int
	out     string
	bin     string
	day     []dayStep // the day schedule; nil: the gap sessions
	servers []string  // the day's servers
	size    int       // the gRPC calls' and kv values' bytes
	kvRate  int       // requests a second a kv burst is sized for
	kvKeys  int       // keys the kv bursts SET and GET
	procs   int       // the servers' GOMAXPROCS; 0 leaves the runtime's default
}

// dayConfigs are the day schedule's configurations unless -configs says.
const dayConfigs = "on,off,gogc=50,gogc=25,memlimit=20,tuner,freeos"

func main() {
	var o options
	configs := flag.String("configs", "on,off,gogc=50,gogc=25", "`list` of server configurations: on, off (the stepper), budget=N (on, examples/web at WithBudget N %), gogc=N (off, GOGC=N), memlimit=N (off, GOMEMLIMIT=N MiB), tuner or freeos (off, the server's -baseline)")
	gaps := flag.String("gaps", "150ms,1s,5s", "`list` of quiet gaps after each burst")
	flag.IntVar(&o.rounds, "rounds", 3, "interleaved `rounds`")
	flag.IntVar(&o.bursts, "bursts", 4, "bursts per session")
	flag.DurationVar(&o.burst, "burst", time.Second, "length of a burst (whole seconds: wrk's unit)")
	flag.DurationVar(&o.steady, "steady", 5*time.Second, "length of the steady session, one burst without gaps (0: none)")
	flag.IntVar(&o.conns, "conns", 16, "wrk's connections")
	flag.IntVar(&o.items, "n", 1000, "records per response (GET /items?n=N)")
	flag.StringVar(&o.out, "out", "bench/out/web", "`directory` for results.json and the charts")
	flag.StringVar(&o.bin, "web", "", "examples/web `binary` (default: built from this module)")
	day := flag.String("day", "", "run the day `schedule` instead of the gap sessions: long, medium, short, or steps burst@conns+gap,... (see day.go); its configurations default to "+dayConfigs)
	servers := flag.String("servers", "web,grpc", "`list` of servers for -day: web (examples/web under wrk), grpc (grpcidle's example server under its example/load),\n"+
		"kv (examples/kv under redis-benchmark)")
	flag.IntVar(&o.size, "size", 4096, "`bytes` in each gRPC call of -day, echoed back, and in each kv value")
	flag.IntVar(&o.kvRate, "kv-rate", 40000, "requests a `second` a kv burst is sized for: a burst of d is d×rate requests\n"+
		"(redis-benchmark runs a count, not a duration)")
	flag.IntVar(&o.kvKeys, "kv-keys", 1000, "`keys` the kv bursts SET and GET at random")
	flag.IntVar(&o.procs, "procs", 0, "the servers' GOMAXPROCS (`n`; 0: the runtime's default, one per CPU); the clients keep theirs")
	replot := flag.Bool("replot", false, "measure nothing: print the table and draw the charts of -out's results.json (-steady: its steady session's length, if results.json does not say)")
	flag.Parse()
	if *replot {
		if err := redraw(o.out, o.steady); err != nil {
			fmt.Fprintln(os.Stderr, "web:", err)
			os.Exit(1)
		}
		return
	}
	if *day != "" {
		steps, err := parseSchedule(*day)
		if err != nil {
			fmt.Fprintln(os.Stderr, "web:", err)
			os.Exit(2)
		}
		o.day, o.servers = steps, strings.Split(*servers, ",")
		set := false
		flag.Visit(func(f *flag.Flag) { set = set || f.Name == "configs" })
		if !set {
			*configs = dayConfigs
		}
	}
	if err := o.parseLists(*configs, *gaps); err != nil || flag.NArg() > 0 || o.rounds < 1 || o.bursts < 1 || o.burst < time.Second ||
		o.size < 1 || o.kvRate < 1 || o.kvKeys < 1 || o.procs < 0 {
		if err != nil {
			fmt.Fprintln(os.Stderr, "web:", err)
		}
		flag.Usage()
		os.Exit(2)
	}
	for i := range o.configs {
		o.configs[i].Procs = o.procs
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer stop()
	if err := run(ctx, &o); err != nil {
		fmt.Fprintln(os.Stderr, "web:", err)
		os.Exit(1)
	}
}

func (o *options) parseLists(configs, gaps string) error {
	haveOff := false
	for _, s := range strings.Split(configs, ",") {
		c, err := parseConfig(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		haveOff = haveOff || c.Name == "off"
		o.configs = append(o.configs, c)
	}
	if !haveOff {
		return fmt.Errorf("the configurations must include off: the ratios are to it")
	}
	for _, s := range strings.Split(gaps, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d <= 0 {
			return fmt.Errorf("bad gap %q", s)
		}
		o.gaps = append(o.gaps, d)
	}
	return nil
}

func run(ctx context.Context, o *options) error {
	if o.day != nil {
		return runDay(ctx, o)
	}
	if _, err := exec.LookPath("wrk"); err != nil {
		return fmt.Errorf("wrk not found (Debian: apt-get install wrk): %v", err)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	if o.bin == "" {
		o.bin = filepath.Join(o.out, "web-server")
		build := exec.CommandContext(ctx, "go", "build", "-o", o.bin, "github.com/idlemux/idlemux/examples/web")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building examples/web: %v", err)
		}
	}
	rep := &report{Conns: o.conns, Items: o.items, Burst: o.burst, Bursts: o.bursts, Rounds: o.rounds, Steady: o.steady,
		Start: time.Now(), Load1Before: loadAverage()}
	for _, c := range o.configs {
		rep.Configs = append(rep.Configs, c.Name)
	}
	rep.Gaps = o.gaps
	for r := range o.rounds {
		for _, gap := range o.gaps {
			for i := range o.configs {
				c := o.configs[(i+r)%len(o.configs)] // rotated: no configuration always first
				fmt.Fprintf(os.Stderr, "round %d/%d, gap %v, %s\n", r+1, o.rounds, gap, c.Name)
				s, err := runSession(ctx, o, c, gap, o.bursts, o.burst)
				if err != nil {
					return err
				}
				s.Round = r
				rep.Sessions = append(rep.Sessions, s)
			}
		}
		if o.steady > 0 {
			for i := range o.configs {
				c := o.configs[(i+r)%len(o.configs)]
				fmt.Fprintf(os.Stderr, "round %d/%d, steady %v, %s\n", r+1, o.rounds, o.steady, c.Name)
				s, err := runSession(ctx, o, c, 0, 1, o.steady)
				if err != nil {
					return err
				}
				s.Round = r
				rep.Sessions = append(rep.Sessions, s)
			}
		}
	}
	rep.Took = time.Since(rep.Start)
	rep.Load1After = loadAverage()
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "results.json"), b, 0o644); err != nil {
		return err
	}
	printReport(os.Stdout, rep, rep.Steady)
	return drawCharts(o.out, rep)
}

// drawCharts draws the RSS chart of every gap length into dir.
func drawCharts(dir string, rep *report) error {
	for _, gap := range rep.Gaps {
		path := filepath.Join(dir, "web-rss-"+gap.String()+".png")
		if err := rssChart(path, rep, gap); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote", path)
	}
	return nil
}

// redraw prints the table and draws the charts of dir's results.json.
func redraw(dir string, steady time.Duration) error {
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return err
	}
	if rep.Steady == 0 { // written before the report said
		rep.Steady = steady
	}
	printReport(os.Stdout, &rep, rep.Steady)
	return drawCharts(dir, &rep)
}

// A session is one server process under one configuration and gap.
type session struct {
	Config  string        `json:"config"`
	Gap     time.Duration `json:"gap_ns"` // 0: the steady session
	Round   int           `json:"round"`
	PreRSS  uint64        `json:"pre_rss"`
	Bursts  []burst       `json:"bursts"`
	Samples []sample      `json:"samples"`
	Summary string        `json:"summary"` // the server's line at exit
}

// A burst is one wrk run and the gap after it.
type burst struct {
	Start time.Duration `json:"start_ns"` // since the session began
	End   time.Duration `json:"end_ns"`
	wrkResult
	CPU time.Duration `json:"cpu_ns"` // the server's, over the burst and the gap after it
	// After is the RSS over the pre-load RSS 100 ms, 1 s and 5 s after
	// the burst (-1: the gap is shorter).
	After [3]int64 `json:"after"`
	// Cycles and Releases are the server's GC cycles and releases over
	// the burst and the gap after it.
	Cycles   uint64 `json:"cycles"`
	Releases uint64 `json:"releases"`
	// ReleasesInBurst and CyclesOurs are the stepper's releases and the
	// cycles it ran from the burst's start to its end.
	ReleasesInBurst uint64 `json:"releases_in_burst"`
	CyclesOurs      uint64 `json:"cycles_ours"`
}

// afterTimes are the moments after a burst at which RSS is read.
var afterTimes = [3]time.Duration{100 * time.Millisecond, time.Second, 5 * time.Second}

// sample is one RSS reading, at T since the session began.
type sample struct {
	T   time.Duration `json:"t_ns"`
	RSS uint64        `json:"rss"`
}

// runSession runs one server through n bursts of length d, each followed by
// gap.
func runSession(ctx context.Context, o *options, c config, gap time.Duration, n int, d time.Duration) (s session, err error) {
	s = session{Config: c.Name, Gap: gap}
	srv, err := startServer(ctx, webTargetFor(o.items), o.bin, c)
	if err != nil {
		return s, err
	}
	start := time.Now()
	stopSampling := sampleRSS(srv.pid, 20*time.Millisecond, start)
	defer func() {
		s.Samples = stopSampling()
		s.Summary = srv.stop()
	}()

	time.Sleep(300 * time.Millisecond) // settled, before any load
	if s.PreRSS, err = readRSS(srv.pid); err != nil {
		return s, err
	}
	url := fmt.Sprintf("%s/items?n=%d", srv.url, o.items)
	prev, err := srv.stats()
	if err != nil {
		return s, err
	}
	cpu0, err := procfs.CPU(srv.pid)
	if err != nil {
		return s, err
	}
	for range n {
		b := burst{Start: time.Since(start)}
		res, err := runWrk(ctx, url, o.conns, d)
		if err != nil {
			return s, err
		}
		b.wrkResult = res
		b.End = time.Since(start)
		// At once, before the quiet period is over: what the stepper
		// did during the burst itself.
		during, err := srv.stats()
		if err != nil {
			return s, err
		}
		b.CyclesOurs = during.CyclesInline - prev.CyclesInline
		b.ReleasesInBurst = during.Releases - prev.Releases
		for i, at := range afterTimes {
			b.After[i] = -1
			if gap > 0 && at > gap || gap == 0 && i > 0 {
				continue
			}
			time.Sleep(time.Until(start.Add(b.End + at)))
			rss, err := readRSS(srv.pid)
			if err != nil {
				return s, err
			}
			b.After[i] = int64(rss) - int64(s.PreRSS)
		}
		time.Sleep(time.Until(start.Add(b.End + gap)))
		st, err := srv.stats()
		if err != nil {
			return s, err
		}
		cpu, err := procfs.CPU(srv.pid)
		if err != nil {
			return s, err
		}
		b.CPU, cpu0 = cpu-cpu0, cpu
		b.Cycles, b.Releases = st.GCCycles-prev.GCCycles, st.Releases-prev.Releases
		prev = st
		s.Bursts = append(s.Bursts, b)
		if ctx.Err() != nil {
			return s, ctx.Err()
		}
	}
	return s, nil
}

// sampleRSS reads process pid's RSS every period, stamped with the time
// since start, until the returned stop is called; stop returns the
// samples.
func sampleRSS(pid int, period time.Duration, start time.Time) (stop func() []sample) {
	var samples []sample
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			if rss, err := readRSS(pid); err == nil {
				samples = append(samples, sample{time.Since(start), rss})
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() []sample {
		close(done)
		wg.Wait()
		return samples
	}
}

// loadAverage is the one-minute load average, or -1.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var l float64
	if _, err := fmt.Sscanf(string(b), "%f", &l); err != nil {
		return -1
	}
	return l
}
