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

// A verdict sets the stepper at one GOGC beside the best pacer point that
// costs no more, by the rule of issue 20: among the runs without a stepper
// at GOGC 100, 50, 25 and 10 that use at least 1/1.1 of the stepper's CPU
// (the stepper may spend up to 10 % more than the setting it beats), the
// lowest memory over the floor. Memory is the peak RSS (Verdicts) or the
// time-averaged RSS (AvgVerdicts): the peak is what a stream's footprint
// is judged by, the average what a server that is idle between bursts
// holds over time.
type verdict struct {
	Workload    string  `json:"workload"`
	Condition   string  `json:"condition"`
	Memory      string  `json:"memory"` // memPeak or memAvg
	StepperGOGC string  `json:"stepper_gogc"`
	StepperOver int64   `json:"stepper_over_floor_bytes"`
	StepperCPU  float64 `json:"stepper_cpu_seconds"`
	IdleShare   float64 `json:"idle_share"`
	Best        string  `json:"best,omitempty"` // "" when no pacer point ran
	// Cheaper is set when no judged point uses 1/1.1 of the stepper's
	// CPU: then Best is the lowest among them all, every one cheaper than
	// the stepper, and the stepper is on or below the frontier only if
	// it holds less (then it is beyond its end, at a higher cost: n/a).
	Cheaper      bool    `json:"cheaper,omitempty"`
	BestOver     int64   `json:"best_over_floor_bytes,omitempty"`
	BestCPU      float64 `json:"best_cpu_seconds,omitempty"`
	Ratio        float64 `json:"ratio,omitempty"` // stepper over best, both over the floor
	OnOrBelow    bool    `json:"on_or_below"`
	QuarterBelow bool    `json:"quarter_below"` // ratio ≤ 0.75
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
func judge(sum []frontierSummary, memory string) []verdict {
	var out []verdict
	for _, st := range sum {
		if st.Kind != kindStepper {
			continue
		}
		v := verdict{Workload: st.Workload, Condition: st.Condition, Memory: memory, StepperGOGC: st.GOGC,
			StepperOver: st.over(memory), StepperCPU: st.CPU, IdleShare: st.IdleShare}
		var best, cheaper *frontierSummary
		for i, s := range sum {
			if s.Workload != st.Workload || s.Condition != st.Condition || s.Kind != kindPacer ||
				!slices.Contains(frontierJudged, s.GOGC) {
				continue
			}
			at := &best
			if s.CPU < st.CPU/1.1 {
				at = &cheaper
			}
			if *at == nil || s.over(memory) < (*at).over(memory) {
				*at = &sum[i]
			}
		}
		if best == nil && cheaper != nil {
			best, v.Cheaper = cheaper, true
		}
		if best != nil {
			v.Best, v.BestOver, v.BestCPU = best.Point, best.over(memory), best.CPU
			v.Ratio = float64(max(v.StepperOver, 0)) / float64(max(v.BestOver, overFloorQuantum))
			v.OnOrBelow = v.Ratio <= 1 && !v.Cheaper
			v.QuarterBelow = v.Ratio <= 0.75 && !v.Cheaper
		}
		out = append(out, v)
	}
	return out
}

// writeFrontierTables writes a table per workload and condition, then the
// summary of verdicts.
func writeFrontierTables(w io.Writer, rep *frontierReport) {
	fmt.Fprintf(w, "the frontier: %s\nmedians of %d runs per point; memory over the floor is a point's RSS less the floor point's (the same work, no garbage) under the same condition\n", rep.Command, rep.Runs)
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
	writeVerdicts(w, rep.Verdicts)
	fmt.Fprintln(w)
	writeVerdicts(w, rep.AvgVerdicts)
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

// verdictHead names the rule in the summary's header.
const verdictHead = "best pacer point: lowest %s over floor among no stepper at GOGC 100, 50, 25, 10 using ≥ 1/1.1 of the stepper's CPU"

// memoryNames are the summaries' names for what their verdicts weigh.
var memoryNames = map[string]string{memPeak: "peak RSS", memAvg: "time-averaged RSS"}

func writeVerdicts(w io.Writer, vs []verdict) {
	if len(vs) == 0 {
		return
	}
	name := memoryNames[vs[0].Memory]
	fmt.Fprintf(w, "summary by %s: the stepper (gcstep.NewRuntime(), no options) against the "+verdictHead+";\nratio = stepper's %s over floor / best's (a best at or under the floor counts as 0.1 MiB); on/below frontier: ratio ≤ 1;\n(cheaper): no such point, so the lowest of them all, each using < 1/1.1 of the stepper's CPU: the stepper is above the frontier if it holds more\n\n", name, name, name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tcondition\tstepper at\tidle\tover floor\tCPU\tbest pacer point\tover floor\tCPU\tratio\ton/below frontier\t≥25 % below\t")
	for _, v := range vs {
		best, bestOver, bestCPU, ratio, on, quarter := "none ran", "-", "-", "-", "n/a", "n/a"
		if v.Best != "" {
			best, bestOver, bestCPU = v.Best, fmt.Sprintf("%+.1f MiB", float64(v.BestOver)/(1<<20)), fmt.Sprintf("%.2fs", v.BestCPU)
			ratio, on, quarter = fmt.Sprintf("%.2f", v.Ratio), yesNo(v.OnOrBelow), yesNo(v.QuarterBelow)
		}
		if v.Cheaper {
			best += " (cheaper)"
			if v.Ratio < 1 {
				on, quarter = "n/a", "n/a" // beyond the frontier's end, at a higher cost
			}
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
