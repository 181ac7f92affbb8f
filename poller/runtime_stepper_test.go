package poller_test

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// sink keeps the compiler from dropping the garbage the handlers make.
var sink []byte

// TestLoopRuntimeStepperCollects: a Loop with gcstep.NewRuntime as its
// stepper, whose handlers leave garbage and which then sits idle, runs
// collection cycles in its idle time, under GOGC=off (where the only
// other collector is the memory limit the Runtime sets there). It fails
// if the stepper stops being called, or is called and never collects.
func TestLoopRuntimeStepperCollects(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		lock := gvl.New()
		lock.Acquire()
		defer lock.Release()
		rt := gcstep.NewRuntime()
		defer rt.Close()
		l := newLoop(t, poller.WithBackend(b), poller.WithGVL(lock), poller.WithStepper(rt))
		p := newPipe(t)
		require.NoError(t, l.Add(p.r, poller.Read, func(fd int, ev poller.Events) {
			var buf [1]byte
			unix.Read(fd, buf[:])
			for range 64 {
				sink = make([]byte, 16<<10) // 1 MiB of garbage per event
			}
		}))

		deadline := time.Now().Add(10 * time.Second)
		events := 0
		// Until a cycle of the stepper's ran and the loop stepped.
		for (rt.Stats().CyclesInline == 0 || l.Stats().Steps == 0 || rt.Stats().Steps == 0) && time.Now().Before(deadline) {
			p.write(p.w, "x")
			n, err := l.RunOnce(time.Second)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			events++
			// Idle: nothing to read, so the wait steps, then blocks.
			_, err = l.RunOnce(5 * time.Millisecond)
			require.NoError(t, err)
		}
		ls, ss := l.Stats(), rt.Stats()
		t.Logf("%d events; loop: %d steps; stepper: %d cycles", events, ls.Steps, ss.CyclesInline)
		assert.NotZero(t, ls.Steps, "the loop never stepped")
		assert.NotZero(t, ss.Steps, "the stepper was never called")
		assert.NotZero(t, ss.CyclesInline, "no collection cycle in %d idle moments after 1 MiB of garbage each", events)
	})
}

// TestLoopRuntimeStepperBoundsAPacedStream: a Loop with gcstep.NewRuntime
// and no options reads a stream paced by its producer (16 KiB chunks, a
// pause after every 64 KiB), each chunk into a fresh buffer, under
// GOGC=off. No pacer collects there: the stepper's cycles, as far as its
// budget pays for them, and the memory limit it bounds GOGC=off with
// while it is open, for the rest, must keep 64 MiB of garbage from piling
// up. It fails if the Runtime leaves a loop's garbage under GOGC=off
// uncollected.
func TestLoopRuntimeStepperBoundsAPacedStream(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	rt, l, done := runtimeLoop(t)
	defer done()
	const total = 64 << 20
	got, peak := pacedStream(t, l, total)
	s := rt.Stats()
	t.Logf("%d MiB read; heap objects peaked at %.1f MiB; stepper: %d cycles, %d others; looks declined: %d for the budget, %d for the gap",
		got>>20, float64(peak)/(1<<20), s.CyclesInline, s.CyclesOther, s.DeclinedBudget, s.DeclinedGap)
	require.EqualValues(t, total, got, "bytes read")
	assert.Less(t, peak, uint64(total/4), "heap objects at their peak, of %d MiB of garbage", total>>20)
}

// runtimeLoop makes a Loop holding a gvl.Lock, with gcstep.NewRuntime()
// and no options as its stepper. done closes the Runtime and releases
// the lock; the caller defers it, so that it runs before the caller's
// other deferred calls (a GOGC put back, for one) do.
func runtimeLoop(t *testing.T) (rt *gcstep.Runtime, l *poller.Loop, done func()) {
	t.Helper()
	lock := gvl.New()
	lock.Acquire()
	rt = gcstep.NewRuntime()
	l = newLoop(t, poller.WithGVL(lock), poller.WithStepper(rt))
	return rt, l, func() {
		rt.Close()
		lock.Release()
	}
}

// pacedStream runs l on a stream paced by its producer (16 KiB chunks, a
// 100 µs pause after every 64 KiB) of total bytes, each chunk read into a
// fresh buffer, and returns the bytes read and the heap objects' peak.
func pacedStream(t *testing.T, l *poller.Loop, total int) (got, peak uint64) {
	t.Helper()
	p := newPipe(t)
	const chunk = 16 << 10
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, chunk)
		for sent := 0; sent < total; {
			n, err := unix.Write(p.w, buf)
			if err == unix.EAGAIN {
				time.Sleep(50 * time.Microsecond)
				continue
			}
			if err != nil {
				return
			}
			sent += n
			if sent%(64<<10) == 0 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	objects := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	require.NoError(t, l.Add(p.r, poller.Read, func(fd int, _ poller.Events) {
		buf := make([]byte, chunk)
		n, _ := unix.Read(fd, buf)
		if n > 0 {
			got += uint64(n)
			sink = buf
		}
		metrics.Read(objects)
		peak = max(peak, objects[0].Value.Uint64())
	}))
	deadline := time.Now().Add(30 * time.Second)
	for got < uint64(total) && time.Now().Before(deadline) {
		_, err := l.RunOnce(time.Second)
		require.NoError(t, err)
	}
	<-done
	require.NoError(t, l.Remove(p.r))
	return got, peak
}
