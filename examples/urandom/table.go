package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// writeTable writes one row per summary, headed by a line saying what was
// run. Ratios are to the off row with the same GOMAXPROCS, the baseline,
// when there is one.
func writeTable(w io.Writer, c config, rows []result) error {
	var head strings.Builder
	readers := "readers"
	if c.readers == 1 {
		readers = "reader"
	}
	fmt.Fprintf(&head, "%s bytes from /dev/urandom, %d %s, %d-byte reads, GOGC=%s",
		formatCount(c.length), c.readers, readers, c.chunk, c.gogc)
	if c.budget > 0 {
		fmt.Fprintf(&head, ", the idle mode's budget %g %%", 100*c.budget)
	}
	if c.runs > 1 {
		fmt.Fprintf(&head, ", median of %d runs", c.runs)
	}
	if len(rows) > 0 && rows[0].BusyPercent > 0 {
		fmt.Fprintf(&head, ", %d %% of one CPU kept busy by another process (it took %.0f %%)",
			rows[0].BusyPercent, 100*rows[0].BusyShare)
	}
	if _, err := fmt.Fprintf(w, "%s\n\n", head.String()); err != nil {
		return err
	}

	base := map[int]*result{} // the off row of each GOMAXPROCS
	for i := range rows {
		if rows[i].Mode == modeOff {
			base[rows[i].GOMAXPROCS] = &rows[i]
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// AlignRight suits the numbers; the mode column is padded by hand to
	// read left-aligned.
	width := 0
	for _, m := range knownModes {
		width = max(width, len(m))
	}
	fmt.Fprintf(tw, "%-*s\tGOMAXPROCS\tGOGC\tpeak RSS\t×off\twall\t×off\tCPU\tGC cycles\tstepper\tidle steps\tbytes\tdigest\t\n", width, "mode")
	for _, r := range rows {
		rssRatio, wallRatio := "-", "-"
		if base := base[r.GOMAXPROCS]; base != nil && base.PeakRSSBytes > 0 && base.WallSeconds > 0 {
			rssRatio = fmt.Sprintf("%.2f", float64(r.PeakRSSBytes)/float64(base.PeakRSSBytes))
			wallRatio = fmt.Sprintf("%.2f", r.WallSeconds/base.WallSeconds)
		}
		steps := formatCount(int64(r.IdleSteps))
		if r.Mode == modeGoroutines {
			steps = "-" // no loop, no idle point to step at
		}
		stepped := "-" // no stepper
		if r.Mode == modeIdle {
			stepped = formatCount(int64(r.StepperCycles))
		}
		digest := "ok"
		if !r.DigestOK {
			digest = "MISMATCH"
		}
		fmt.Fprintf(tw, "%-*s\t%d\t%s\t%s\t%s\t%.2f s\t%s\t%.2f s\t%d\t%s\t%s\t%s\t%s\t\n",
			width, r.Mode, r.GOMAXPROCS, r.GOGC, formatMiB(r.PeakRSSBytes), rssRatio, r.WallSeconds, wallRatio, r.CPUSeconds,
			r.GCCycles, stepped, steps, formatCount(r.Bytes), digest)
	}
	return tw.Flush()
}

// writeConditions writes one row per GOGC, GOMAXPROCS and -busy level,
// from each level's summaries: every mode's peak RSS and wall time, and each mode's
// ratios to the off mode's at the same level. It is the table that shows
// how a mode's advantage changes as CPU is taken away. note ends the
// heading.
func writeConditions(w io.Writer, c config, groups [][]result, note string) error {
	runs := ""
	if c.runs > 1 {
		runs = fmt.Sprintf(", medians of %d runs", c.runs)
	}
	if _, err := fmt.Fprintf(w, "peak RSS and wall by GOGC and CPU taken away by another process (%% of one CPU: asked, taken); ratios to off at the same level%s%s\n\n",
		runs, note); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "GOGC\tGOMAXPROCS\tbusy\ttaken\t"
	for _, m := range c.modes {
		head += string(m) + " peak\twall\t"
	}
	for _, m := range c.modes {
		if m != modeOff {
			head += string(m) + "/off peak\twall\t"
		}
	}
	fmt.Fprintln(tw, head)
	for _, rows := range groups {
		if len(rows) == 0 {
			continue
		}
		byMode := map[mode]result{}
		for _, r := range rows {
			byMode[r.Mode] = r
		}
		first := rows[0]
		fmt.Fprintf(tw, "%s\t%d\t%d %%\t%.0f %%\t", first.GOGC, first.GOMAXPROCS, first.BusyPercent, 100*first.BusyShare)
		for _, m := range c.modes {
			r, ok := byMode[m]
			if !ok {
				fmt.Fprint(tw, "-\t-\t")
				continue
			}
			fmt.Fprintf(tw, "%s\t%.2f s\t", formatMiB(r.PeakRSSBytes), r.WallSeconds)
		}
		off, hasOff := byMode[modeOff]
		for _, m := range c.modes {
			if m == modeOff {
				continue
			}
			r := byMode[m]
			if !hasOff || off.PeakRSSBytes == 0 || off.WallSeconds == 0 {
				fmt.Fprint(tw, "-\t-\t")
				continue
			}
			fmt.Fprintf(tw, "%.2f\t%.2f\t", float64(r.PeakRSSBytes)/float64(off.PeakRSSBytes), r.WallSeconds/off.WallSeconds)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
