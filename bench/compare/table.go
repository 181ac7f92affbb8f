package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// samples collects benchmark results by full benchmark name.
type samples map[string][]*benchfmt.Result

func newSamples() samples { return samples{} }

// add records every result of a benchmark run.
func (s samples) add(out []byte) {
	for _, r := range parseResults(out) {
		n := r.name.String()
		s[n] = append(s[n], r.res)
	}
}

// secPerOp returns the time per operation of every result.
func secPerOp(rs []*benchfmt.Result) []float64 {
	var v []float64
	for _, r := range rs {
		if x, ok := r.Value("sec/op"); ok {
			v = append(v, x)
		}
	}
	return v
}

// A stat is one row's comparison.
type stat struct {
	name           string
	old, new       benchmath.Summary
	cmp            benchmath.Comparison
	oldCI, newCI   string
	delta, pAndLen string
}

// thresholds are benchstat's: α = 0.05.
var thresholds = benchmath.DefaultThresholds

// compareRow summarises both sides of a row as benchstat does for sec/op:
// the median and its 95% confidence interval, no distributional assumption,
// and a Mann-Whitney U test between the sides.
func compareRow(name string, old, nw []float64) stat {
	so := benchmath.NewSample(old, &thresholds)
	sn := benchmath.NewSample(nw, &thresholds)
	a := benchmath.AssumeNothing
	st := stat{name: name, old: a.Summary(so, 0.95), new: a.Summary(sn, 0.95), cmp: a.Compare(so, sn)}
	st.oldCI, st.newCI = st.old.PctRangeString(), st.new.PctRangeString()
	st.delta = st.cmp.FormatDelta(st.old.Center, st.new.Center)
	st.pAndLen = st.cmp.String()
	return st
}

// writeTable prints one comparison: each row's median time on both sides
// with its 95% confidence interval, the speedup ratio old/new (greater
// than 1 when the new side is faster), and the change and p-value as
// benchstat reports them; "~" means the difference is not significant at
// α = 0.05. With keep, the sides are also written, renamed to their rows,
// to keep/KEY/old.txt and new.txt, for benchstat itself.
func writeTable(w io.Writer, c comparison, p plan, s samples, rounds int, keep string) error {
	if keep != "" {
		if err := keepSides(filepath.Join(keep, c.key), p, s); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "%s: time/op, median of %d interleaved rounds ± 95%% CI (benchmath, as benchstat)\n", c.title, rounds)
	fmt.Fprintf(w, "speedup ratio: compare with the result of %s (greater is better)\n\n", c.oldLabel)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := fmt.Sprintf("name\t%s\t%s\tspeedup ratio\tvs base\tp\n", c.oldLabel, c.newLabel)
	if c.key == "impl" {
		head = "name\tbaseline impl\t" + strings.TrimPrefix(head, "name\t")
	}
	fmt.Fprint(tw, head)
	for _, r := range p.rows {
		old, nw := secPerOp(s[r.old]), secPerOp(s[r.new])
		fmt.Fprintf(tw, "%s\t", r.name)
		if c.key == "impl" {
			fmt.Fprintf(tw, "%s\t", r.oldValue)
		}
		if len(old) == 0 || len(nw) == 0 {
			fmt.Fprintln(tw, "(no data)")
			continue
		}
		st := compareRow(r.name, old, nw)
		fmt.Fprintf(tw, "%s ± %s\t%s ± %s\t%.3f\t%s\t%s\n",
			seconds(st.old.Center), st.oldCI, seconds(st.new.Center), st.newCI,
			st.old.Center/st.new.Center, st.delta, st.pAndLen)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return nil
}

// keepSides writes the two sides of every row, renamed to the row's name,
// to dir/old.txt and dir/new.txt in the standard benchmark format.
func keepSides(dir string, p plan, s samples) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, file := range []string{"old.txt", "new.txt"} {
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			return err
		}
		bw := benchfmt.NewWriter(f)
		for _, r := range p.rows {
			for _, res := range s[[]string{r.old, r.new}[i]] {
				res = res.Clone()
				res.Name = benchfmt.Name(r.name)
				if err := bw.Write(res); err != nil {
					f.Close()
					return err
				}
			}
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// seconds formats a duration given in seconds: 1.23µs.
func seconds(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "?"
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 3, 64) + "s"
	case v >= 1e-3:
		return strconv.FormatFloat(v*1e3, 'f', 3, 64) + "ms"
	case v >= 1e-6:
		return strconv.FormatFloat(v*1e6, 'f', 3, 64) + "µs"
	}
	return strconv.FormatFloat(v*1e9, 'f', 2, 64) + "ns"
}
