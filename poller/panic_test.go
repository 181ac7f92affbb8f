package poller_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/poller"
)

// TestLoopTimerPanic: a timer func that panics ends RunOnce with its panic;
// once the caller recovers, the loop runs again, the other timers of the
// same batch fire (once), and new timers work.
func TestLoopTimerPanic(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		l := newLoop(t, poller.WithBackend(b))
		var fired []string
		l.AfterFunc(0, func() {
			fired = append(fired, "a")
			panic("timer a")
		})
		l.AfterFunc(0, func() { fired = append(fired, "b") })
		require.PanicsWithValue(t, "timer a", func() { l.RunOnce(0) })
		assert.Equal(t, []string{"a"}, fired)

		n, err := l.RunOnce(0)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, []string{"a", "b"}, fired)

		l.AfterFunc(0, func() { fired = append(fired, "c") })
		n, err = l.RunOnce(0)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, []string{"a", "b", "c"}, fired)

		n, err = l.RunOnce(0)
		require.NoError(t, err)
		assert.Zero(t, n, "a timer fired twice")
	})
}

// TestLoopTimerStopInBatch: a timer func that stops another timer due in
// the same RunOnce keeps it from running; Stop reports it pending.
func TestLoopTimerStopInBatch(t *testing.T) {
	l := newLoop(t)
	var second *poller.Timer
	var stopped, ran bool
	l.AfterFunc(0, func() { stopped = second.Stop() })
	second = l.AfterFunc(0, func() { ran = true })
	n, err := l.RunOnce(0)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.True(t, stopped, "Stop of a due timer that had not run reported it not pending")
	assert.False(t, ran, "a timer stopped before its turn ran")
}

// TestLoopHandlerPanic: a handler that panics ends RunOnce with its panic;
// the loop stays usable, its fd is still watched and reported again, the
// other fds of the batch are reported by the next wait, and Run works.
func TestLoopHandlerPanic(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		l := newLoop(t, poller.WithBackend(b))
		p, q := newPipe(t), newPipe(t)
		p.write(p.w, "x")
		q.write(q.w, "y")
		calls := map[int]int{}
		panicked := false
		h := func(fd int, ev poller.Events) {
			calls[fd]++
			if !panicked {
				panicked = true
				panic("handler")
			}
		}
		require.NoError(t, l.Add(p.r, poller.Read, h))
		require.NoError(t, l.Add(q.r, poller.Read, h))
		require.PanicsWithValue(t, "handler", func() { l.RunOnce(time.Second) })

		// Neither pipe was read: both are still ready, and both
		// handlers run in the next call.
		n, err := l.RunOnce(time.Second)
		require.NoError(t, err)
		assert.Equal(t, 2, n)
		assert.Equal(t, 3, calls[p.r]+calls[q.r])

		ctx, cancel := context.WithCancel(context.Background())
		l.AfterFunc(0, cancel)
		assert.ErrorIs(t, l.Run(ctx), context.Canceled)
	})
}

// TestLoopStepsAfterHandlerPanic: a handler that panics may have left
// garbage like any other, so the next idle moment offers the stepper work
// again, as it does after a handler that returns.
func TestLoopStepsAfterHandlerPanic(t *testing.T) {
	s := &stepper{more: never}
	l := newLoop(t, poller.WithStepper(s))
	p := newPipe(t)
	_, err := l.RunOnce(10 * time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, int64(1), s.calls.Load(), "the first idle moment steps once")
	_, err = l.RunOnce(10 * time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, int64(1), s.calls.Load(), "no step while nothing ran")

	require.NoError(t, l.Add(p.r, poller.Read, func(fd int, ev poller.Events) {
		require.NoError(t, l.Remove(fd))
		panic("handler")
	}))
	p.write(p.w, "x")
	require.PanicsWithValue(t, "handler", func() { l.RunOnce(time.Second) })
	_, err = l.RunOnce(10 * time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, int64(2), s.calls.Load(), "the idle moment after the panic offered no step")
}
