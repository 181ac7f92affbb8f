package poller_test

import (
	"os"
	"os/signal"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/poller"
)

// runOnceTimesOut runs l.RunOnce(timeout) under a signal storm
// (underSignals) and checks that it found nothing, without an error, and
// returned after the timeout, within slack of it.
func runOnceTimesOut(t *testing.T, l *poller.Loop, timeout time.Duration) {
	t.Helper()
	var n int
	var err error
	start := time.Now()
	underSignals(t, func() { n, err = l.RunOnce(timeout) })
	elapsed := time.Since(start)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.GreaterOrEqual(t, elapsed, timeout)
	assert.Less(t, elapsed, timeout+slack)
}

// underSignals runs wait on a goroutine locked to its thread and sends that
// thread SIGUSR1 every 200 µs until wait returns. Aiming at the thread (a
// signal sent to the process may land on any thread) makes sure the
// blocked system call is the one interrupted with EINTR.
func underSignals(t *testing.T, wait func()) (sent int) {
	t.Helper()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGUSR1)
	defer signal.Stop(sigs)

	tid := make(chan int)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- unix.Gettid()
		wait()
		close(done)
	}()
	id := <-tid

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if unix.Tgkill(os.Getpid(), id, unix.SIGUSR1) == nil {
					sent++
				}
			case <-sigs:
			}
		}
	})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the wait never returned under signals")
	}
	close(stop)
	wg.Wait()
	return sent
}

func TestEINTR(t *testing.T) {
	const timeout = 100 * time.Millisecond
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		t.Run("WaitFD", func(t *testing.T) {
			p := newPipe(t)
			m := poller.New(poller.WithBackend(b))
			var got poller.Events
			var err error
			start := time.Now()
			sent := underSignals(t, func() { got, err = m.WaitFD(p.r, poller.Read, timeout) })
			elapsed := time.Since(start)
			require.NoError(t, err)
			assert.Zero(t, got)
			assert.GreaterOrEqual(t, elapsed, timeout)
			assert.Less(t, elapsed, timeout+slack)
			s := m.Stats()
			assert.NotZero(t, s.Restarts, "no EINTR seen in %d signals", sent)
			assert.EqualValues(t, 1, s.BlockingPolls)
			t.Logf("%d signals, %d restarts", sent, s.Restarts)
		})
		t.Run("Loop", func(t *testing.T) {
			p := newPipe(t)
			// On its thread: a wait parked in the netpoller is never
			// interrupted (TestLoopParkedUnderSignals).
			l := newLoop(t, poller.WithBackend(b), poller.WithNetpoller(false))
			require.NoError(t, l.Add(p.r, poller.Read, func(int, poller.Events) { t.Error("handler called") }))
			runOnceTimesOut(t, l, timeout)
			assert.NotZero(t, l.Stats().Restarts)
		})
		t.Run("ready-after-signals", func(t *testing.T) {
			// An event that arrives during the storm is still reported.
			p := newPipe(t)
			l := newLoop(t, poller.WithBackend(b))
			got := 0
			require.NoError(t, l.Add(p.r, poller.Read, func(int, poller.Events) { got++ }))
			w := p.w
			timer := time.AfterFunc(30*time.Millisecond, func() { unix.Write(w, []byte("x")) })
			defer timer.Stop()
			var n int
			var err error
			underSignals(t, func() { n, err = l.RunOnce(5 * time.Second) })
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			assert.Equal(t, 1, got)
		})
	})
	t.Run("Select", func(t *testing.T) {
		p := newPipe(t)
		m := poller.New()
		var err error
		start := time.Now()
		underSignals(t, func() { _, _, _, err = m.Select([]int{p.r}, nil, nil, timeout) })
		elapsed := time.Since(start)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, elapsed, timeout)
		assert.Less(t, elapsed, timeout+slack)
		assert.NotZero(t, m.Stats().Restarts)
	})
}
