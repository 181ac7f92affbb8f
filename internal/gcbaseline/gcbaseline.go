// Package gcbaseline holds what Go services do by hand to keep their
// memory down without an idle stepper, so that the examples can run as
// such a service and the benchmarks can put the stepper beside them:
//
//   - Tuner: a GOGC tuner of the kind services deploy (bytedance's
//     gctuner): after every cycle it sets GOGC from the heap in use and a
//     memory threshold, (threshold − inuse) / inuse × 100, held between
//     50 and 500. Far below the threshold it raises GOGC (fewer cycles,
//     more memory); near it, it lowers GOGC.
//   - FreeOSMemory: runtime/debug.FreeOSMemory on a timer, the manual
//     way to hand a quiet server's memory back.
package gcbaseline

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// The tuner's bounds on GOGC, as gctuner's.
const (
	MinGOGC = 50
	MaxGOGC = 500
)

// TunedGOGC is the GOGC the tuner sets for a heap of inuse bytes under a
// threshold: (threshold − inuse) / inuse × 100, within [MinGOGC,
// MaxGOGC]; 100 if either is zero.
func TunedGOGC(inuse, threshold uint64) int {
	if inuse == 0 || threshold == 0 {
		return 100
	}
	if inuse >= threshold {
		return MinGOGC
	}
	p := math.Floor(float64(threshold-inuse) / float64(inuse) * 100)
	return int(min(max(p, MinGOGC), MaxGOGC))
}

// A Tuner sets GOGC after every GC cycle; Stop ends it and puts the
// program's GOGC back.
type Tuner struct {
	threshold uint64
	stopped   atomic.Bool
	prev      int
	once      sync.Once
	sample    []metrics.Sample
	mu        sync.Mutex
}

// NewTuner starts a tuner for threshold bytes of heap. It panics if
// threshold is zero.
func NewTuner(threshold uint64) *Tuner {
	if threshold == 0 {
		panic("gcbaseline: NewTuner with a zero threshold")
	}
	t := &Tuner{threshold: threshold, sample: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}}
	t.prev = debug.SetGCPercent(TunedGOGC(t.inuse(), threshold))
	t.arm()
	return t
}

// arm hooks the end of the next cycle: a sentinel the collector frees
// runs tune, which arms again.
func (t *Tuner) arm() {
	s := new([16]byte) // big enough not to share a tiny block
	runtime.AddCleanup(s, func(t *Tuner) { t.tune() }, t)
}

func (t *Tuner) tune() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped.Load() {
		return
	}
	debug.SetGCPercent(TunedGOGC(t.inuse(), t.threshold))
	t.arm()
}

func (t *Tuner) inuse() uint64 {
	metrics.Read(t.sample)
	return t.sample[0].Value.Uint64()
}

// Stop ends the tuning and sets GOGC back to what it was before
// NewTuner. It may be called more than once.
func (t *Tuner) Stop() {
	t.once.Do(func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.stopped.Store(true)
		debug.SetGCPercent(t.prev)
	})
}

// FreeOSMemory calls debug.FreeOSMemory every d until the returned stop
// is called; stop waits for a call in progress. It panics if d <= 0.
func FreeOSMemory(d time.Duration) (stop func()) {
	if d <= 0 {
		panic("gcbaseline: FreeOSMemory with a period <= 0")
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tk := time.NewTicker(d)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				debug.FreeOSMemory()
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// The settings Start uses: a tuner threshold of 64 MiB (gctuner's
// documentation suggests 70 % of the container's limit: a 96 MiB
// container), and FreeOSMemory every 10 s.
const (
	StartThreshold = 64 << 20
	StartPeriod    = 10 * time.Second
)

// Names lists what Start knows, for a flag's usage.
const Names = "none|tuner|freeos"

// Start starts the baseline name: "none" (nothing), "tuner" (NewTuner
// with StartThreshold) or "freeos" (FreeOSMemory every StartPeriod). The
// returned stop ends it.
func Start(name string) (stop func(), err error) {
	switch name {
	case "none":
		return func() {}, nil
	case "tuner":
		return NewTuner(StartThreshold).Stop, nil
	case "freeos":
		return FreeOSMemory(StartPeriod), nil
	}
	return nil, fmt.Errorf("want %s", Names)
}

// Valid reports whether Start knows name.
func Valid(name string) bool {
	return name == "none" || name == "tuner" || name == "freeos"
}
