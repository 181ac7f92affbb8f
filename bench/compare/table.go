package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
)

// benchstatCmd is benchstat at the x/perf version go.mod requires, run
// through `go run` as CI runs staticcheck. The benchstat library packages
// (benchmath, and benchfmt through it) need modules this module does not
// require, so compare leaves the statistics to the command.
const benchstatCmd = "golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"

// samples collects benchmark results by full benchmark name.
type samples map[string][]result

func newSamples() samples { return samples{} }

// add records every result line of a benchmark run.
func (s samples) add(out []byte) {
	for _, r := range parseResults(out) {
		n := r.name.String()
		s[n] = append(s[n], r)
	}
}

// sideFiles writes the two sides of every row, renamed to the row's name,
// to old.txt and new.txt in dir, in the standard benchmark format.
func sideFiles(dir string, p plan, s samples) (old, nw string, err error) {
	var bufs [2]bytes.Buffer
	for _, r := range p.rows {
		for i, full := range []string{r.old, r.new} {
			for _, res := range s[full] {
				fmt.Fprintf(&bufs[i], "Benchmark%s %s %s\n", r.name, res.iters, strings.Join(res.values, " "))
			}
		}
	}
	old, nw = filepath.Join(dir, "old.txt"), filepath.Join(dir, "new.txt")
	if err := os.WriteFile(old, bufs[0].Bytes(), 0o644); err != nil {
		return "", "", err
	}
	return old, nw, os.WriteFile(nw, bufs[1].Bytes(), 0o644)
}

// benchstat runs benchstat on the two files with the given output format.
func benchstat(format, old, nw string) ([]byte, error) {
	cmd := exec.Command("go", "run", benchstatCmd, "-format", format, old, nw)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("running benchstat: %w", err)
	}
	return out, nil
}

// A stat is benchstat's sec/op line for one row.
type stat struct {
	name             string
	old, new         float64 // medians, seconds
	oldCI, newCI     string
	vsBase, pAndSize string
}

// secPerOp reads the sec/op table from benchstat's CSV output.
func secPerOp(out []byte) ([]stat, error) {
	r := csv.NewReader(bytes.NewReader(out))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	var stats []stat
	in := false
	for _, rec := range recs {
		if len(rec) < 7 {
			continue
		}
		switch {
		case rec[0] == "" && rec[1] == "sec/op":
			in = true
			continue
		case rec[0] == "":
			if in {
				return stats, nil
			}
			continue
		case !in || rec[0] == "geomean":
			continue
		}
		old, err1 := strconv.ParseFloat(rec[1], 64)
		nw, err2 := strconv.ParseFloat(rec[3], 64)
		if err1 != nil || err2 != nil {
			continue // a row benchstat could not summarise
		}
		stats = append(stats, stat{rec[0], old, nw, rec[2], rec[4], rec[5], rec[6]})
	}
	return stats, nil
}

// writeTable prints one comparison: each row's median time on both sides
// with its 95% confidence interval, the speedup ratio old/new (greater
// than 1 when the new side is faster), and benchstat's change and p-value;
// "~" means the difference is not significant at α = 0.05.
func writeTable(w io.Writer, c comparison, p plan, s samples, rounds int, keep string) error {
	dir, err := os.MkdirTemp("", "idlemux-benchstat-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if keep != "" {
		dir = filepath.Join(keep, c.key)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	old, nw, err := sideFiles(dir, p, s)
	if err != nil {
		return err
	}
	out, err := benchstat("csv", old, nw)
	if err != nil {
		return err
	}
	stats, err := secPerOp(out)
	if err != nil {
		return err
	}
	if keep != "" {
		text, err := benchstat("text", old, nw)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "benchstat.txt"), text, 0o644); err != nil {
			return err
		}
	}
	baseline := map[string]string{}
	for _, r := range p.rows {
		baseline[r.name] = r.oldValue
	}

	fmt.Fprintf(w, "%s: time/op, median of %d interleaved rounds ± 95%% CI (benchstat)\n", c.title, rounds)
	fmt.Fprintf(w, "speedup ratio: compare with the result of %s (greater is better)\n\n", c.oldLabel)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := fmt.Sprintf("name\t%s\t%s\tspeedup ratio\tvs base\tp\n", c.oldLabel, c.newLabel)
	if c.key == "impl" {
		head = "name\tbaseline impl\t" + strings.TrimPrefix(head, "name\t")
	}
	fmt.Fprint(tw, head)
	for _, st := range stats {
		fmt.Fprintf(tw, "%s\t", st.name)
		if c.key == "impl" {
			fmt.Fprintf(tw, "%s\t", baseline[st.name])
		}
		fmt.Fprintf(tw, "%s ± %s\t%s ± %s\t%.3f\t%s\t%s\n",
			seconds(st.old), st.oldCI, seconds(st.new), st.newCI, st.old/st.new, st.vsBase, st.pAndSize)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return nil
}

// seconds formats a duration given in seconds: 1.23µs.
func seconds(v float64) string {
	switch {
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 3, 64) + "s"
	case v >= 1e-3:
		return strconv.FormatFloat(v*1e3, 'f', 3, 64) + "ms"
	case v >= 1e-6:
		return strconv.FormatFloat(v*1e6, 'f', 3, 64) + "µs"
	}
	return strconv.FormatFloat(v*1e9, 'f', 2, 64) + "ns"
}
