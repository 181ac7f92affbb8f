package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/internal/rss"
	"github.com/idlemux/idlemux/poller"
)

// A readFunc reads the pipe's dups until end of file, adding every byte to
// d in the order it left the pipe, each read into a fresh buffer of j's
// chunk bytes, and reports what its loop did (nothing, if it has no loop). It
// must leave in p.dups only fds the caller may close.
type readFunc func(p *pipe, j job, d *digest) (loopStats, error)

// loopStats is what a loop did during a run.
type loopStats struct {
	steps   uint64        // calls to the stepper's Step
	loop    *poller.Stats // the loop's own account, if there was a loop
	stepper *gcstep.Stats // the runtime stepper's own account, if it had one
}

// readFuncs maps each mode to the way it reads.
var readFuncs = map[mode]readFunc{
	modeOff:        loopReader(false, false, false),
	modeIdle:       loopReader(true, false, false),
	modeGoroutines: readGoroutines,
	modeFloor:      loopReader(false, true, false),
	modeThread:     loopReader(false, false, true),
}

// A job is one run: a mode and the stream's shape.
type job struct {
	mode    mode
	length  int64
	readers int
	chunk   int
	budget  float64 // the idle mode's gcstep.WithBudget; 0: the default
}

// measure runs j in this process and reports what it measured. If progress
// is not nil, a one-line display is kept up to date on it. A digest mismatch
// is not an error here: the result says so and the caller decides.
func measure(j job, progress io.Writer, label string) (result, error) {
	read, ok := readFuncs[j.mode]
	if !ok {
		return result{}, fmt.Errorf("unknown mode %q", j.mode)
	}
	p, err := newPipe(j.readers)
	if err != nil {
		return result{}, err
	}
	defer p.close()
	d := newDigest()
	if progress != nil {
		stop := startProgress(progress, label, j.length, d)
		defer stop()
	}

	cpu0, cerr := cpuTime()
	if cerr != nil {
		return result{}, cerr
	}
	gc0 := readGCCounts()
	// The peak: VmHWM reads a few hundred KiB low after the RSS falls
	// (internal/rss.Peak), so the RSS is sampled too, every 10 ms.
	watch := rss.Watch(10 * time.Millisecond)
	start := time.Now()
	written := startWriter(p.w, j.length)
	ls, rerr := read(p, j, d)
	p.closeReaders() // after a read error, this stops the writer (EPIPE)
	w := <-written
	wall := time.Since(start)
	gc := readGCCounts().sub(gc0)
	cpu, cerr := cpuTime()
	peak, perr := watch()

	// The first failure is the cause: after a read error the writer's
	// EPIPE is only its echo.
	for _, err := range []error{rerr, w.err, cerr, perr} {
		if err != nil {
			return result{}, fmt.Errorf("%s: %w", j.mode, err)
		}
	}
	got := d.sum()
	var stepped uint64
	if ls.stepper != nil {
		stepped = ls.stepper.CyclesInline
	}
	return result{
		Mode:           j.mode,
		PeakRSSBytes:   peak,
		WallSeconds:    wall.Seconds(),
		CPUSeconds:     (cpu - cpu0).Seconds(),
		GCCycles:       gc.total,
		ForcedGCCycles: gc.forced,
		StepperCycles:  stepped,
		IdleSteps:      ls.steps,
		Loop:           ls.loop,
		Stepper:        ls.stepper,
		Bytes:          got.n,
		DigestOK:       got == w.sum,
		Digest:         hex.EncodeToString(got.sha256[:]),
		Readers:        j.readers,
		Chunk:          j.chunk,
	}, nil
}
