package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// writeTable writes one row per summary, headed by a line saying what was
// run. Ratios are to the off row, the baseline, when there is one.
func writeTable(w io.Writer, c config, rows []result) error {
	var head strings.Builder
	readers := "readers"
	if c.readers == 1 {
		readers = "reader"
	}
	fmt.Fprintf(&head, "%s bytes from /dev/urandom, %d %s, %d-byte reads, GOGC=%s",
		formatCount(c.length), c.readers, readers, c.chunk, c.gogc)
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

	var base *result
	for i := range rows {
		if rows[i].Mode == modeOff {
			base = &rows[i]
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// AlignRight suits the numbers; the mode column is padded by hand to
	// read left-aligned.
	width := 0
	for _, m := range knownModes {
		width = max(width, len(m))
	}
	fmt.Fprintf(tw, "%-*s\tGOGC\tpeak RSS\t×off\twall\t×off\tCPU\tGC cycles\tstepper\tidle steps\tbytes\tdigest\t\n", width, "mode")
	for _, r := range rows {
		rssRatio, wallRatio := "-", "-"
		if base != nil && base.PeakRSSBytes > 0 && base.WallSeconds > 0 {
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
		fmt.Fprintf(tw, "%-*s\t%s\t%s\t%s\t%.2f s\t%s\t%.2f s\t%d\t%s\t%s\t%s\t%s\t\n",
			width, r.Mode, r.GOGC, formatMiB(r.PeakRSSBytes), rssRatio, r.WallSeconds, wallRatio, r.CPUSeconds,
			r.GCCycles, stepped, steps, formatCount(r.Bytes), digest)
	}
	return tw.Flush()
}
