package poller_test

import (
	"os"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/poller"
)

// TestSignalFlood floods the process with SIGURG (the runtime's own
// preemption signal) and SIGUSR1, aimed with tgkill at the threads of every
// kind of waiter at once (a Loop per backend with a pipe and a timer,
// WaitFD per backend, Poll, Select), and some at the whole process with
// kill. Every timed wait must still end no sooner than its timeout and not
// grossly later, every timer must fire, and every byte written to the
// Loops' pipes during the flood must be read. TestSignalStorm and TestEINTR
// interrupt one wait at a time; this interrupts all of them together.
func TestSignalFlood(t *testing.T) {
	d := time.Second
	if testing.Short() {
		d = 300 * time.Millisecond
	}
	const timeout = 20 * time.Millisecond

	sigs := make(chan os.Signal, 1024)
	signal.Notify(sigs, unix.SIGUSR1, unix.SIGURG)
	defer signal.Stop(sigs)
	var received atomic.Int64
	recvStop := make(chan struct{})
	var recvWG sync.WaitGroup
	recvWG.Go(func() {
		for {
			select {
			case <-sigs:
				received.Add(1)
			case <-recvStop:
				return
			}
		}
	})

	stop := make(chan struct{})
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var restarts, waits atomic.Uint64
	// checkWait checks one timed wait that found nothing.
	checkWait := func(what string, start time.Time, got bool, err error) {
		elapsed := time.Since(start)
		waits.Add(1)
		if err != nil || got {
			t.Errorf("%s: got ready %v, error %v, want a timeout", what, got, err)
		}
		if elapsed < timeout || elapsed > timeout+slack {
			t.Errorf("%s: a %v wait took %v", what, timeout, elapsed)
		}
	}

	type waiter struct {
		name string
		run  func()
	}
	var waiters []waiter
	for _, b := range poller.Backends() {
		waiters = append(waiters, waiter{"Loop/" + b.String(), func() {
			p := newPipe(t)
			l, err := poller.NewLoop(poller.WithBackend(b), poller.WithStepper(&stepper{more: never}))
			if err != nil {
				t.Error(err)
				return
			}
			defer l.Close()
			var read, written atomic.Int64
			if err := l.Add(p.r, poller.Read, func(fd int, _ poller.Events) {
				var buf [64]byte
				n, _ := unix.Read(fd, buf[:])
				read.Add(int64(max(n, 0)))
			}); err != nil {
				t.Error(err)
				return
			}
			// A timer that rearms itself: its lateness is checked.
			timers := 0
			var due time.Time
			var tick func()
			tick = func() {
				if late := time.Since(due); late > slack {
					t.Errorf("Loop/%v: timer %v late", b, late)
				}
				timers++
				due = time.Now().Add(5 * time.Millisecond)
				l.AfterFunc(5*time.Millisecond, tick)
			}
			due = time.Now().Add(5 * time.Millisecond)
			l.AfterFunc(5*time.Millisecond, tick)

			var wg sync.WaitGroup
			w := p.w
			wg.Go(func() {
				for !stopped() {
					time.Sleep(time.Millisecond)
					if n, _ := unix.Write(w, []byte("x")); n == 1 {
						written.Add(1)
					}
				}
			})
			for !stopped() {
				start := time.Now()
				if _, err := l.RunOnce(timeout); err != nil {
					t.Errorf("Loop/%v: %v", b, err)
					break
				}
				if elapsed := time.Since(start); elapsed > timeout+slack {
					t.Errorf("Loop/%v: a %v RunOnce took %v", b, timeout, elapsed)
				}
			}
			wg.Wait()
			deadline := time.Now().Add(5 * time.Second)
			for read.Load() < written.Load() && time.Now().Before(deadline) {
				l.RunOnce(timeout)
			}
			if read.Load() != written.Load() || written.Load() == 0 {
				t.Errorf("Loop/%v: %d bytes written, %d read", b, written.Load(), read.Load())
			}
			if timers == 0 {
				t.Errorf("Loop/%v: no timer fired", b)
			}
			restarts.Add(l.Stats().Restarts)
		}})
		waiters = append(waiters, waiter{"WaitFD/" + b.String(), func() {
			p := newPipe(t)
			m := poller.New(poller.WithBackend(b))
			for !stopped() {
				start := time.Now()
				ev, err := m.WaitFD(p.r, poller.Read, timeout)
				checkWait("WaitFD/"+b.String(), start, ev != 0, err)
			}
			restarts.Add(m.Stats().Restarts)
		}})
	}
	waiters = append(waiters,
		waiter{"Poll", func() {
			p := newPipe(t)
			m := poller.New()
			for !stopped() {
				fds := []unix.PollFd{{Fd: int32(p.r), Events: unix.POLLIN}}
				start := time.Now()
				n, err := m.Poll(fds, timeout)
				checkWait("Poll", start, n != 0, err)
			}
			restarts.Add(m.Stats().Restarts)
		}},
		waiter{"Select", func() {
			p := newPipe(t)
			m := poller.New()
			for !stopped() {
				start := time.Now()
				rr, _, _, err := m.Select([]int{p.r}, nil, nil, timeout)
				checkWait("Select", start, len(rr) != 0, err)
			}
			restarts.Add(m.Stats().Restarts)
		}},
	)

	// Each waiter on a thread of its own, so that a signal aimed at the
	// thread interrupts its system call.
	tids := make([]int, len(waiters))
	var ready, wg sync.WaitGroup
	for i, w := range waiters {
		ready.Add(1)
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids[i] = unix.Gettid()
			ready.Done()
			w.run()
		})
	}
	ready.Wait()

	pid := os.Getpid()
	var sent int
	end := time.Now().Add(d)
	for i := 0; time.Now().Before(end); i++ {
		sig := unix.SIGURG
		if i%2 == 1 {
			sig = unix.SIGUSR1
		}
		var err error
		if i%16 == 15 {
			err = unix.Kill(pid, unix.SIGUSR1)
		} else {
			err = unix.Tgkill(pid, tids[i%len(tids)], sig)
		}
		if err == nil {
			sent++
		}
		if i%32 == 31 {
			// Room for the waiters on a machine with few cores.
			time.Sleep(20 * time.Microsecond)
		}
	}
	close(stop)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the waiters did not finish after the flood")
	}
	time.Sleep(10 * time.Millisecond) // let the last signals be noticed
	close(recvStop)
	recvWG.Wait()
	assert.NotZero(t, restarts.Load(), "no wait saw EINTR")
	t.Logf("%v: %d signals sent, %d noticed by signal.Notify (pending signals coalesce); %d timed waits held; %d EINTR restarts",
		d, sent, received.Load(), waits.Load(), restarts.Load())
}
