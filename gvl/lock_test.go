package gvl_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idlemux/idlemux/gvl"
)

func TestMutualExclusion(t *testing.T) {
	const goroutines = 16
	rounds := 2000
	if testing.Short() {
		rounds = 200
	}
	for _, tc := range []struct {
		name string
		lock func() *gvl.Lock
	}{
		{"zero", func() *gvl.Lock { return new(gvl.Lock) }},
		{"new", func() *gvl.Lock { return gvl.New() }},
		// A tiny timeslice, so that timers fire, flags rise and fall and
		// Checkpoint yields all through the run.
		{"timeslice=50µs", func() *gvl.Lock { return gvl.New(gvl.WithTimeslice(50 * time.Microsecond)) }},
		{"no timeslice", func() *gvl.Lock { return gvl.New(gvl.WithTimeslice(0)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.lock()
			var inside, counter int // guarded by l
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range rounds {
						switch (g + i) % 6 {
						case 0:
							l.Acquire()
						case 1:
							if !l.TryAcquire() {
								l.Acquire()
							}
						case 2:
							l.Acquire()
							l.Yield()
						case 3:
							l.Acquire()
							l.Blocking(func() {})
						case 4:
							// Gives up now and then: cancellation races
							// handoffs all through the run.
							ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%50)*time.Microsecond)
							if l.AcquireContext(ctx) != nil {
								l.Acquire()
							}
							cancel()
						case 5:
							// Holds on for a while, at safe points.
							l.Acquire()
							for start := time.Now(); time.Since(start) < 100*time.Microsecond; {
								l.Checkpoint()
							}
						}
						inside++
						if inside != 1 {
							t.Errorf("%d goroutines inside the lock, want 1", inside)
						}
						counter++
						inside--
						l.Release()
					}
				})
			}
			wg.Wait()
			t.Logf("%+v", l.Stats())
			if counter != goroutines*rounds {
				t.Errorf("counter = %d, want %d", counter, goroutines*rounds)
			}
			if l.Contended() || l.Waiters() != 0 {
				t.Errorf("Contended() = %v, Waiters() = %d after all returned, want false, 0", l.Contended(), l.Waiters())
			}
			if !l.TryAcquire() {
				t.Error("lock left held")
			}
		})
	}
}

func TestZeroValueAndTryAcquire(t *testing.T) {
	var l gvl.Lock
	if !l.TryAcquire() {
		t.Fatal("TryAcquire on a new Lock = false, want true")
	}
	if l.TryAcquire() {
		t.Fatal("TryAcquire on a held Lock = true, want false")
	}
	l.Release()
	l.Acquire()
	l.Release()
	if got := l.Stats().Acquisitions; got != 2 {
		t.Errorf("Acquisitions = %d, want 2", got)
	}
}

// TestContendedWaiters queues goroutines one at a time behind a holder and
// checks the counts after every step, then that they are served in the
// order they queued.
func TestContendedWaiters(t *testing.T) {
	const n = 5
	l := gvl.New()
	if l.Contended() || l.Waiters() != 0 {
		t.Fatalf("new lock: Contended() = %v, Waiters() = %d, want false, 0", l.Contended(), l.Waiters())
	}
	l.Acquire()
	if l.Contended() {
		t.Fatal("Contended() = true with a holder and no waiter")
	}
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			l.Acquire()
			order <- i
			l.Release()
		})
		waitWaiters(t, l, i+1)
		if !l.Contended() {
			t.Fatalf("Contended() = false with %d waiters", i+1)
		}
	}
	if l.TryAcquire() {
		t.Fatal("TryAcquire succeeded on a held lock")
	}
	l.Release()
	for want := range n {
		if got := recv(t, order); got != want {
			t.Errorf("goroutine %d got the lock in turn %d, want FIFO order", got, want)
		}
	}
	wg.Wait()
	if l.Contended() || l.Waiters() != 0 {
		t.Errorf("after all: Contended() = %v, Waiters() = %d, want false, 0", l.Contended(), l.Waiters())
	}
}

// TestReleaseHandsOver checks that a release with a waiter hands the lock
// over directly: the waiter count drops at Release, and the lock is never
// free for a newcomer to take in between.
func TestReleaseHandsOver(t *testing.T) {
	l := gvl.New()
	l.Acquire()
	got := make(chan struct{})
	proceed := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		l.Acquire()
		close(got)
		<-proceed
		l.Release()
	})
	waitWaiters(t, l, 1)
	l.Release()
	if n := l.Waiters(); n != 0 {
		t.Errorf("Waiters() = %d right after Release, want 0", n)
	}
	if l.TryAcquire() {
		t.Fatal("TryAcquire took a lock that was handed to a waiter")
	}
	recv(t, got)
	close(proceed)
	wg.Wait()
	s := l.Stats()
	if s.Handoffs != 1 || s.Contended != 1 || s.Acquisitions != 2 {
		t.Errorf("Stats() = %+v, want 1 handoff, 1 contended, 2 acquisitions", s)
	}
}

func TestMisusePanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(*gvl.Lock)
	}{
		{"Release", func(l *gvl.Lock) { l.Release() }},
		{"Release twice", func(l *gvl.Lock) { l.Acquire(); l.Release(); l.Release() }},
		{"Yield", func(l *gvl.Lock) { l.Yield() }},
		{"Blocking", func(l *gvl.Lock) { l.Blocking(func() {}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := gvl.New()
			v := panicValue(func() { tc.fn(l) })
			msg, _ := v.(string)
			if !strings.HasPrefix(msg, "gvl: ") {
				t.Errorf("panic value %#v, want a string starting with %q", v, "gvl: ")
			}
			// The lock is still usable and free.
			if !l.TryAcquire() {
				t.Error("lock not free after the misuse")
			}
		})
	}
}

func TestAllocs(t *testing.T) {
	l := gvl.New()
	if n := testing.AllocsPerRun(100, func() { l.Acquire(); l.Release() }); n != 0 {
		t.Errorf("Acquire+Release allocates %v times, want 0", n)
	}
	l.Acquire()
	defer l.Release()
	if n := testing.AllocsPerRun(100, func() { l.Blocking(func() {}) }); n != 0 {
		t.Errorf("Blocking with nobody waiting allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, l.Yield); n != 0 {
		t.Errorf("Yield with nobody waiting allocates %v times, want 0", n)
	}
}

func TestStatsAndHook(t *testing.T) {
	var mu sync.Mutex
	var events []gvl.Event
	l := gvl.New(gvl.WithHook(func(e gvl.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}))
	l.Acquire()
	l.Release()
	mu.Lock()
	got := fmt.Sprint(events)
	mu.Unlock()
	if want := "[acquired released]"; got != want {
		t.Errorf("uncontended events %s, want %s", got, want)
	}

	l.Acquire()
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Acquire()
		l.Release()
	}()
	waitWaiters(t, l, 1)
	time.Sleep(time.Millisecond) // so the wait is measurably long
	l.Release()
	recv(t, done)

	s := l.Stats()
	if s.Acquisitions != 3 || s.Contended != 1 || s.Handoffs != 1 || s.Yields != 0 || s.Cancelled != 0 {
		t.Errorf("Stats() = %+v, want 3 acquisitions, 1 contended, 1 handoff", s)
	}
	if s.WaitMax < time.Millisecond || s.WaitTotal != s.WaitMax {
		t.Errorf("WaitMax = %v, WaitTotal = %v, want WaitMax >= 1ms and WaitTotal == WaitMax", s.WaitMax, s.WaitTotal)
	}
	mu.Lock()
	defer mu.Unlock()
	count := map[gvl.Event]int{}
	for _, e := range events {
		count[e]++
	}
	if count[gvl.EventAcquired] != 3 || count[gvl.EventReleased] != 3 || count[gvl.EventWaiting] != 1 {
		t.Errorf("events %v, want 3 acquired, 3 released, 1 waiting", events)
	}
	for _, e := range []gvl.Event{gvl.EventWaiting, gvl.EventAcquired, gvl.EventReleased} {
		if s := e.String(); s == "" || strings.HasPrefix(s, "gvl.Event(") {
			t.Errorf("Event(%d).String() = %q, want a name", e, s)
		}
	}
}
