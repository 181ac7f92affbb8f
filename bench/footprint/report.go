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
	Workload string `json:"workload"`
	// GC is the condition: the GC setting, and the busy core if any
	// (RunResult.Condition).
	GC        string  `json:"gc"`
	Busy      int     `json:"busy_percent,omitempty"`
	BusyShare float64 `json:"busy_share,omitempty"`
	Stepping  string  `json:"stepping"`
	Runs      int     `json:"runs"`
	OK        bool    `json:"ok"`
	PeakRSS   uint64  `json:"peak_rss_bytes"`
	GapRSS    uint64  `json:"gap_rss_bytes,omitempty"`
	Wall      float64 `json:"wall_seconds"`
	CPU       float64 `json:"cpu_seconds"`
	GCCycles  uint64  `json:"gc_cycles"`
	Steps     uint64  `json:"idle_steps"`
	P50       int64   `json:"latency_p50_ns,omitempty"`
	P99       int64   `json:"latency_p99_ns,omitempty"`
	P999      int64   `json:"latency_p999_ns,omitempty"`

	// Request/response workloads: CPU time (user+system) and system
	// calls (the poller's and the handlers') per request, and the RSS
	// AfterBurstMS[i] ms after a burst ended: the median over every
	// burst of every round.
	CPUPerRequest      float64 `json:"cpu_per_request_seconds,omitempty"`
	SyscallsPerRequest float64 `json:"syscalls_per_request,omitempty"`
	// PollerSyscallsPerRequest counts the poller's alone: waits, zero
	// polls, registrations; what idle stepping can add to.
	PollerSyscallsPerRequest float64  `json:"poller_syscalls_per_request,omitempty"`
	AfterBurstMS             []int    `json:"after_burst_ms,omitempty"`
	AfterBurstRSS            []uint64 `json:"after_burst_rss_bytes,omitempty"`
	StepperCycles            uint64   `json:"stepper_cycles,omitempty"`
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
		k := key{r.Workload, r.Condition(), r.Stepping}
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
		var wall, cpu, cpuReq, sysReq, pollReq, busyShare []float64
		var p50, p99, p999 []int64
		var stepCycles []uint64
		var after [][]uint64
		for _, r := range rs {
			s.Busy = r.BusyPercent
			busyShare = append(busyShare, r.BusyShare)
			if r.Requests > 0 {
				cpuReq = append(cpuReq, (r.CPUUser+r.CPUSys)/float64(r.Requests))
				sysReq = append(sysReq, float64(r.Syscalls+r.HandlerSyscalls)/float64(r.Requests))
				pollReq = append(pollReq, float64(r.Syscalls)/float64(r.Requests))
			}
			if r.Stepper != nil {
				stepCycles = append(stepCycles, r.StepperCycles())
			}
			if len(r.AfterBurstMS) > 0 {
				s.AfterBurstMS = r.AfterBurstMS
				for len(after) < len(r.AfterBurstMS) {
					after = append(after, nil)
				}
				for _, b := range r.AfterBurstRSS {
					for i, v := range b {
						if v > 0 && i < len(after) {
							after[i] = append(after[i], v)
						}
					}
				}
			}
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
				p999 = append(p999, r.Latency.P999)
			}
		}
		s.PeakRSS, s.GapRSS, s.GCCycles, s.Steps = median(peak), median(gap), median(cyc), median(steps)
		s.Wall, s.CPU, s.P50, s.P99, s.P999 = median(wall), median(cpu), median(p50), median(p99), median(p999)
		s.CPUPerRequest, s.SyscallsPerRequest, s.StepperCycles = median(cpuReq), median(sysReq), median(stepCycles)
		s.BusyShare, s.PollerSyscallsPerRequest = median(busyShare), median(pollReq)
		for _, a := range after {
			s.AfterBurstRSS = append(s.AfterBurstRSS, median(a))
		}
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
		if wl, ok := lab.FindWorkload(a.Name); ok && wl.RequestReply {
			writeRequestTable(w, rep, a.Name)
			continue
		}
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
	seen := map[int]bool{}
	for _, s := range rep.Summary {
		if s.Busy > 0 && !seen[s.Busy] {
			seen[s.Busy] = true
			fmt.Fprintf(w, "busy=%d%%: another process was asked to keep %d %% of one CPU busy during each run; it took %.0f %% (median of the first configuration's runs)\n",
				s.Busy, s.Busy, 100*s.BusyShare)
		}
	}
	if len(seen) > 0 {
		fmt.Fprintln(w)
	}
	for _, d := range rep.HeapDiff {
		writeHeapDiff(w, d)
	}
	fmt.Fprintf(w, "%d runs in %.0fs", len(rep.Runs), rep.Duration)
	if rep.Machine.LoadBefore > 0 || rep.Machine.LoadAfter > 0 {
		fmt.Fprintf(w, "; one-minute load average %.1f before, %.1f after", rep.Machine.LoadBefore, rep.Machine.LoadAfter)
	}
	fmt.Fprintln(w)
}

// writeRequestTable is the table of a request/response workload: what a
// request costs (latency, CPU time, system calls) and how soon the memory a
// burst used is given back, each beside stepping=off's.
func writeRequestTable(w io.Writer, rep *report, workload string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var offsets []int
	for _, s := range rep.Summary {
		if s.Workload == workload && len(s.AfterBurstMS) > len(offsets) {
			offsets = s.AfterBurstMS
		}
	}
	head := "GC\tstepping\tpeak RSS\t×off\trequest p50\tp99\t×off\tp99.9\t"
	for i, ms := range offsets {
		head += fmt.Sprintf("RSS +%dms\t", ms)
		if i == 1 || len(offsets) == 1 {
			head += "×off\t"
		}
	}
	head += "CPU/req\t×off\tsyscalls/req\t×off\tof which poller\t×off\tGCs\tidle cycles\tok\t"
	fmt.Fprintln(tw, head)
	off := map[string]summary{}
	for _, s := range rep.Summary {
		if s.Workload == workload && s.Stepping == "off" {
			off[s.GC] = s
		}
	}
	for _, s := range rep.Summary {
		if s.Workload != workload {
			continue
		}
		o := off[s.GC]
		fmt.Fprintf(tw, "%s\t%s\t%.1f MiB\t%s\t%v\t%v\t%s\t%v\t", s.GC, s.Stepping,
			mib(s.PeakRSS), ratio(float64(s.PeakRSS), float64(o.PeakRSS)),
			roundDur(s.P50), roundDur(s.P99), ratio(float64(s.P99), float64(o.P99)), roundDur(s.P999))
		for i := range offsets {
			var v, ov uint64
			if i < len(s.AfterBurstRSS) {
				v = s.AfterBurstRSS[i]
			}
			if i < len(o.AfterBurstRSS) {
				ov = o.AfterBurstRSS[i]
			}
			if v == 0 {
				fmt.Fprint(tw, "-\t")
			} else {
				fmt.Fprintf(tw, "%.1f MiB\t", mib(v))
			}
			if i == 1 || len(offsets) == 1 {
				if v == 0 {
					fmt.Fprint(tw, "-\t")
				} else {
					fmt.Fprintf(tw, "%s\t", ratio(float64(v), float64(ov)))
				}
			}
		}
		ok := "yes"
		if !s.OK {
			ok = "NO"
		}
		cycles := "-" // only gcstep.Runtime counts its cycles
		if s.Stepping == "runtime" {
			cycles = fmt.Sprint(s.StepperCycles)
		}
		fmt.Fprintf(tw, "%.0fµs\t%s\t%.2f\t%s\t%.3f\t%s\t%d\t%s\t%s\t\n",
			s.CPUPerRequest*1e6, ratio(s.CPUPerRequest, o.CPUPerRequest),
			s.SyscallsPerRequest, ratio(s.SyscallsPerRequest, o.SyscallsPerRequest),
			s.PollerSyscallsPerRequest, ratio(s.PollerSyscallsPerRequest, o.PollerSyscallsPerRequest),
			s.GCCycles, cycles, ok)
	}
	tw.Flush()
	fmt.Fprintln(w)
	writeRoundRatios(w, rep, workload)
}

// roundRatio is one measure of a request/response run, for the per-round
// ratios: 0 when the run does not have it.
type roundRatio struct {
	name string
	of   func(r *lab.RunResult) float64
}

var roundRatios = []roundRatio{
	{"p99", func(r *lab.RunResult) float64 {
		if r.Latency == nil {
			return 0
		}
		return float64(r.Latency.P99)
	}},
	{"RSS 300ms after a burst", func(r *lab.RunResult) float64 {
		var v []uint64
		for i, ms := range r.AfterBurstMS {
			if ms != 300 {
				continue
			}
			for _, b := range r.AfterBurstRSS {
				if i < len(b) && b[i] > 0 {
					v = append(v, b[i])
				}
			}
		}
		return float64(median(v))
	}},
	{"CPU/req", func(r *lab.RunResult) float64 {
		if r.Requests == 0 {
			return 0
		}
		return (r.CPUUser + r.CPUSys) / float64(r.Requests)
	}},
	{"syscalls/req", func(r *lab.RunResult) float64 {
		if r.Requests == 0 {
			return 0
		}
		return float64(r.Syscalls+r.HandlerSyscalls) / float64(r.Requests)
	}},
}

// writeRoundRatios prints, for every policy but off, each measure's ratio
// to off's in the same round and condition, round by round, and their
// median: the runs of one round ran next to each other, so these ratios
// see less of the machine's drift than the ratios of medians in the table.
func writeRoundRatios(w io.Writer, rep *report, workload string) {
	type key struct {
		cond  string
		round int
	}
	off := map[key]*lab.RunResult{}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		if r.Workload == workload && r.Stepping == "off" {
			off[key{r.Condition(), r.Round}] = r
		}
	}
	for _, s := range rep.Summary {
		if s.Workload != workload || s.Stepping == "off" {
			continue
		}
		line := fmt.Sprintf("%s %s/off by round:", s.GC, s.Stepping)
		any := false
		for _, m := range roundRatios {
			var rs []float64
			for i := range rep.Runs {
				r := &rep.Runs[i]
				if r.Workload != workload || r.Stepping != s.Stepping || r.Condition() != s.GC {
					continue
				}
				o := off[key{r.Condition(), r.Round}]
				if o == nil || m.of(o) == 0 || m.of(r) == 0 {
					continue
				}
				rs = append(rs, m.of(r)/m.of(o))
			}
			if len(rs) == 0 {
				continue
			}
			any = true
			line += fmt.Sprintf("  %s %.2f (", m.name, median(rs))
			for i, x := range rs {
				if i > 0 {
					line += " "
				}
				line += fmt.Sprintf("%.2f", x)
			}
			line += ")"
		}
		if any {
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprintln(w)
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
