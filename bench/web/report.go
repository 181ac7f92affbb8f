package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// report is everything a run measured; results.json holds it.
type report struct {
	Configs     []string        `json:"configs"`
	Gaps        []time.Duration `json:"gaps_ns"`
	Conns       int             `json:"conns"`
	Items       int             `json:"items"`
	Burst       time.Duration   `json:"burst_ns"`
	Bursts      int             `json:"bursts"`
	Rounds      int             `json:"rounds"`
	Steady      time.Duration   `json:"steady_ns"` // the steady session's burst, 0: none
	Start       time.Time       `json:"start"`
	Took        time.Duration   `json:"took_ns"`
	Load1Before float64         `json:"load1_before"`
	Load1After  float64         `json:"load1_after"`
	Sessions    []session       `json:"sessions"`
}

// row is the medians of one configuration at one gap, over every burst
// of one round or of all.
type row struct {
	config           string
	p50, p99         time.Duration
	rps              float64
	cpuPerReq        time.Duration // server CPU over the burst and its gap, per request
	after            [3]float64    // MiB over the pre-load RSS
	haveAfter        [3]bool
	cycles, releases float64
	// ours counts the stepper's cycles and releases inside the bursts
	// (all of them, not a median).
	ours            uint64
	errors, nBursts int
}

func median[T int64 | float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// rowOf computes the medians of configuration name at gap over the
// bursts of round, or of every round if round is negative.
func rowOf(rep *report, name string, gap time.Duration, round int) row {
	var p50, p99, cpu []int64
	var rps, cyc, rel []float64
	var after [3][]float64
	r := row{config: name}
	for _, s := range rep.Sessions {
		if s.Config != name || s.Gap != gap || round >= 0 && s.Round != round {
			continue
		}
		for _, b := range s.Bursts {
			p50 = append(p50, int64(b.P50))
			p99 = append(p99, int64(b.P99))
			rps = append(rps, b.ReqPerSec)
			if b.Requests > 0 {
				cpu = append(cpu, int64(b.CPU)/int64(b.Requests))
			}
			cyc = append(cyc, float64(b.Cycles))
			rel = append(rel, float64(b.Releases))
			for i, a := range b.After {
				if a != -1 { // RSS moves in pages: -1 is only the "not measured" mark
					after[i] = append(after[i], float64(a)/(1<<20))
				}
			}
			r.ours += b.ReleasesInBurst + b.CyclesOurs
			r.errors += b.Errors
			r.nBursts++
		}
	}
	r.p50, r.p99, r.cpuPerReq = time.Duration(median(p50)), time.Duration(median(p99)), time.Duration(median(cpu))
	r.rps, r.cycles, r.releases = median(rps), median(cyc), median(rel)
	for i := range after {
		if len(after[i]) > 0 {
			r.after[i], r.haveAfter[i] = median(after[i]), true
		}
	}
	return r
}

// roundRatio is the median over rounds of f(configuration) / f(off),
// each round's medians against the same round's: the sessions of a round
// ran minutes apart at most, so the ratio cancels the machine's drift
// between rounds. "-" if a round lacks either.
func roundRatio(rep *report, name string, gap time.Duration, f func(row) (float64, bool)) string {
	var rs []float64
	for round := range rep.Rounds {
		a, okA := f(rowOf(rep, name, gap, round))
		b, okB := f(rowOf(rep, "off", gap, round))
		if !okA || !okB || b == 0 {
			continue
		}
		rs = append(rs, a/b)
	}
	if len(rs) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", median(rs))
}

// printReport prints one table per gap length (and the steady session):
// medians over every burst, and ratios to off as medians of the rounds'
// ratios.
func printReport(w io.Writer, rep *report, steady time.Duration) {
	fmt.Fprintf(w, "examples/web under wrk: %d connections, GET /items?n=%d, bursts of %v, %d bursts a session, %d rounds; "+
		"medians over every burst, ×off the median of the rounds' ratios; load average %.1f before, %.1f after; took %v\n",
		rep.Conns, rep.Items, rep.Burst, rep.Bursts, rep.Rounds, rep.Load1Before, rep.Load1After, rep.Took.Round(time.Second))
	gaps := slices.Clone(rep.Gaps)
	if steady > 0 {
		gaps = append(gaps, 0)
	}
	for _, gap := range gaps {
		title := fmt.Sprintf("gaps of %v", gap)
		if gap == 0 {
			title = fmt.Sprintf("steady: one burst of %v, no gap", steady)
		}
		fmt.Fprintf(w, "\n%s\n\n", title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "config\tp50\tp99\t×off\treq/s\t×off\tCPU/req\t×off\tRSS+100ms\tRSS+1s\t×off\tRSS+5s\t×off\tcycles/burst\treleases/burst\tours in bursts\terrors\t")
		for _, name := range rep.Configs {
			r := rowOf(rep, name, gap, -1)
			rr := func(f func(row) (float64, bool)) string { return roundRatio(rep, name, gap, f) }
			cells := []string{r.config, dur(r.p50), dur(r.p99),
				rr(func(r row) (float64, bool) { return float64(r.p99), r.nBursts > 0 }),
				fmt.Sprintf("%.0f", r.rps),
				rr(func(r row) (float64, bool) { return r.rps, r.nBursts > 0 }),
				dur(r.cpuPerReq),
				rr(func(r row) (float64, bool) { return float64(r.cpuPerReq), r.nBursts > 0 })}
			for i := range r.after {
				cell := "-"
				if r.haveAfter[i] {
					cell = fmt.Sprintf("%.1f MiB", r.after[i])
				}
				cells = append(cells, cell)
				if i > 0 {
					cells = append(cells, rr(func(r row) (float64, bool) { return r.after[i], r.haveAfter[i] }))
				}
			}
			cells = append(cells, fmt.Sprintf("%.1f", r.cycles), fmt.Sprintf("%.1f", r.releases),
				fmt.Sprint(r.ours), fmt.Sprint(r.errors))
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
		}
		tw.Flush()
	}
}

func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.0f µs", float64(d)/1e3)
	}
}
