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
// Each cost is measured -rounds times; the table shows the median and the
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
	"slices"
	"time"

	"golang.org/x/sys/unix"
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
	costs, err := measureAll(*rounds, defaultSizes)
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

// sizes is how much work one round of each measurement does.
type sizes struct {
	cycles  int // runtime.GC calls
	wakes   int // channel round trips
	fault   int // bytes of memory touched, a multiple of 2 MiB
	syscall int // getppid calls
}

var defaultSizes = sizes{cycles: 300, wakes: 200, fault: 32 << 20, syscall: 200000}

// A cost is one measured price: its median over the rounds and its range.
type cost struct {
	Name   string        `json:"name"`
	Procs  int           `json:"gomaxprocs,omitempty"`
	Median time.Duration `json:"median_ns"`
	Min    time.Duration `json:"min_ns"`
	Max    time.Duration `json:"max_ns"`
}

// measureAll measures every cost in turn, rounds times each.
func measureAll(rounds int, sz sizes) ([]cost, error) {
	all := runtime.NumCPU()
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	var out []cost
	for _, procs := range procsToTry(all) {
		runtime.GOMAXPROCS(procs)
		out = append(out, repeat("gc-cycle", procs, rounds, func() time.Duration { return gcCycle(sz.cycles) }))
		if procs > 1 { // with one P the receiver cannot run before the sender spins out
			out = append(out, repeat("wake", procs, rounds, func() time.Duration { return wake(sz.wakes) }))
		}
	}
	runtime.GOMAXPROCS(prev)
	for _, huge := range []bool{false, true} {
		name := "fault-4k"
		if huge {
			name = "fault-thp"
		}
		var err error
		c := repeat(name, 0, rounds, func() time.Duration {
			d, ferr := pageFault(sz.fault, huge)
			if ferr != nil && err == nil {
				err = ferr
			}
			return d
		})
		if err != nil {
			if huge && err == errUnsupported {
				continue // not a failure: the system has no such advice
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, c)
	}
	out = append(out, repeat("syscall", 0, rounds, func() time.Duration { return getppid(sz.syscall) }))
	return out, nil
}

// procsToTry is 1 and all, or just 1 on a one-CPU machine.
func procsToTry(all int) []int {
	if all <= 1 {
		return []int{1}
	}
	return []int{1, all}
}

// repeat runs f rounds times and summarizes what it returned.
func repeat(name string, procs, rounds int, f func() time.Duration) cost {
	ds := make([]time.Duration, rounds)
	for i := range ds {
		ds[i] = f()
	}
	slices.Sort(ds)
	return cost{Name: name, Procs: procs, Median: ds[(len(ds)-1)/2], Min: ds[0], Max: ds[len(ds)-1]}
}

// gcCycle is the mean time of n runtime.GC calls on a heap with nothing
// live but the program's own.
func gcCycle(n int) time.Duration {
	runtime.GC() // warm: the first cycle after a change pays for it
	start := time.Now()
	for range n {
		runtime.GC()
	}
	return time.Since(start) / time.Duration(n)
}

// wake is the median time from a goroutine sending on a channel to the
// goroutine receiving it starting to run, where the receiver has waited
// long enough (idleFor) for its thread to go to sleep and the sender stays
// busy: what waking work on an idle thread costs. It needs two Ps: with
// one, the receiver would run only once the sender's spin ends.
func wake(n int) time.Duration {
	ch := make(chan time.Time)
	lat := make([]time.Duration, n)
	done := make(chan struct{})
	go func() {
		for i := range lat {
			lat[i] = time.Since(<-ch)
		}
		close(done)
	}()
	for range n {
		time.Sleep(idleFor)
		ch <- time.Now()
		// Stay busy, so that the receiver runs on another thread (or,
		// with one P, after this spin: then wake measures the spin).
		for t := time.Now(); time.Since(t) < spinFor; {
		}
	}
	<-done
	slices.Sort(lat)
	return lat[(n-1)/2]
}

// idleFor is how long wake leaves the receiver waiting before each send,
// and spinFor how long the sender stays busy after it.
const (
	idleFor = 300 * time.Microsecond
	spinFor = time.Millisecond
)

// getppid is the mean time of one getppid system call.
func getppid(n int) time.Duration {
	start := time.Now()
	for range n {
		unix.Getppid()
	}
	return time.Since(start) / time.Duration(n)
}

// printTable writes costs as an aligned table.
func printTable(w io.Writer, costs []cost) {
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
