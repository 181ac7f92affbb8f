package machine

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// Sizes is how much work one round of each measurement does.
type Sizes struct {
	Cycles  int // runtime.GC calls
	Wakes   int // channel round trips
	Fault   int // bytes of memory touched, a multiple of 2 MiB
	Syscall int // getppid calls
}

// DefaultSizes is what bench/machine measures: each cost is the mean or
// median of enough repetitions to be stable to a few per cent here.
var DefaultSizes = Sizes{Cycles: 300, Wakes: 200, Fault: 32 << 20, Syscall: 200000}

// A Cost is one measured price: its median over the rounds and its range.
type Cost struct {
	Name   string        `json:"name"`
	Procs  int           `json:"gomaxprocs,omitempty"`
	Median time.Duration `json:"median_ns"`
	Min    time.Duration `json:"min_ns"`
	Max    time.Duration `json:"max_ns"`
}

// Names of the costs MeasureAll reports.
const (
	NameCycle    = "gc-cycle"
	NameWake     = "wake"
	NameFault    = "fault-4k"
	NameFaultTHP = "fault-thp"
	NameSyscall  = "syscall"
)

// MeasureAll measures every cost in turn, rounds times each: a cycle and a
// wakeup at each of ProcsToTry's P counts, then the page faults and the
// system call. It changes GOMAXPROCS while it runs and restores it.
func MeasureAll(rounds int, sz Sizes) ([]Cost, error) {
	out := MeasureCPU(rounds, sz)
	for _, huge := range []bool{false, true} {
		name := NameFault
		if huge {
			name = NameFaultTHP
		}
		var err error
		c := Repeat(name, 0, rounds, func() time.Duration {
			d, ferr := PageFault(sz.Fault, huge)
			if ferr != nil && err == nil {
				err = ferr
			}
			return d
		})
		if err != nil {
			if huge && err == ErrUnsupported {
				continue // not a failure: the system has no such advice
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, c)
	}
	return append(out, Repeat(NameSyscall, 0, rounds, func() time.Duration { return Getppid(sz.Syscall) })), nil
}

// MeasureCPU measures the costs that depend on the P count: a cycle at
// each of ProcsToTry's counts, and a wakeup where there is more than one P.
// It changes GOMAXPROCS while it runs and restores it.
func MeasureCPU(rounds int, sz Sizes) []Cost {
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	var out []Cost
	for _, procs := range ProcsToTry(runtime.NumCPU()) {
		runtime.GOMAXPROCS(procs)
		out = append(out, Repeat(NameCycle, procs, rounds, func() time.Duration { return GCCycle(sz.Cycles) }))
		if procs > 1 { // with one P the receiver cannot run before the sender spins out
			out = append(out, Repeat(NameWake, procs, rounds, func() time.Duration { return Wake(sz.Wakes) }))
		}
	}
	return out
}

// ProcsToTry is 1 and all, or just 1 on a one-CPU machine.
func ProcsToTry(all int) []int {
	if all <= 1 {
		return []int{1}
	}
	return []int{1, all}
}

// Repeat runs f rounds times and summarizes what it returned.
func Repeat(name string, procs, rounds int, f func() time.Duration) Cost {
	ds := make([]time.Duration, rounds)
	for i := range ds {
		ds[i] = f()
	}
	slices.Sort(ds)
	return Cost{Name: name, Procs: procs, Median: ds[(len(ds)-1)/2], Min: ds[0], Max: ds[len(ds)-1]}
}

// GCCycle is the mean time of n runtime.GC calls on a heap with nothing
// live but the program's own.
func GCCycle(n int) time.Duration {
	runtime.GC() // warm: the first cycle after a change pays for it
	start := time.Now()
	for range n {
		runtime.GC()
	}
	return time.Since(start) / time.Duration(n)
}

// Wake is the median time from a goroutine sending on a channel to the
// goroutine receiving it starting to run, where the receiver has waited
// long enough (idleFor) for its thread to go to sleep and the sender stays
// busy: what waking work on an idle thread costs. It needs two Ps: with
// one, the receiver would run only once the sender's spin ends.
func Wake(n int) time.Duration {
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
		// with one P, after this spin: then Wake measures the spin).
		for t := time.Now(); time.Since(t) < spinFor; {
		}
	}
	<-done
	slices.Sort(lat)
	return lat[(n-1)/2]
}

// idleFor is how long Wake leaves the receiver waiting before each send,
// and spinFor how long the sender stays busy after it.
const (
	idleFor = 300 * time.Microsecond
	spinFor = time.Millisecond
)

// Getppid is the mean time of one getppid system call.
func Getppid(n int) time.Duration {
	start := time.Now()
	for range n {
		unix.Getppid()
	}
	return time.Since(start) / time.Duration(n)
}
