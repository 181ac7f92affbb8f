package main

import (
	"fmt"
	"github.com/idlemux/idlemux/bench/footprint/internal/lab"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// summary is one configuration's medians over its rounds.
type summary struct {
	Workload string  `json:"workload"`
	GC       string  `json:"gc"`
	Stepping string  `json:"stepping"`
	Runs     int     `json:"runs"`
	OK       bool    `json:"ok"`
	PeakRSS  uint64  `json:"peak_rss_bytes"`
	GapRSS   uint64  `json:"gap_rss_bytes,omitempty"`
	Wall     float64 `json:"wall_seconds"`
	CPU      float64 `json:"cpu_seconds"`
	GCCycles uint64  `json:"gc_cycles"`
	Steps    uint64  `json:"idle_steps"`
	P50      int64   `json:"latency_p50_ns,omitempty"`
	P99      int64   `json:"latency_p99_ns,omitempty"`
}

func median[T int64 | uint64 | float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// summarise groups the runs by configuration, in the order they first ran,
// and takes medians over rounds.
func summarise(runs []lab.RunResult) []summary {
	type key struct{ w, gc, st string }
	var order []key
	groups := map[key][]lab.RunResult{}
	for _, r := range runs {
		k := key{r.Workload, r.GC.Name, r.Stepping}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []summary
	for _, k := range order {
		rs := groups[k]
		s := summary{Workload: k.w, GC: k.gc, Stepping: k.st, Runs: len(rs), OK: true}
		var peak, gap, cyc, steps []uint64
		var wall, cpu []float64
		var p50, p99 []int64
		for _, r := range rs {
			s.OK = s.OK && r.OK
			peak = append(peak, r.PeakRSS)
			if r.GapRSS > 0 {
				gap = append(gap, r.GapRSS)
			}
			cyc = append(cyc, r.GCCycles)
			steps = append(steps, r.IdleSteps)
			wall = append(wall, r.Wall)
			cpu = append(cpu, r.CPUUser+r.CPUSys)
			if r.Latency != nil {
				p50 = append(p50, r.Latency.P50)
				p99 = append(p99, r.Latency.P99)
			}
		}
		s.PeakRSS, s.GapRSS, s.GCCycles, s.Steps = median(peak), median(gap), median(cyc), median(steps)
		s.Wall, s.CPU, s.P50, s.P99 = median(wall), median(cpu), median(p50), median(p99)
		out = append(out, s)
	}
	// Tables read best grouped by workload and GC setting, in the order
	// they ran, with the policies in a fixed order.
	first := map[string]int{}
	for i, k := range order {
		for _, name := range []string{"w:" + k.w, "gc:" + k.gc} {
			if _, ok := first[name]; !ok {
				first[name] = i
			}
		}
	}
	slices.SortStableFunc(out, func(a, b summary) int {
		if d := first["w:"+a.Workload] - first["w:"+b.Workload]; d != 0 {
			return d
		}
		if d := first["gc:"+a.GC] - first["gc:"+b.GC]; d != 0 {
			return d
		}
		return slices.Index(lab.Steppings, a.Stepping) - slices.Index(lab.Steppings, b.Stepping)
	})
	return out
}

// writeTables prints one table per workload: medians over the rounds, and
// each policy's peak RSS and wall time relative to no stepping at the same
// GC setting.
func writeTables(w io.Writer, rep *report) {
	for _, a := range rep.About {
		fmt.Fprintf(w, "%s: %s\n", a.Name, a.About)
		fmt.Fprintf(w, "medians of %d round(s); ×off compares with stepping=off at the same GC setting\n\n", rep.Rounds)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		lat := ""
		for _, r := range rep.Runs {
			if r.Workload == a.Name && r.LatencyKind != "" {
				lat = r.LatencyKind
			}
		}
		head := "GC\tstepping\tpeak RSS\t×off\twall\t×off\tCPU\tGCs\tidle steps\t"
		if a.Name == "bursty" {
			head += "gap RSS\t"
		}
		if lat != "" {
			head += lat + " p50\tp99\t"
		}
		fmt.Fprintln(tw, head+"ok\t")
		off := map[string]summary{}
		for _, s := range rep.Summary {
			if s.Workload == a.Name && s.Stepping == "off" {
				off[s.GC] = s
			}
		}
		for _, s := range rep.Summary {
			if s.Workload != a.Name {
				continue
			}
			o := off[s.GC]
			fmt.Fprintf(tw, "%s\t%s\t%.1f MiB\t%s\t%.2fs\t%s\t%.2fs\t%d\t%d\t",
				s.GC, s.Stepping, mib(s.PeakRSS), ratio(float64(s.PeakRSS), float64(o.PeakRSS)),
				s.Wall, ratio(s.Wall, o.Wall), s.CPU, s.GCCycles, s.Steps)
			if a.Name == "bursty" {
				fmt.Fprintf(tw, "%.1f MiB\t", mib(s.GapRSS))
			}
			if lat != "" {
				fmt.Fprintf(tw, "%v\t%v\t", roundDur(s.P50), roundDur(s.P99))
			}
			ok := "yes"
			if !s.OK {
				ok = "NO"
			}
			fmt.Fprintf(tw, "%s\t\n", ok)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	for _, d := range rep.HeapDiff {
		writeHeapDiff(w, d)
	}
	fmt.Fprintf(w, "%d runs in %.0fs\n", len(rep.Runs), rep.Duration)
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func roundDur(ns int64) time.Duration {
	d := time.Duration(ns)
	switch {
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(time.Microsecond)
	}
	return d
}
