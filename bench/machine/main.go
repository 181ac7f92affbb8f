// Command machine measures what this machine charges for the things idle
// collection does, so that idlemux's numbers from one machine can be read
// on another. The policy's results hang on a few costs that differ by an
// order of magnitude between a laptop and some virtual machines:
//
//	gc-cycle     one runtime.GC() of an empty heap, with GOMAXPROCS=1 and
//	             with every CPU: the difference is what the collector pays
//	             to wake its workers on other threads
//	wake         from a send on a channel to the receiving goroutine running
//	             on another thread, the receiver having waited long enough
//	             for its thread to sleep (every CPU; not on a one-CPU
//	             machine): the price of a cross-thread wakeup
//	fault-4k     touching a 4 KiB page of memory that was returned to the
//	             operating system (madvise MADV_DONTNEED): what a burst
//	             pays, page by page, for memory the stepper gave back in
//	             the gap before it
//	fault-thp    the same in a range advised MADV_HUGEPAGE, per 4 KiB (Linux)
//	syscall      one getppid system call
//
// The measuring is package internal/machine, which the urandom demo also
// uses for its quick probe. Each cost is measured -rounds times; the table shows the median and the
// range. Nothing else should run meanwhile.
//
// Usage:
//
//	go run ./bench/machine [-rounds n] [-json]
//
// Bad flags are reported in one line with exit status 2.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/idlemux/idlemux/internal/machine"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("machine", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rounds := fs.Int("rounds", 5, "rounds of each measurement; the table shows medians")
	asJSON := fs.Bool("json", false, "print one JSON object per cost instead of the table")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *rounds < 1 {
		fmt.Fprintln(stderr, "machine: -rounds must be at least 1")
		return 2
	}
	costs, err := machine.MeasureAll(*rounds, machine.DefaultSizes)
	if err != nil {
		fmt.Fprintf(stderr, "machine: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, c := range costs {
			if err := enc.Encode(c); err != nil {
				fmt.Fprintf(stderr, "machine: %v\n", err)
				return 1
			}
		}
		return 0
	}
	printTable(stdout, costs)
	return 0
}

// printTable writes costs as an aligned table.
func printTable(w io.Writer, costs []machine.Cost) {
	fmt.Fprintf(w, "%d CPUs, %s/%s, %s; medians of the rounds\n\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(w, "  %-10s %10s %12s %12s %12s\n", "cost", "GOMAXPROCS", "median", "min", "max")
	for _, c := range costs {
		procs := "-"
		if c.Procs > 0 {
			procs = fmt.Sprint(c.Procs)
		}
		fmt.Fprintf(w, "  %-10s %10s %12s %12s %12s\n", c.Name, procs, fmtDur(c.Median), fmtDur(c.Min), fmtDur(c.Max))
	}
}

// fmtDur prints d in µs with two decimals, or in ns below a microsecond.
func fmtDur(d time.Duration) string {
	if d < time.Microsecond {
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	}
	return fmt.Sprintf("%.2f µs", float64(d)/float64(time.Microsecond))
}
