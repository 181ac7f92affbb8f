package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// report is everything one run of the driver measured; it is written as
// results.json.
type report struct {
	Load      string       `json:"load"` // "redis-benchmark" or "go"
	Command   string       `json:"command"`
	Bursty    burstyParams `json:"bursty_params"`
	Sessions  []session    `json:"sessions,omitempty"`
	Summary   []summary    `json:"summary,omitempty"`
	Idle      []idleResult `json:"idle,omitempty"`
	IdleSkip  string       `json:"idle_skipped,omitempty"`
	Slow      []slowResult `json:"slow,omitempty"`
	Pipeline  []pipeResult `json:"pipeline,omitempty"`
	Checks    []check      `json:"checks,omitempty"`
	ServerSet []string     `json:"servers"`
}

// summary is a server's medians over the rounds of the bursty experiment.
type summary struct {
	Server string  `json:"server"`
	Rounds int     `json:"rounds"`
	RPS    float64 `json:"rps"`
	P50ms  float64 `json:"p50_ms"`
	P99ms  float64 `json:"p99_ms"`
	Peak   float64 `json:"peak_rss"`
	Gap    float64 `json:"gap_rss"`
	After  float64 `json:"after_rss"`
	CPU    float64 `json:"cpu_s"`
	GC     float64 `json:"gc_cycles"`
	Loops  string  `json:"loops"` // what the server said it ran, "" if not
}

// check is one of the "done when" comparisons: the median over
// rounds of a per-round ratio, and whether it is within its bound.
type check struct {
	What   string  `json:"what"`
	Ratio  float64 `json:"ratio"`
	Bound  string  `json:"bound"`
	OK     bool    `json:"ok"`
	Rounds int     `json:"rounds"`
}

// summarizeSessions takes every server's medians over its rounds, in the
// order of names.
func summarizeSessions(ss []session, names []string) []summary {
	var out []summary
	for _, name := range names {
		var rps, p50, p99, peak, gap, after, cpu, gc []float64
		loops := ""
		for _, s := range ss {
			if s.Server != name {
				continue
			}
			loops = s.Stats["loops"]
			rps = append(rps, s.RPS)
			p50 = append(p50, s.P50ms)
			p99 = append(p99, s.P99ms)
			peak = append(peak, float64(s.Peak))
			gap = append(gap, float64(s.Gap))
			after = append(after, float64(s.After))
			cpu = append(cpu, s.CPU)
			gc = append(gc, float64(s.GC))
		}
		if len(rps) == 0 {
			continue
		}
		out = append(out, summary{Server: name, Rounds: len(rps), RPS: median(rps), P50ms: median(p50),
			P99ms: median(p99), Peak: median(peak), Gap: median(gap), After: median(after),
			CPU: median(cpu), GC: median(gc), Loops: loops})
	}
	return out
}

// rival reports whether a server is one netloop is held against: any
// configuration of gnet or nbio.
func rival(name string) bool {
	return strings.HasPrefix(name, "gnet") || strings.HasPrefix(name, "nbio")
}

// ratioFn is one measure of a session that the checks compare.
type ratioFn struct {
	what   string
	get    func(session) float64
	higher bool // whether more is better (then the best rival is the max)
	bound  float64
}

// burstyChecks compares each netloop configuration, round by round, with
// the best configuration of gnet and nbio in the same round, and takes
// medians.
func burstyChecks(ss []session) []check {
	byRound := map[int]map[string]session{}
	for _, s := range ss {
		if byRound[s.Round] == nil {
			byRound[s.Round] = map[string]session{}
		}
		byRound[s.Round][s.Server] = s
	}
	rps := ratioFn{"req/s", func(s session) float64 { return s.RPS }, true, 0.95}
	p99 := ratioFn{"p99", func(s session) float64 { return s.P99ms }, false, 1.1}
	peak := ratioFn{"peak RSS", func(s session) float64 { return float64(s.Peak) }, false, 0.75}
	after := ratioFn{"RSS 3 s after the load", func(s session) float64 { return float64(s.After) }, false, 0.6}
	plan := []struct {
		server string
		fns    []ratioFn
	}{
		{"netloop-step", []ratioFn{rps, p99, peak, after}},
		{"netloop-step-1", []ratioFn{rps, p99, peak, after}},
		{"netloop-step-2", []ratioFn{rps, p99}},
		{"netloop", []ratioFn{rps, p99}},
		{"netloop-1", []ratioFn{rps, p99}},
		{"netloop-2", []ratioFn{rps, p99}},
	}
	var out []check
	for _, pl := range plan {
		for _, f := range pl.fns {
			var ratios []float64
			for _, r := range byRound {
				me, ok := r[pl.server]
				if !ok {
					continue
				}
				best, found := 0.0, false
				for name, s := range r {
					if !rival(name) {
						continue
					}
					v := f.get(s)
					if !found || (f.higher && v > best) || (!f.higher && v < best) {
						best, found = v, true
					}
				}
				if found && best > 0 {
					ratios = append(ratios, f.get(me)/best)
				}
			}
			if len(ratios) == 0 {
				continue
			}
			out = append(out, f.check(fmt.Sprintf("%s %s / best of gnet, nbio", pl.server, f.what), median(ratios), len(ratios)))
		}
	}
	// The same for the rate and the tail as the issue words them: each
	// server's median over its rounds against the best rival's median.
	// The per-round form above is harsher: the best of three noisy
	// numbers in a round is biased upward.
	medians := map[string]map[string]float64{} // server -> what -> median
	rounds := map[string]int{}
	for _, s := range ss {
		rounds[s.Server]++
	}
	for name := range rounds {
		medians[name] = map[string]float64{}
		for _, f := range []ratioFn{rps, p99} {
			var xs []float64
			for _, s := range ss {
				if s.Server == name {
					xs = append(xs, f.get(s))
				}
			}
			medians[name][f.what] = median(xs)
		}
	}
	for _, pl := range plan {
		if _, ok := medians[pl.server]; !ok {
			continue
		}
		for _, f := range []ratioFn{rps, p99} {
			best, found := 0.0, false
			for name, m := range medians {
				if v := m[f.what]; rival(name) && (!found || (f.higher && v > best) || (!f.higher && v < best)) {
					best, found = v, true
				}
			}
			if found && best > 0 {
				out = append(out, f.check(fmt.Sprintf("%s median %s / best median of gnet, nbio", pl.server, f.what),
					medians[pl.server][f.what]/best, rounds[pl.server]))
			}
		}
	}
	return out
}

// check makes the check called what of ratio m over n rounds against f's
// bound.
func (f ratioFn) check(what string, m float64, n int) check {
	c := check{What: what, Ratio: m, Rounds: n}
	if f.higher {
		c.Bound, c.OK = fmt.Sprintf(">= %.2f", f.bound), m >= f.bound
	} else {
		c.Bound, c.OK = fmt.Sprintf("<= %.2f", f.bound), m <= f.bound
	}
	return c
}

// mib formats bytes as MiB.
func mib(b float64) string { return fmt.Sprintf("%.1f", b/(1<<20)) }

// printBursty prints the bursty experiment's medians as a table.
func printBursty(w io.Writer, rep *report) {
	if len(rep.Summary) == 0 {
		return
	}
	values := rep.Bursty.Values
	if values == "" {
		values = "copy" // every SET copied, before -values
	}
	fmt.Fprintf(w, "bursty SET/GET load (%s): %d bursts of %d requests per test, -c %d -d %d -r %d, values %s, %v gaps, %v tail; medians of %d rounds\n",
		rep.Load, rep.Bursty.Bursts, rep.Bursty.Load.Requests, rep.Bursty.Load.Clients, rep.Bursty.Load.Size,
		rep.Bursty.Load.Keys, values, rep.Bursty.Gap, rep.Bursty.Tail, rep.Summary[0].Rounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\tloops\treq/s\tp50 ms\tp99 ms\tpeak MiB\tgap MiB\t+3s MiB\tCPU s\tGC\t")
	for _, s := range rep.Summary {
		loops := s.Loops
		if loops == "0" || loops == "" {
			loops = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.3f\t%.3f\t%s\t%s\t%s\t%.2f\t%.0f\t\n", s.Server, loops, s.RPS, s.P50ms, s.P99ms,
			mib(s.Peak), mib(s.Gap), mib(s.After), s.CPU, s.GC)
	}
	tw.Flush()
}

// printChecks prints the done-when comparisons.
func printChecks(w io.Writer, cs []check) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nagainst the issue (medians of per-round ratios; \"median ... / best median\": ratios of medians):")
	for _, c := range cs {
		verdict := "ok"
		if !c.OK {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "  %-60s %6.2f  (%s)  %s\n", c.What, c.Ratio, c.Bound, verdict)
	}
}

// printIdle prints the idle-connection medians.
func printIdle(w io.Writer, rep *report) {
	if rep.IdleSkip != "" {
		fmt.Fprintf(w, "\nidle connections: skipped: %s\n", rep.IdleSkip)
	}
	if len(rep.Idle) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%d idle connections, each served one PING (medians over rounds)\n", rep.Idle[0].Conns)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\tbefore MiB\theld MiB\tpeak MiB\tbytes/conn\t")
	for _, name := range rep.ServerSet {
		var before, held, peak, per []float64
		for _, r := range rep.Idle {
			if r.Server == name {
				before, held = append(before, float64(r.Before)), append(held, float64(r.Held))
				peak, per = append(peak, float64(r.Peak)), append(per, r.PerConn)
			}
		}
		if len(per) > 0 {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f\t\n", name, mib(median(before)), mib(median(held)), mib(median(peak)), median(per))
		}
	}
	tw.Flush()
}

// printSlow prints the slow-reader results.
func printSlow(w io.Writer, rep *report) {
	if len(rep.Slow) == 0 {
		return
	}
	fmt.Fprintf(w, "\nslow reader: asked for %s MiB of replies, read %s MiB (medians over rounds)\n",
		mib(float64(rep.Slow[0].Asked)), mib(float64(rep.Slow[0].Read)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\tbefore MiB\tmax MiB\tgrowth MiB\tafter MiB\t")
	for _, name := range rep.ServerSet {
		var before, mx, growth, after []float64
		n := 0
		for _, r := range rep.Slow {
			if r.Server == name {
				before, mx = append(before, float64(r.Before)), append(mx, float64(r.Max))
				growth, after = append(growth, float64(r.Growth)), append(after, float64(r.After))
				n++
			}
		}
		if n > 0 {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", name, mib(median(before)), mib(median(mx)),
				mib(median(growth)), mib(median(after)))
		}
	}
	tw.Flush()
}

// printPipeline prints pipelined load by server and loop count, with each
// configuration's rate against the same server with one loop.
func printPipeline(w io.Writer, rep *report) {
	if len(rep.Pipeline) == 0 {
		return
	}
	fmt.Fprintln(w, "\npipelined load (medians over rounds; CPU: the server's during the load; client: the load generator's CPU over the load's wall time;")
	fmt.Fprintln(w, "switches: the server's context switches per 1,000 requests; ratio: per-round against 1 loop)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\tloops\treq/s\tp50 ms\tp99 ms\tCPU s\tclient\tswitches\t× 1 loop\t")
	type key struct {
		s string
		l int
	}
	var keys []key
	by := map[key][]pipeResult{}
	for _, r := range rep.Pipeline {
		k := key{r.Server, r.Loops}
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], r)
	}
	for _, k := range keys {
		var rps, p50, p99, cpu, cli, sw, ratio []float64
		for _, r := range by[k] {
			rps, p50, p99, cpu = append(rps, r.RPS), append(p50, r.P50ms), append(p99, r.P99ms), append(cpu, r.CPU)
			if r.Wall > 0 {
				cli = append(cli, r.ClientCPU/r.Wall)
			}
			if n := requests(r.Tests); n > 0 {
				sw = append(sw, float64(r.Switches)*1000/float64(n))
			}
			for _, one := range by[key{k.s, 1}] {
				if one.Round == r.Round && one.RPS > 0 {
					ratio = append(ratio, r.RPS/one.RPS)
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.3f\t%.3f\t%.2f\t%.2f\t%.1f\t%.2f\t\n", k.s, k.l, median(rps), median(p50), median(p99), median(cpu),
			median(cli), median(sw), median(ratio))
	}
	tw.Flush()
}

// pipelineChecks says whether N loops served the pipelined load at least
// as fast as one, per server, as the median of per-round ratios.
func pipelineChecks(rs []pipeResult) []check {
	var out []check
	names := []string{}
	for _, r := range rs {
		if !slices.Contains(names, r.Server) {
			names = append(names, r.Server)
		}
	}
	for _, name := range names {
		ones := map[int]float64{}
		for _, r := range rs {
			if r.Server == name && r.Loops == 1 {
				ones[r.Round] = r.RPS
			}
		}
		many := map[int][]float64{}
		for _, r := range rs {
			if r.Server == name && r.Loops > 1 && ones[r.Round] > 0 {
				many[r.Loops] = append(many[r.Loops], r.RPS/ones[r.Round])
			}
		}
		for loops, ratios := range many {
			m := median(ratios)
			out = append(out, check{What: fmt.Sprintf("%s pipelined req/s, %d loops / 1 loop", name, loops),
				Ratio: m, Bound: ">= 1.00", OK: m >= 1, Rounds: len(ratios)})
		}
	}
	return out
}

// idleChecks compares what an idle connection costs on each netloop
// configuration with what it costs on gnet, round by round.
func idleChecks(rs []idleResult) []check {
	var out []check
	for _, name := range []string{"netloop-step", "netloop"} {
		var ratios []float64
		for _, me := range rs {
			for _, g := range rs {
				if me.Server == name && g.Server == "gnet" && me.Round == g.Round && g.PerConn > 0 {
					ratios = append(ratios, me.PerConn/g.PerConn)
				}
			}
		}
		if len(ratios) > 0 {
			m := median(ratios)
			out = append(out, check{What: name + " bytes per idle connection / gnet's", Ratio: m, Bound: "<= 1.00", OK: m <= 1, Rounds: len(ratios)})
		}
	}
	return out
}

// requests is how many requests tests made in all.
func requests(tests []testResult) int {
	n := 0
	for _, t := range tests {
		n += t.Requests
	}
	return n
}
