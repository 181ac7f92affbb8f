package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/idlemux/idlemux/internal/cpuburn"
	"github.com/idlemux/idlemux/internal/machine"
)

// errDigest reports runs that lost or changed bytes.
var errDigest = errors.New("digest mismatch: the bytes read are not the bytes written")

// runParent runs every mode c.runs times, interleaved, each run in its own
// child process, and prints each run as a JSON line (-json) or the medians
// as tables: the modes with each GOMAXPROCS side by side, and the idle
// mode beside the best GOGC (see writeBest), after a line of what this
// machine charges for a cycle (-probe). A failed run stops everything; a
// digest mismatch is reported after the output, as errDigest.
func runParent(c config, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this program to run it again: %w", err)
	}
	if c.probe && !c.json {
		// Before the runs, on a machine nothing of ours keeps busy.
		if _, err := fmt.Fprintf(stdout, "%s\n\n", pricesLine(machine.Probe())); err != nil {
			return err
		}
	}
	load0, loadOK := cpuburn.LoadAverage()
	var results []result
	plan := c.plan()
	for run := 1; run <= c.runs; run++ {
		for _, s := range plan {
			cc := c
			cc.gogc = s.gogc
			r, err := spawnBusy(exe, cc, s.mode, s.procs, s.busy, c.label(s, run), stderr)
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
	if !c.json {
		if err := writeTables(stdout, c, results, loadOK, load0); err != nil {
			return err
		}
	}
	return checkDigests(results)
}

// A slot is one run of a plan: a mode under one GOGC, GOMAXPROCS and
// -busy level.
type slot struct {
	procs int
	busy  int
	gogc  string
	mode  mode
}

// plan lists the runs of one round, in the order they are interleaved:
// every mode at every -gogc value, and the off loop alone at the frontier's
// other GOGC settings, under each GOMAXPROCS and -busy level.
func (c config) plan() []slot {
	gogcs := slices.Clone(c.gogcs)
	for _, g := range c.frontierGOGCs() {
		if !slices.Contains(gogcs, g) {
			gogcs = append(gogcs, g)
		}
	}
	var out []slot
	for _, procs := range c.procs {
		for _, busy := range c.busy {
			for _, g := range gogcs {
				var modes []mode
				if slices.Contains(c.gogcs, g) {
					modes = c.modes
				}
				if slices.Contains(c.frontierGOGCs(), g) && !slices.Contains(modes, modeOff) {
					modes = append(slices.Clone(modes), modeOff)
				}
				for _, m := range modes {
					out = append(out, slot{procs: procs, busy: busy, gogc: g, mode: m})
				}
			}
		}
	}
	return out
}

// frontierGOGCs is c.frontier when there is an idle mode to set beside it,
// and nothing otherwise.
func (c config) frontierGOGCs() []string {
	if !slices.Contains(c.modes, modeIdle) {
		return nil
	}
	return c.frontier
}

// label is what a run's progress display and errors call it.
func (c config) label(s slot, run int) string {
	label := string(s.mode)
	if c.runs > 1 {
		label = fmt.Sprintf("%s %d/%d", s.mode, run, c.runs)
	}
	if len(c.gogcs) > 1 || len(c.frontierGOGCs()) > 0 {
		label += " GOGC=" + s.gogc
	}
	if len(c.procs) > 1 {
		label += fmt.Sprintf(" GOMAXPROCS=%d", s.procs)
	}
	if s.busy > 0 {
		label += fmt.Sprintf(" busy %d%%", s.busy)
	}
	return label
}

// writeTables writes the medians of results: a table per -gogc value and
// -busy level with the modes under each GOMAXPROCS, the best GOGC beside
// the idle mode, and, with several GOGC values or -busy levels, every
// level side by side.
func writeTables(w io.Writer, c config, results []result, loadOK bool, load0 float64) error {
	pick := func(gogc string, busy, procs int) []result {
		var out []result
		for _, r := range results {
			if r.GOGC == gogc && r.BusyPercent == busy && r.GOMAXPROCS == procs {
				out = append(out, r)
			}
		}
		return out
	}
	var groups [][]result
	first := true
	for _, gogc := range c.gogcs {
		cc := c
		cc.gogc = gogc
		for _, busy := range c.busy {
			var rows []result
			for _, procs := range c.procs {
				level := summarize(pick(gogc, busy, procs), c.modes)
				groups = append(groups, level)
				rows = append(rows, level...)
			}
			if !first {
				fmt.Fprintln(w)
			}
			first = false
			if err := writeTable(w, cc, rows); err != nil {
				return err
			}
		}
	}
	for _, gogc := range c.gogcs {
		if len(c.frontierGOGCs()) == 0 {
			break
		}
		for _, busy := range c.busy {
			var sets []bestSet
			for _, procs := range c.procs {
				idle := summarize(pick(gogc, busy, procs), []mode{modeIdle})
				if len(idle) == 0 {
					continue
				}
				set := bestSet{procs: procs, idle: idle[0]}
				for _, g := range c.frontierGOGCs() {
					set.off = append(set.off, summarize(pick(g, busy, procs), []mode{modeOff})...)
				}
				sets = append(sets, set)
			}
			fmt.Fprintln(w)
			if err := writeBest(w, c, gogc, busy, sets); err != nil {
				return err
			}
		}
	}
	if len(c.gogcs) > 1 || len(c.busy) > 1 {
		fmt.Fprintln(w)
		note := ""
		if load1, ok := cpuburn.LoadAverage(); ok && loadOK {
			note = fmt.Sprintf("; one-minute load average %.1f before the runs, %.1f after", load0, load1)
		}
		if err := writeConditions(w, c, groups, note); err != nil {
			return err
		}
	}
	return nil
}

// spawnBusy is spawn with busy percent of one CPU kept busy by another
// process (this program again, as a cpuburn burner) for as long as the
// child runs; the burner is stopped before spawnBusy returns, whatever
// happened.
func spawnBusy(exe string, c config, m mode, procs, busy int, label string, stderr io.Writer) (result, error) {
	b, err := cpuburn.Start(exe, busy)
	if err != nil {
		return result{}, err
	}
	r, err := spawn(exe, c, m, procs, label, stderr)
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
