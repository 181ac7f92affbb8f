package poller_test

import (
	"os"
	"os/signal"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/poller"
)

// stormProcess sends SIGUSR1 to the whole process every 100 µs until the
// returned stop is called, and returns how many it sent. Unlike
// underSignals it does not aim at a thread, so it runs everywhere, and the
// blocked wait is interrupted only when the kernel picks its thread.
func stormProcess(t *testing.T) (stop func() int) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGUSR1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	sent := 0
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-sigs:
			case <-tick.C:
				if unix.Kill(os.Getpid(), unix.SIGUSR1) == nil {
					sent++
				}
			}
		}
	})
	var once sync.Once
	return func() int {
		once.Do(func() {
			close(done)
			wg.Wait()
			signal.Stop(sigs)
		})
		return sent
	}
}

func TestSignalStorm(t *testing.T) {
	const timeout = 50 * time.Millisecond
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		stop := stormProcess(t)
		defer stop()

		p := newPipe(t)
		m := poller.New(poller.WithBackend(b), poller.WithStepper(&stepper{more: never}))
		start := time.Now()
		got, err := m.WaitFD(p.r, poller.Read, timeout)
		elapsed := time.Since(start)
		require.NoError(t, err)
		assert.Zero(t, got)
		assert.GreaterOrEqual(t, elapsed, timeout)
		assert.Less(t, elapsed, timeout+slack)

		l := newLoop(t, poller.WithBackend(b))
		received := 0
		require.NoError(t, l.Add(p.r, poller.Read, func(fd int, _ poller.Events) {
			var buf [16]byte
			n, _ := unix.Read(fd, buf[:])
			received += n
		}))
		w := p.w
		var wg sync.WaitGroup
		wg.Go(func() {
			for range 20 {
				time.Sleep(time.Millisecond)
				unix.Write(w, []byte("x"))
			}
		})
		deadline := time.Now().Add(5 * time.Second)
		for received < 20 && time.Now().Before(deadline) {
			_, err := l.RunOnce(time.Second)
			require.NoError(t, err)
		}
		wg.Wait()
		assert.Equal(t, 20, received, "bytes lost under the storm")
		sent := stop()
		t.Logf("%d signals; restarts: Mux %d, Loop %d", sent, m.Stats().Restarts, l.Stats().Restarts)
	})
}
