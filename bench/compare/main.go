package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// benchPkg is the package whose benchmarks compare runs.
const benchPkg = "github.com/idlemux/idlemux/bench"

func main() {
	vs := flag.String("vs", "impl,step", "comma-separated configuration keys to compare: impl, step, depth")
	rounds := flag.Int("rounds", 6, "how many times each side runs")
	benchtime := flag.String("benchtime", "100ms", "-test.benchtime of each run")
	bench := flag.String("bench", ".", "which benchmarks to consider (a -test.bench regexp)")
	keep := flag.String("keep", "", "keep each comparison's old.txt, new.txt and benchstat.txt in this directory")
	flag.Parse()

	var cmps []comparison
	for _, k := range strings.Split(*vs, ",") {
		c, ok := comparisons[strings.TrimSpace(k)]
		if !ok {
			fmt.Fprintf(os.Stderr, "compare: unknown configuration key %q (want impl, step or depth)\n", k)
			os.Exit(2)
		}
		cmps = append(cmps, c)
	}
	if *rounds < 1 {
		fmt.Fprintln(os.Stderr, "compare: -rounds must be at least 1")
		os.Exit(2)
	}
	if err := run(os.Stdout, cmps, *rounds, *benchtime, *bench, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, cmps []comparison, rounds int, benchtime, bench, keep string) error {
	dir, err := os.MkdirTemp("", "idlemux-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "bench.test")
	build := exec.Command("go", "test", "-c", "-o", bin, benchPkg)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the benchmarks: %w", err)
	}

	// Discover the benchmark names with one iteration of each.
	out, err := runBench(bin, bench, "1x")
	if err != nil {
		return err
	}
	names := benchNames(out)

	for _, c := range cmps {
		plan := c.plan(names)
		if len(plan.rows) == 0 {
			fmt.Fprintf(w, "%s: no benchmark matching %q has both sides; nothing to compare\n\n", c.title, bench)
			continue
		}
		samples := newSamples()
		for r := range rounds {
			// Alternate which side goes first, so neither always runs
			// on a machine warmed (or cooled) by the other.
			order := []int{0, 1}
			if r%2 == 1 {
				order = []int{1, 0}
			}
			for _, top := range plan.tops {
				for _, s := range order {
					pat := plan.pattern(top, s)
					if pat == "" {
						continue
					}
					fmt.Fprintf(os.Stderr, "%s: round %d/%d %s\n", c.key, r+1, rounds, pat)
					out, err := runBench(bin, pat, benchtime)
					if err != nil {
						return err
					}
					samples.add(out)
				}
			}
		}
		if err := writeTable(w, c, plan, samples, rounds, keep); err != nil {
			return err
		}
	}
	return nil
}

// runBench runs the benchmark binary on the benchmarks matching pattern and
// returns its standard output.
func runBench(bin, pattern, benchtime string) ([]byte, error) {
	cmd := exec.Command(bin, "-test.run", "^$", "-test.bench", pattern,
		"-test.benchtime", benchtime, "-test.count", "1", "-test.benchmem")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		os.Stderr.Write(out)
		return nil, fmt.Errorf("running %s -test.bench %s: %w", filepath.Base(bin), pattern, err)
	}
	return out, nil
}
