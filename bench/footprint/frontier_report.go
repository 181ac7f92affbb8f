package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// A frontierSummary is one point of one workload under one condition:
// medians over its runs, and its memory over the floor (the floor point's
// median peak and time-averaged RSS under the same condition).
type frontierSummary struct {
	Workload  string `json:"workload"`
	Condition string `json:"condition"`
	Point     string `json:"point"`
	Kind      string `json:"kind"`
	GOGC      string `json:"gogc"`
	Runs      int    `json:"runs"`
	OK        bool   `json:"ok"`
	PeakRSS   uint64 `json:"peak_rss_bytes"`
	AvgRSS    uint64 `json:"avg_rss_bytes"`
	OverPeak  int64  `json:"peak_over_floor_bytes"` // may be below 0 by noise
	OverAvg   int64  `json:"avg_over_floor_bytes"`
	// OverOwn is the part of the memory over the floor that is the
	// runtime's metadata and resident code at the end of the run
	// (frontierRun.Own, less the floor's).
	OverOwn   int64   `json:"own_over_floor_bytes"`
	Own       uint64  `json:"own_bytes"`
	CPU       float64 `json:"cpu_seconds"`
	Wall      float64 `json:"wall_seconds"`
	P99       int64   `json:"p99_ns,omitempty"`
	GCCycles  uint64  `json:"gc_cycles"`
	Stepped   uint64  `json:"stepper_cycles"`
	IdleShare float64 `json:"idle_share"`
}

// summariseFrontier takes the medians of each point's runs, in the order
// the points first ran but the floor first and the stepper last.
func summariseFrontier(runs []frontierRun) []frontierSummary {
	type key struct{ w, c, p string }
	var order []key
	groups := map[key][]frontierRun{}
	for _, r := range runs {
		k := key{r.Workload, r.Condition, r.Point}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []frontierSummary
	floors := map[[2]string]frontierSummary{}
	for _, k := range order {
		rs := groups[k]
		s := frontierSummary{Workload: k.w, Condition: k.c, Point: k.p, Kind: rs[0].Kind, GOGC: rs[0].GOGC, Runs: len(rs), OK: true}
		var peak, avg, own, cyc, stepped []uint64
		var cpu, wall, idle []float64
		var p99 []int64
		for _, r := range rs {
			s.OK = s.OK && r.OK
			peak, avg, own = append(peak, r.PeakRSS), append(avg, r.AvgRSS), append(own, r.Own)
			cyc, stepped = append(cyc, r.GCCycles), append(stepped, r.Stepped)
			cpu, wall, idle = append(cpu, r.CPU), append(wall, r.Wall), append(idle, r.IdleShare)
			if r.P99 > 0 {
				p99 = append(p99, r.P99)
			}
		}
		s.PeakRSS, s.AvgRSS, s.Own, s.GCCycles, s.Stepped = median(peak), median(avg), median(own), median(cyc), median(stepped)
		s.CPU, s.Wall, s.IdleShare, s.P99 = median(cpu), median(wall), median(idle), median(p99)
		if s.Kind == kindFloor {
			floors[[2]string{k.w, k.c}] = s
		}
		out = append(out, s)
	}
	for i := range out {
		f := floors[[2]string{out[i].Workload, out[i].Condition}]
		out[i].OverPeak = int64(out[i].PeakRSS) - int64(f.PeakRSS)
		out[i].OverAvg = int64(out[i].AvgRSS) - int64(f.AvgRSS)
		out[i].OverOwn = int64(out[i].Own) - int64(f.Own)
	}
	rank := map[string]int{kindFloor: 0, kindPacer: 1, kindLimit: 2, kindStepper: 3}
	slices.SortStableFunc(out, func(a, b frontierSummary) int { return rank[a.Kind] - rank[b.Kind] })
	slices.SortStableFunc(out, func(a, b frontierSummary) int {
		if a.Workload != b.Workload {
			return firstIndex(order, func(k key) bool { return k.w == a.Workload }) - firstIndex(order, func(k key) bool { return k.w == b.Workload })
		}
		return firstIndex(order, func(k key) bool { return k.c == a.Condition }) - firstIndex(order, func(k key) bool { return k.c == b.Condition })
	})
	return out
}

func firstIndex[T any](s []T, f func(T) bool) int { return slices.IndexFunc(s, f) }

// A verdict sets the stepper at one GOGC beside GOGC's frontier at the
// stepper's cost: of the pacer points (no stepper, each GOGC of the
// frontier) that use no more CPU than the stepper, within
// frontierCPUSlack, the one with the lowest memory over the floor. Memory
// is the peak RSS (Verdicts) or the time-averaged RSS (AvgVerdicts): the
// peak is what a stream's footprint is judged by, the average what a
// server that is idle between bursts holds over time. The memory-limit
// point is not on the frontier: it is another knob, shown apart.
type verdict struct {
	Workload    string  `json:"workload"`
	Condition   string  `json:"condition"`
	Memory      string  `json:"memory"` // memPeak or memAvg
	StepperGOGC string  `json:"stepper_gogc"`
	StepperOver int64   `json:"stepper_over_floor_bytes"`
	StepperCPU  float64 `json:"stepper_cpu_seconds"`
	IdleShare   float64 `json:"idle_share"`
	// Best names the chosen pacer point ("GOGC=100"); "" when None says
	// why there is none, and then the fields after None are empty too.
	Best     string  `json:"best"`
	None     string  `json:"none,omitempty"` // noneCheaper or noneRan
	BestOver int64   `json:"best_over_floor_bytes,omitempty"`
	BestCPU  float64 `json:"best_cpu_seconds,omitempty"`
	// Ratio is the stepper's memory over the floor over Best's; nil
	// without a Best, so that no reader takes a missing one for 0.
	Ratio        *float64 `json:"ratio,omitempty"`
	OnOrBelow    bool     `json:"on_or_below"`   // ratio ≤ 1
	QuarterBelow bool     `json:"quarter_below"` // ratio ≤ 0.75
}

// Why a verdict has no Best.
const (
	noneCheaper = "none cheaper" // every pacer point used more than frontierCPUSlack times the stepper's CPU
	noneRan     = "none ran"     // no pacer point ran beside the stepper
)

// frontierCPUSlack is how much more CPU than the stepper a pacer point may
// use and still count as costing no more. The stepper and the pacer points
// are measured in different runs, interleaved on a shared 2-core VM, where
// the CPU time of the same point differs by a few per cent from run to run:
// without the slack, a point at the stepper's true cost would drop out
// about half the time.
const frontierCPUSlack = 1.10

// costsNoMore reports whether a point using cpu seconds is at or under
// the stepper's cost, stepperCPU, within frontierCPUSlack.
func costsNoMore(cpu, stepperCPU float64) bool {
	return cpu <= stepperCPU*frontierCPUSlack
}

// What a verdict weighs: the peak or the time-averaged RSS over the floor.
const (
	memPeak = "peak"
	memAvg  = "avg"
)

// over is s's memory over the floor by the measure memory names.
func (s frontierSummary) over(memory string) int64 {
	if memory == memAvg {
		return s.OverAvg
	}
	return s.OverPeak
}

// overFloorQuantum is the least memory over the floor a ratio divides by:
// a point at or under the floor (by noise) would make it infinite.
const overFloorQuantum = 100 << 10

// judge makes a verdict per workload, condition and stepper GOGC, weighing
// memory by the measure memory names (memPeak or memAvg).
//
// It does not fall back to the cheapest point when none costs no more: a
// stepper cheaper than every pacer point has no point at its cost to be
// judged against, and a ratio against a dearer one would be read as one.
func judge(sum []frontierSummary, memory string) []verdict {
	var out []verdict
	for _, st := range sum {
		if st.Kind != kindStepper {
			continue
		}
		v := verdict{Workload: st.Workload, Condition: st.Condition, Memory: memory, StepperGOGC: st.GOGC,
			StepperOver: st.over(memory), StepperCPU: st.CPU, IdleShare: st.IdleShare, None: noneRan}
		var best *frontierSummary
		for i, s := range sum {
			if s.Workload != st.Workload || s.Condition != st.Condition || s.Kind != kindPacer {
				continue
			}
			v.None = noneCheaper
			if !costsNoMore(s.CPU, st.CPU) {
				continue
			}
			if best == nil || s.over(memory) < best.over(memory) ||
				s.over(memory) == best.over(memory) && s.CPU < best.CPU {
				best = &sum[i]
			}
		}
		if best != nil {
			v.None = ""
			v.Best, v.BestOver, v.BestCPU = best.Point, best.over(memory), best.CPU
			r := float64(max(v.StepperOver, 0)) / float64(max(v.BestOver, overFloorQuantum))
			v.Ratio, v.OnOrBelow, v.QuarterBelow = &r, r <= 1, r <= 0.75
		}
		out = append(out, v)
	}
	return out
}

// writeFrontierTables writes a table per workload and condition, then the
// summary of verdicts.
func writeFrontierTables(w io.Writer, rep *frontierReport) {
	fmt.Fprintf(w, "the frontier: %s\nmedians of %d runs per point; memory over the floor is a point's RSS less the floor point's (the same work, no garbage) under the same condition\n", rep.Command, rep.Runs)
	if rep.Budget > 0 {
		fmt.Fprintf(w, "the stepper's budget: %g of the program's CPU (gcstep.WithBudget)\n", rep.Budget)
	}
	if rep.WarmupMiB > 0 {
		fmt.Fprintf(w, "every child first allocated %d MiB, 2 MiB live at a time (a program with a past): its peak is the warm-up's, so judge by the average\n", rep.WarmupMiB)
	}
	fmt.Fprintln(w)
	for _, c := range rep.Conditions {
		fmt.Fprintf(w, "condition %s: %s\n", c.Name, c.About)
	}
	for _, s := range rep.Skipped {
		fmt.Fprintln(w, s)
	}
	fmt.Fprintln(w)
	for _, a := range rep.About {
		fmt.Fprintf(w, "%s: %s\n\n", a.Name, a.About)
		for _, c := range rep.Conditions {
			writePointTable(w, rep, a.Name, c)
		}
	}
	writeVerdicts(w, rep.Verdicts, rep.Budget)
	fmt.Fprintln(w)
	writeVerdicts(w, rep.AvgVerdicts, rep.Budget)
	fmt.Fprintf(w, "\n%d runs in %.0fs", len(rep.Results), rep.Duration)
	if rep.Machine.LoadBefore > 0 || rep.Machine.LoadAfter > 0 {
		fmt.Fprintf(w, "; one-minute load average %.1f before, %.1f after", rep.Machine.LoadBefore, rep.Machine.LoadAfter)
	}
	fmt.Fprintln(w)
}

func writePointTable(w io.Writer, rep *frontierReport, workload string, c condition) {
	var rows []frontierSummary
	requests := false
	for _, s := range rep.Summary {
		if s.Workload == workload && s.Condition == c.Name {
			rows = append(rows, s)
			requests = requests || s.P99 > 0
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "%s, %s\n", workload, c.Name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "point\tpeak RSS\tover floor\tof it, runtime's own\tavg RSS\tover floor\tCPU\twall\t"
	if requests {
		head += "p99\t"
	}
	fmt.Fprintln(tw, head+"GCs\tstepper GCs\tidle\tok\t")
	for _, s := range rows {
		own := overMiB(s, s.OverOwn)
		if s.Own == 0 {
			own = "?" // a report from before the lab read it
		}
		fmt.Fprintf(tw, "%s\t%.1f MiB\t%s\t%s\t%.1f MiB\t%s\t%.2fs\t%.2fs\t", s.Point, mib(s.PeakRSS), overMiB(s, s.OverPeak),
			own, mib(s.AvgRSS), overMiB(s, s.OverAvg), s.CPU, s.Wall)
		if requests {
			fmt.Fprintf(tw, "%v\t", roundDur(s.P99))
		}
		stepped := "-"
		if s.Kind == kindStepper {
			stepped = fmt.Sprint(s.Stepped)
		}
		ok := "yes"
		if !s.OK {
			ok = "NO"
		}
		fmt.Fprintf(tw, "%d\t%s\t%.0f %%\t%s\t\n", s.GCCycles, stepped, 100*s.IdleShare, ok)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// overMiB formats memory over the floor, "-" for the floor itself.
func overMiB(s frontierSummary, over int64) string {
	if s.Kind == kindFloor {
		return "-"
	}
	return fmt.Sprintf("%+.1f MiB", float64(over)/(1<<20))
}

// verdictHead names the rule in the summary's header, for memory by
// memoryNames.
func verdictHead(memory string) string {
	return fmt.Sprintf("GOGC's frontier at the stepper's cost: the pacer point with the lowest %s over floor "+
		"among those using no more CPU than the stepper, within %.0f %% (CPU ≤ %.2f × the stepper's)",
		memory, 100*(frontierCPUSlack-1), frontierCPUSlack)
}

// memoryNames are the summaries' names for what their verdicts weigh, and
// memoryColumns the short ones of their columns.
var (
	memoryNames   = map[string]string{memPeak: "peak RSS", memAvg: "time-averaged RSS"}
	memoryColumns = map[string]string{memPeak: "peak", memAvg: "average"}
)

// writeVerdicts writes vs; budget is the stepper's gcstep.WithBudget, 0
// for the default.
func writeVerdicts(w io.Writer, vs []verdict, budget float64) {
	if len(vs) == 0 {
		return
	}
	name := memoryNames[vs[0].Memory]
	stepper := "gcstep.NewRuntime(), no options"
	if budget > 0 {
		stepper = fmt.Sprintf("gcstep.NewRuntime(gcstep.WithBudget(%g))", budget)
	}
	fmt.Fprintf(w, "summary by %s: the stepper (%s) against %s;\n"+
		"ratio = stepper's %s over floor / the frontier point's (one at or under the floor counts as 0.1 MiB); on/below frontier: ratio ≤ 1;\n"+
		"%s: every pacer point used more than %.2f × the stepper's CPU, so there is no point at its cost and no ratio\n\n",
		name, stepper, verdictHead(name), name, noneCheaper, frontierCPUSlack)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	col := memoryColumns[vs[0].Memory]
	fmt.Fprintf(tw, "workload\tcondition\tstepper at\tidle\t%s over floor\tCPU\tfrontier point by %s\tover floor\tCPU\tratio\ton/below frontier\t≥25 %% below\t\n", col, col)
	for _, v := range vs {
		best, bestOver, bestCPU, ratio, on, quarter := v.None, "-", "-", "-", "n/a", "n/a"
		if v.Best != "" {
			best, bestOver, bestCPU = v.Best, fmt.Sprintf("%+.1f MiB", float64(v.BestOver)/(1<<20)), fmt.Sprintf("%.2fs", v.BestCPU)
			ratio, on, quarter = fmt.Sprintf("%.2f", *v.Ratio), yesNo(v.OnOrBelow), yesNo(v.QuarterBelow)
		}
		fmt.Fprintf(tw, "%s\t%s\tGOGC=%s\t%.0f %%\t%+.1f MiB\t%.2fs\t%s\t%s\t%s\t%s\t%s\t%s\t\n", v.Workload, v.Condition, v.StepperGOGC,
			100*v.IdleShare, float64(v.StepperOver)/(1<<20), v.StepperCPU, best, bestOver, bestCPU, ratio, on, quarter)
	}
	tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// frontierOK reports whether every run finished and moved all its data.
func (r *frontierReport) frontierOK() bool {
	for _, run := range r.Results {
		if !run.OK {
			return false
		}
	}
	return true
}
