package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/idlemux/idlemux/internal/cpuburn"
)

// errDigest reports runs that lost or changed bytes.
var errDigest = errors.New("digest mismatch: the bytes read are not the bytes written")

// runParent runs every mode c.runs times, interleaved, each run in its own
// child process, and prints each run as a JSON line (-json) or the medians
// as a table. A failed run stops everything; a digest mismatch is reported
// after the output, as errDigest.
func runParent(c config, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this program to run it again: %w", err)
	}
	load0, loadOK := cpuburn.LoadAverage()
	var results []result
	for run := 1; run <= c.runs; run++ {
		for _, gogc := range c.gogcs {
			cc := c
			cc.gogc = gogc
			for _, busy := range c.busy {
				for _, m := range c.modes {
					label := string(m)
					if c.runs > 1 {
						label = fmt.Sprintf("%s %d/%d", m, run, c.runs)
					}
					if len(c.gogcs) > 1 {
						label += " GOGC=" + gogc
					}
					if busy > 0 {
						label += fmt.Sprintf(" busy %d%%", busy)
					}
					r, err := spawnBusy(exe, cc, m, busy, label, stderr)
					if err != nil {
						return err
					}
					r.Run = run
					results = append(results, r)
					if c.json {
						if err := writeJSONLine(stdout, r); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	if !c.json {
		var groups [][]result
		for _, gogc := range c.gogcs {
			cc := c
			cc.gogc = gogc
			for _, busy := range c.busy {
				var level []result
				for _, r := range results {
					if r.GOGC == gogc && r.BusyPercent == busy {
						level = append(level, r)
					}
				}
				rows := summarize(level, c.modes)
				if len(groups) > 0 {
					fmt.Fprintln(stdout)
				}
				groups = append(groups, rows)
				if err := writeTable(stdout, cc, rows); err != nil {
					return err
				}
			}
		}
		if len(groups) > 1 {
			fmt.Fprintln(stdout)
			note := ""
			if load1, ok := cpuburn.LoadAverage(); ok && loadOK {
				note = fmt.Sprintf("; one-minute load average %.1f before the runs, %.1f after", load0, load1)
			}
			if err := writeConditions(stdout, c, groups, note); err != nil {
				return err
			}
		}
	}
	return checkDigests(results)
}

// spawnBusy is spawn with busy percent of one CPU kept busy by another
// process (this program again, as a cpuburn burner) for as long as the
// child runs; the burner is stopped before spawnBusy returns, whatever
// happened.
func spawnBusy(exe string, c config, m mode, busy int, label string, stderr io.Writer) (result, error) {
	b, err := cpuburn.Start(exe, busy)
	if err != nil {
		return result{}, err
	}
	r, err := spawn(exe, c, m, label, stderr)
	u, berr := b.Stop()
	if err != nil {
		return result{}, err
	}
	if berr != nil {
		return result{}, fmt.Errorf("%s run: %w", label, berr)
	}
	r.BusyPercent, r.BusyShare = busy, u.Share()
	return r, nil
}

// checkDigests returns errDigest, naming the runs, if any run lost bytes.
func checkDigests(results []result) error {
	var bad []string
	for _, r := range results {
		if !r.DigestOK {
			bad = append(bad, fmt.Sprintf("%s run %d", r.Mode, r.Run))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w (%s)", errDigest, strings.Join(bad, ", "))
	}
	return nil
}
