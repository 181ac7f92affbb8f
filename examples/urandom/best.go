package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/idlemux/idlemux/internal/machine"
)

// A bestSet is what the best-GOGC table shows for one GOMAXPROCS: the off
// loop's medians at each GOGC of the frontier, and the idle mode's.
type bestSet struct {
	procs int
	off   []result
	idle  result
}

// costsNoMore reports whether r costs no more than the idle mode: CPU
// time (user and system, the whole process) within cpuSlack of the idle
// mode's. Why CPU and not wall: on a machine shared with other work, the
// wall time of the same run varies by tens of per cent while its CPU time
// varies by a few, and a comparison by wall would crown whichever setting
// happened to run at a quiet moment. Why the slack: two runs of the same
// setting differ by that much, and the stepper must not win by noise
// (issue 20 allows the stepper up to 10 % more CPU than a setting it
// beats); the wall time is shown beside it.
func (s bestSet) costsNoMore(r result) bool {
	return r.CPUSeconds <= cpuSlack*s.idle.CPUSeconds
}

// cpuSlack is how much more CPU than the idle mode a GOGC setting may use
// and still count as costing no more.
const cpuSlack = 1.1

// best is the index in s.off of the best GOGC, the off run with the lowest
// peak RSS among those that cost no more than the idle mode, and false if
// none does. A user can always turn GOGC down instead of running a
// stepper: the stepper wins only where it holds less than this.
func (s bestSet) best() (int, bool) {
	at, found := 0, false
	for i, r := range s.off {
		if s.costsNoMore(r) && (!found || r.PeakRSSBytes < s.off[at].PeakRSSBytes) {
			at, found = i, true
		}
	}
	return at, found
}

// writeBest writes, for each GOMAXPROCS, the off loop at each GOGC of the
// frontier beside the idle mode at gogc, with ratios to the idle mode, the
// best GOGC marked, and a line per GOMAXPROCS naming it.
func writeBest(w io.Writer, c config, gogc string, busy int, sets []bestSet) error {
	head := fmt.Sprintf("the best GOGC beside the stepper: the off loop at GOGC %s and the idle mode at GOGC=%s",
		strings.Join(c.frontierGOGCs(), ", "), gogc)
	if c.runs > 1 {
		head += fmt.Sprintf(", medians of %d runs", c.runs)
	} else {
		head += " (one run each, noisy: -runs 5 for medians)"
	}
	if busy > 0 {
		head += fmt.Sprintf(", %d %% of one CPU kept busy by another process", busy)
	}
	head += ";\nbest GOGC: the lowest peak RSS among the GOGC settings that cost no more CPU than the idle mode (within 10 %)"
	if _, err := fmt.Fprintf(w, "%s\n\n", head); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "GOMAXPROCS\t%-4s\tGOGC\tpeak RSS\t×idle\twall\t×idle\tCPU\t×idle\tcosts no more\t\n", "mode")
	row := func(s bestSet, r result, cheap, mark string) {
		// The mark is the line's trailing text, outside the columns.
		fmt.Fprintf(tw, "%d\t%-4s\t%s\t%s\t%s\t%.2f s\t%s\t%.2f s\t%s\t%s\t%s\n", s.procs, r.Mode, r.GOGC,
			formatMiB(r.PeakRSSBytes), ratio(float64(r.PeakRSSBytes), float64(s.idle.PeakRSSBytes)),
			r.WallSeconds, ratio(r.WallSeconds, s.idle.WallSeconds),
			r.CPUSeconds, ratio(r.CPUSeconds, s.idle.CPUSeconds), cheap, mark)
	}
	for _, s := range sets {
		at, found := s.best()
		for i, r := range s.off {
			cheap, mark := "no", ""
			if s.costsNoMore(r) {
				cheap = "yes"
			}
			if found && i == at {
				mark = "  best GOGC"
			}
			row(s, r, cheap, mark)
		}
		row(s, s.idle, "-", "")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, s := range sets {
		if _, err := fmt.Fprintln(w, bestLine(s)); err != nil {
			return err
		}
	}
	return nil
}

// bestLine says in words what a bestSet shows.
func bestLine(s bestSet) string {
	ps := fmt.Sprintf("with %d Ps", s.procs)
	if s.procs == 1 {
		ps = "with 1 P"
	}
	at, found := s.best()
	if !found {
		return fmt.Sprintf("%s: no GOGC setting tried costs as little as the idle mode (%s, %.2f s wall, %.2f s CPU)",
			ps, formatMiB(s.idle.PeakRSSBytes), s.idle.WallSeconds, s.idle.CPUSeconds)
	}
	b := s.off[at]
	return fmt.Sprintf("%s: best GOGC %s holds %s; the idle mode holds %s, %s× of it, at %s× its wall and %s× its CPU",
		ps, b.GOGC, formatMiB(b.PeakRSSBytes), formatMiB(s.idle.PeakRSSBytes),
		ratio(float64(s.idle.PeakRSSBytes), float64(b.PeakRSSBytes)),
		ratio(s.idle.WallSeconds, b.WallSeconds), ratio(s.idle.CPUSeconds, b.CPUSeconds))
}

// ratio formats a/b with two decimals, or "-" when b is zero.
func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// pricesLine says what this machine charges for the things idle
// collection does, from a quick probe, so that a table without a win says
// why: a cycle the stepper runs costs about this much, and where a cycle
// with every CPU costs many times one with one P, idle collection has less
// to win with every CPU.
func pricesLine(p machine.Prices) string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
	if p.Procs <= 1 {
		return fmt.Sprintf("this machine (1 CPU, a quick probe; go run ./bench/machine for more): a GC cycle of an empty heap costs %s",
			ms(p.CycleOne))
	}
	return fmt.Sprintf("this machine (%d CPUs, a quick probe; go run ./bench/machine for more): a GC cycle of an empty heap costs %s with %d Ps,\n"+
		"%s with 1 P (%s); waking a sleeping thread costs %s. Every cycle the stepper runs in an idle moment costs about that much.",
		p.Procs, ms(p.CycleAll), p.Procs, ms(p.CycleOne), relative(p.CycleOne, p.CycleAll), ms(p.Wake))
}

// relative says how a compares with b: "5.0× less", "1.2× more", or
// "about the same" within 10 %.
func relative(a, b time.Duration) string {
	a, b = max(a, 1), max(b, 1)
	switch r := float64(b) / float64(a); {
	case r >= 1.1:
		return fmt.Sprintf("%.1f× less", r)
	case r <= 1/1.1:
		return fmt.Sprintf("%.1f× more", 1/r)
	}
	return "about the same"
}
