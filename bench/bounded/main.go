// Command bounded is the burst program of "memory bounded on every path":
// goroutines allocate 32 KiB buffers as fast as they can, each between
// Work.Begin and Work.End (what httpidle.Handler does around a handler),
// in bursts with quiet gaps between them, then a longer quiet. It reports
// the heap the bursts reached (sampled every 2 ms) and the heap after the
// quiet, for one Runtime and for two (each with its own Work), under the
// GOGC the process runs with; run it with GOGC=off and with GOGC=100 to
// compare:
//
//	GOGC=off go run ./bench/bounded
//	GOGC=100 go run ./bench/bounded
//
// Each configuration runs in a process of its own (the peak is per
// process); -runtimes picks one.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idlemux/idlemux/gcstep"
)

var sink atomic.Pointer[[]byte]

func main() {
	runtimes := flag.Int("runtimes", 0, "Runtimes in this process, each with one Work (0: run 1 and 2, each in a child process)")
	perWork := flag.Int("goroutines", 4, "allocating goroutines per Work")
	bursts := flag.Int("bursts", 6, "bursts")
	quiet := flag.Duration("quiet", 2*time.Second, "the quiet after the last burst")
	flag.Parse()
	if *runtimes == 0 {
		gogc := os.Getenv("GOGC")
		if gogc == "" {
			gogc = "100"
		}
		fmt.Printf("GOGC=%s: %d bursts of 200-300 ms, gaps of 50-350 ms, then %v of quiet; %d goroutines per Work\n\n", gogc, *bursts, *quiet, *perWork)
		fmt.Printf("%-10s %14s %16s %8s %s\n", "Runtimes", "heap peak", "heap after quiet", "cycles", "GOGC after Close")
		for _, n := range []int{1, 2} {
			cmd := exec.Command(os.Args[0], "-runtimes", strconv.Itoa(n), "-goroutines", strconv.Itoa(*perWork),
				"-bursts", strconv.Itoa(*bursts), "-quiet", quiet.String())
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "bounded:", err)
				os.Exit(1)
			}
		}
		return
	}
	run(*runtimes, *perWork, *bursts, *quiet)
}

func run(n, perWork, bursts int, quiet time.Duration) {
	gogcBefore := debug.SetGCPercent(-2)
	debug.SetGCPercent(gogcBefore)
	rts := make([]*gcstep.Runtime, n)
	works := make([]*gcstep.Work, n)
	for i := range n {
		rts[i] = gcstep.NewRuntime()
		works[i] = rts[i].Work()
	}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the 2 ms sampler
		defer close(sampled)
		ss := make([]metrics.Sample, 1)
		ss[0].Name = s[0].Name
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				metrics.Read(ss)
				if v := ss[0].Value.Uint64(); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	for range bursts {
		d := 200*time.Millisecond + time.Duration(rng.IntN(100))*time.Millisecond
		end := time.Now().Add(d)
		var wg sync.WaitGroup
		for _, w := range works {
			for range perWork {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Now().Before(end) {
						w.Begin()
						b := make([]byte, 32<<10)
						b[len(b)-1] = 1
						sink.Store(&b)
						w.End()
					}
				}()
			}
		}
		wg.Wait()
		time.Sleep(50*time.Millisecond + time.Duration(rng.IntN(300))*time.Millisecond)
	}
	sink.Store(nil)
	time.Sleep(quiet)
	metrics.Read(s)
	after, cycles := s[0].Value.Uint64(), s[1].Value.Uint64()
	close(stop)
	<-sampled
	for i := range n {
		works[i].Close()
		rts[i].Close()
	}
	gogcAfter := debug.SetGCPercent(gogcBefore)
	fmt.Printf("%-10d %10.1f MiB %12.1f MiB %8d %d\n", n, float64(peak.Load())/(1<<20), float64(after)/(1<<20), cycles, gogcAfter)
}
