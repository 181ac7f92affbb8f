package machine

import (
	"runtime"
	"time"
)

// Prices are the costs that decide whether idle collection can win on a
// machine: a cycle with every CPU and with one P, and a cross-thread
// wakeup (zero on a one-CPU machine, where there is none to measure).
type Prices struct {
	Procs    int           // every CPU: runtime.NumCPU()
	CycleAll time.Duration // a cycle of an empty heap with Procs Ps
	CycleOne time.Duration // the same with one P
	Wake     time.Duration // waking a goroutine whose thread sleeps
}

// quickSizes make Probe take about a tenth of a second where a cycle costs
// 0.3 ms with every CPU, and a third of a second where it costs 5 ms.
var quickSizes = Sizes{Cycles: 16, Wakes: 16}

// Probe measures Prices quickly, three rounds of a few repetitions each,
// for a program that shows them beside its results; bench/machine measures
// them properly. It changes GOMAXPROCS while it runs and restores it.
func Probe() Prices {
	p := Prices{Procs: runtime.NumCPU()}
	for _, c := range MeasureCPU(3, quickSizes) {
		switch {
		case c.Name == NameCycle && c.Procs == 1:
			p.CycleOne = c.Median
			if p.Procs == 1 {
				p.CycleAll = c.Median
			}
		case c.Name == NameCycle:
			p.CycleAll = c.Median
		case c.Name == NameWake:
			p.Wake = c.Median
		}
	}
	return p
}
