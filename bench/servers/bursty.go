package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/idlemux/idlemux/internal/procfs"
)

// burstyParams shape the bursty experiment: Bursts runs of Load separated
// by Gap of silence, then Tail of silence before the last readings.
type burstyParams struct {
	Load   loadParams
	Bursts int
	Gap    time.Duration
	Tail   time.Duration
	Sample time.Duration // RSS sampling period
	// Values is how the servers' store keeps a SET's value: "reuse"
	// (over an old value of about its size, in place: no garbage) or
	// "copy" (new memory for every SET: the old value is garbage).
	Values string `json:",omitempty"`
}

// serverArgs are the flags the servers get for p.
func (p burstyParams) serverArgs() []string {
	if p.Values == "copy" {
		return []string{"-copy-values"}
	}
	return nil
}

// span is a stretch of a session, on the sampler's clock.
type span struct {
	Start time.Duration `json:"start_ns"`
	End   time.Duration `json:"end_ns"`
}

// session is one server's run of the bursty experiment.
type session struct {
	Server   string            `json:"server"`
	Round    int               `json:"round"`
	RPS      float64           `json:"rps"`
	P50ms    float64           `json:"p50_ms"`
	P99ms    float64           `json:"p99_ms"`
	Peak     uint64            `json:"peak_rss"`        // the higher of VmHWM at the end and the highest sample (peakOf), bytes
	Gap      uint64            `json:"gap_rss"`         // median of the RSS at the end of each gap
	After    uint64            `json:"after_rss"`       // RSS Tail after the last burst
	CPU      float64           `json:"cpu_s"`           // utime+stime over the whole session
	GC       uint64            `json:"gc_cycles"`       // the server's own count, printed at exit
	Stats    map[string]string `json:"server_stats"`    // everything the server printed at exit
	Tests    []testResult      `json:"tests"`           // every test of every burst
	BurstsAt []span            `json:"bursts"`          // when each burst ran
	Samples  []sample          `json:"samples"`         // RSS over the session
	Startup  uint64            `json:"startup_rss"`     // RSS once ready, before any load
	Loops    int               `json:"loops,omitempty"` // -loops given (0: default)
}

// runBursty starts srv, drives p against it and measures it.
func runBursty(binDir string, srv server, ld loader, p burstyParams, round int) (session, error) {
	c, err := startServer(binDir, srv, 0, p.serverArgs()...)
	if err != nil {
		return session{}, err
	}
	s := session{Server: srv.Name, Round: round}
	smp := startSampler(c.Pid(), p.Sample)
	fail := func(err error) (session, error) {
		smp.finish()
		c.stop()
		return session{}, fmt.Errorf("%s round %d: %w", srv.Name, round, err)
	}
	time.Sleep(200 * time.Millisecond)
	if x, ok := smp.take(); ok {
		s.Startup = x.RSS
	}
	var gaps []float64
	for b := range p.Bursts {
		if b > 0 {
			time.Sleep(p.Gap)
			x, ok := smp.take()
			if !ok {
				return fail(fmt.Errorf("server gone"))
			}
			gaps = append(gaps, float64(x.RSS))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		sp := span{Start: smp.now()}
		res, err := ld.Run(ctx, c.Addr, p.Load)
		sp.End = smp.now()
		cancel()
		if err != nil {
			return fail(err)
		}
		s.Tests = append(s.Tests, res...)
		s.BurstsAt = append(s.BurstsAt, sp)
	}
	time.Sleep(p.Tail)
	x, ok := smp.take()
	if !ok {
		return fail(fmt.Errorf("server gone"))
	}
	s.After = x.RSS
	st, err := procfs.Status(c.Pid())
	if err != nil {
		return fail(err)
	}
	cpu, err := procfs.CPU(c.Pid())
	if err != nil {
		return fail(err)
	}
	s.Samples = smp.finish()
	s.Peak, s.CPU = peakOf(st.Peak, s.Samples), cpu.Seconds()
	stats, err := c.stop()
	if err != nil {
		return session{}, err
	}
	s.Stats = stats
	s.GC, _ = strconv.ParseUint(stats["gc-cycles"], 10, 64)
	s.Gap = uint64(median(gaps))
	s.RPS, s.P50ms, s.P99ms = summarize(s.Tests)
	return s, nil
}

// summarize folds the tests of a session into one rate and two
// percentiles: requests over the time they took (each test's time is its
// requests over its rate), and the median over tests of each test's p50
// and p99 (percentiles of different tests cannot be merged exactly).
func summarize(tests []testResult) (rps, p50, p99 float64) {
	var n, secs float64
	var p50s, p99s []float64
	for _, t := range tests {
		if t.RPS <= 0 {
			continue
		}
		n += float64(t.Requests)
		secs += float64(t.Requests) / t.RPS
		p50s = append(p50s, t.P50ms)
		p99s = append(p99s, t.P99ms)
	}
	if secs > 0 {
		rps = n / secs
	}
	return rps, median(p50s), median(p99s)
}
