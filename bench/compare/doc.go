// Compare runs idlemux's benchmarks in two configurations side by side and
// prints, for each benchmark, its time in both and a speedup ratio, in the
// style of Ruby's benchmark-driver tables ("speedup ratio: compare with the
// result of A (greater is better)").
//
// The configurations are the key=value parts of the benchmark names in
// package bench:
//
//	impl   the plain-Go baseline (impl=mutex, chan, cond, os, unix) against impl=gvl
//	step   idle stepping off (step=off) against on (step=on)
//	depth  depth=0 against depth=2000 (seed 002: the ratio should stay near 1)
//
// Compare builds the benchmark binary once, then runs the two sides
// alternately, one benchmark at a time, for several rounds, so that a noisy
// machine disturbs both sides alike. Results are read with
// golang.org/x/perf/benchfmt and summarised with golang.org/x/perf/benchmath
// exactly as benchstat summarises time/op: the median, its 95% confidence
// interval with no distributional assumption, and a Mann-Whitney U test; a
// change of "~" means the difference is not significant at α = 0.05. The
// speedup ratio is the old median over the new one.
//
// Usage:
//
//	go run ./bench/compare [flags]
//
// The flags are:
//
//	-vs keys
//		comma-separated configuration keys to compare, each in its own table
//		(default "impl,step")
//	-rounds n
//		how many times each side runs (default 6)
//	-benchtime d
//		the -test.benchtime of each run (default 100ms)
//	-bench regexp
//		which benchmarks to consider (default ".")
//	-keep dir
//		keep each comparison's two sides in dir/KEY/old.txt and new.txt,
//		the benchmarks renamed to their rows, ready for benchstat
package main
