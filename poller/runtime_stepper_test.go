package poller_test

import (
	"runtime/debug"
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
// collection cycles in its idle time. With GOGC=off nothing else would
// ever collect that garbage. It fails if the stepper stops being called,
// or is called and never collects.
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
		for rt.Stats().CyclesInline+rt.Stats().CyclesBackground == 0 && time.Now().Before(deadline) {
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
		t.Logf("%d events; loop: %d steps; stepper: %d inline, %d background cycles", events, ls.Steps, ss.CyclesInline, ss.CyclesBackground)
		assert.NotZero(t, ls.Steps, "the loop never stepped")
		assert.NotZero(t, ss.Steps, "the stepper was never called")
		assert.NotZero(t, ss.CyclesInline+ss.CyclesBackground, "no collection cycle in %d idle moments after 1 MiB of garbage each", events)
	})
}
