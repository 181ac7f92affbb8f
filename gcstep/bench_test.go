package gcstep

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

// BenchmarkStepNoWork is the price of asking when there is nothing to do,
// paid at every idle moment of an event loop.
func BenchmarkStepNoWork(b *testing.B) {
	rt := NewRuntime(WithReleaseDelay(0))
	defer rt.Close()
	rt.Step(time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		rt.Step(time.Millisecond)
	}
	if s := rt.Stats(); s.CyclesInline+s.CyclesBackground > 1 {
		b.Logf("%d cycles during the benchmark: the benchmark loop allocates", s.CyclesInline+s.CyclesBackground)
	}
}

// BenchmarkReadHeap compares the ways of looking at the heap: the five
// runtime/metrics samples a step reads, a single sample, every metric the
// runtime has, and runtime.ReadMemStats (the naive baseline, which stops
// the world).
func BenchmarkReadHeap(b *testing.B) {
	b.Run("metrics=policy", func(b *testing.B) {
		m := newMetricsReader()
		var r reading
		b.ReportAllocs()
		for b.Loop() {
			m.read(&r)
		}
	})
	b.Run("metrics=one", func(b *testing.B) {
		s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
		b.ReportAllocs()
		for b.Loop() {
			metrics.Read(s)
		}
	})
	b.Run("metrics=all", func(b *testing.B) {
		all := metrics.All()
		s := make([]metrics.Sample, len(all))
		for i := range all {
			s[i].Name = all[i].Name
		}
		b.ReportAllocs()
		for b.Loop() {
			metrics.Read(s)
		}
	})
	b.Run("ReadMemStats", func(b *testing.B) {
		var ms runtime.MemStats
		b.ReportAllocs()
		for b.Loop() {
			runtime.ReadMemStats(&ms)
		}
	})
}

// node is a pointer-dense heap object: marking follows every field.
type node struct {
	next, a, b, c *node
	_             [4]uint64
}

// liveHeap builds about n bytes of pointer-dense live objects.
func liveHeap(n int) []*node {
	count := n / 64
	nodes := make([]*node, count)
	for i := range nodes {
		nodes[i] = new(node)
	}
	for i, nd := range nodes {
		nd.next = nodes[(i+1)%count]
		nd.a = nodes[(i*7+3)%count]
		nd.b = nodes[(i*13+5)%count]
		nd.c = nodes[(i*31+11)%count]
	}
	return nodes
}

// BenchmarkStepCycle is the cost of one inline cycle by the size of the
// live heap. Each op allocates 1 MiB of garbage and steps with a budget
// every estimate fits, so each op runs one cycle (a little more than 1 MiB:
// the heap counters count a span's objects only when the span is replaced); ms/cycle is the time the
// cycles took inside Step.
func BenchmarkStepCycle(b *testing.B) {
	for _, mb := range []int{0, 1, 16, 64} {
		b.Run(fmt.Sprintf("live=%dMiB", mb), func(b *testing.B) {
			defer debug.SetGCPercent(debug.SetGCPercent(-1)) // only the stepper collects
			live := liveHeap(mb << 20)
			rt := NewRuntime(WithReleaseDelay(0), WithCPUCap(1), WithExchangeRate(1e12)) // every MiB pays
			defer rt.Close()
			rt.Step(time.Hour)
			before := rt.Stats()
			b.ResetTimer()
			for range b.N {
				garbage(5 << 18)
				rt.Step(time.Hour)
			}
			b.StopTimer()
			s := rt.Stats()
			n := s.CyclesInline - before.CyclesInline
			if n != uint64(b.N) {
				b.Fatalf("%d inline cycles in %d ops", n, b.N)
			}
			b.ReportMetric(float64(s.CycleTime-before.CycleTime)/float64(n)/1e6, "ms/cycle")
			b.ReportMetric(float64(s.CostEstimate)/1e6, "ms-estimate")
			runtime.KeepAlive(live)
		})
	}
}

// BenchmarkStepCPUCap steps in a tight loop while another goroutine
// allocates without pause, the worst case for an idle collector: a cycle
// is due at nearly every step. It reports charged-share, the time charged
// to the cap per second of wall time, to compare with the cap, and
// gc-share, the collector's CPU time (marking on idle Ps excepted) per
// second of wall time, by the runtime's own account, counting the cycles
// the allocator causes anyway. The baseline "nostep" makes the same calls
// to a stepper that does nothing; cap=1.00 is the uncapped policy.
func BenchmarkStepCPUCap(b *testing.B) {
	type config struct {
		name string
		opts []Option
	}
	configs := []config{{name: "nostep"}}
	for _, c := range []float64{0.05, DefaultCPUCap, 1} {
		configs = append(configs, config{fmt.Sprintf("cap=%.2f", c), []Option{WithCPUCap(c)}})
	}
	for _, cfg := range configs {
		b.Run(cfg.name, func(b *testing.B) {
			rt := NewRuntime(append(cfg.opts, WithReleaseDelay(0))...)
			defer rt.Close()
			var st Stepper = rt
			if cfg.opts == nil {
				st = Func(func(time.Duration) bool { return false })
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
						garbage(64 << 10)
					}
				}
			}()
			defer wg.Wait()
			defer close(stop)
			// Empty the bucket first, so the share measured is the
			// steady one and not the initial allowance.
			deadline := time.Now().Add(10 * time.Second)
			for rt.Stats().DeclinedCap == 0 && cfg.opts != nil && time.Now().Before(deadline) {
				rt.Step(time.Millisecond)
			}
			cpu := newCPUReader()
			before, cpu0, start := rt.Stats(), cpu.read(), time.Now()
			b.ResetTimer()
			for range b.N {
				st.Step(time.Millisecond)
			}
			b.StopTimer()
			after, cpu1, wall := rt.Stats(), cpu.read(), time.Since(start)
			b.ReportMetric(float64(after.Charged-before.Charged)/float64(wall), "charged-share")
			b.ReportMetric(float64(cpu1-cpu0)/float64(wall), "gc-share")
			cycles := after.CyclesInline + after.CyclesBackground - before.CyclesInline - before.CyclesBackground
			b.ReportMetric(float64(cycles)/wall.Seconds(), "cycles/s")
		})
	}
}

// BenchmarkPacerCalls is what a background cycle's pacer nudge costs the
// caller: debug.SetGCPercent (and, for comparison, debug.SetMemoryLimit)
// take the heap lock and recompute the pacer, without stopping the world.
func BenchmarkPacerCalls(b *testing.B) {
	b.Run("SetGCPercent", func(b *testing.B) {
		old := debug.SetGCPercent(100)
		defer debug.SetGCPercent(old)
		for i := 0; b.Loop(); i++ {
			debug.SetGCPercent(100 + i&1)
		}
	})
	b.Run("SetMemoryLimit", func(b *testing.B) {
		old := debug.SetMemoryLimit(-1)
		defer debug.SetMemoryLimit(old)
		for i := 0; b.Loop(); i++ {
			debug.SetMemoryLimit(1<<40 + int64(i&1))
		}
	})
}
