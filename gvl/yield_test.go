package gvl_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idlemux/idlemux/gvl"
)

// TestYieldFIFO: goroutines that take turns through Yield run round robin,
// in the order they queued; a yielder never gets back in ahead of anyone.
func TestYieldFIFO(t *testing.T) {
	const n, rounds = 4, 5
	l := gvl.New()
	var log []int // guarded by l
	l.Acquire()
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() {
			l.Acquire()
			for range rounds {
				log = append(log, i)
				l.Yield()
			}
			l.Release()
		})
		waitWaiters(t, l, i)
	}
	for range rounds {
		log = append(log, 0)
		l.Yield()
	}
	l.Release()
	wg.Wait()

	var want []int
	for range rounds {
		for i := range n {
			want = append(want, i)
		}
	}
	if fmt.Sprint(log) != fmt.Sprint(want) {
		t.Errorf("turns %v, want %v", log, want)
	}
	// Every Yield finds somebody queued, even the last one (the main
	// goroutine waits in its own last Yield); the final Releases hand over
	// n-1 more times.
	s := l.Stats()
	if s.Yields != n*rounds || s.Handoffs != n*rounds+n-1 {
		t.Errorf("Stats() = %+v, want %d yields and %d handoffs", s, n*rounds, n*rounds+n-1)
	}
}

func TestYieldNobodyWaiting(t *testing.T) {
	l := gvl.New()
	l.Acquire()
	l.Yield()
	if l.TryAcquire() {
		t.Fatal("Yield with nobody waiting left the lock free")
	}
	l.Release()
	if s := l.Stats(); s.Yields != 0 || s.Handoffs != 0 {
		t.Errorf("Stats() = %+v, want no yields or handoffs", s)
	}
}

// TestYieldKeepsCount: during a Yield the yielder is a waiter, and the
// count says so.
func TestYieldKeepsCount(t *testing.T) {
	l := gvl.New()
	l.Acquire()
	got := make(chan int, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		l.Acquire()
		got <- l.Waiters() // the main goroutine, queued by Yield
		l.Release()
	})
	waitWaiters(t, l, 1)
	l.Yield()
	if n := recv(t, got); n != 1 {
		t.Errorf("Waiters() seen by the new holder = %d, want 1 (the yielder)", n)
	}
	l.Release()
	wg.Wait()
}

// TestCheckpointNoStarvation: a holder that never lets go but calls
// Checkpoint lets a waiter in once the timeslice has passed.
func TestCheckpointNoStarvation(t *testing.T) {
	for _, gomaxprocs := range []string{"default", "1"} {
		t.Run("GOMAXPROCS="+gomaxprocs, func(t *testing.T) {
			if gomaxprocs == "1" {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			}
			l := gvl.New(gvl.WithTimeslice(time.Millisecond))
			l.Acquire()
			var got atomic.Bool
			var wg sync.WaitGroup
			wg.Go(func() {
				l.Acquire()
				got.Store(true)
				l.Release()
			})
			deadline := time.Now().Add(timeout)
			for !got.Load() {
				if time.Now().After(deadline) {
					t.Fatalf("waiter did not get the lock in %v of Checkpoint", timeout)
				}
				l.Checkpoint() // spins: the holder never blocks
			}
			l.Release()
			wg.Wait()
			if s := l.Stats(); s.Yields != 1 {
				t.Errorf("Stats() = %+v, want exactly 1 yield", s)
			}
		})
	}
}

// TestShouldYield: the flag rises once a waiter has waited a timeslice,
// and falls when the lock changes hands.
func TestShouldYield(t *testing.T) {
	l := gvl.New(gvl.WithTimeslice(time.Millisecond))
	l.Acquire()
	if l.ShouldYield() {
		t.Fatal("ShouldYield() = true with nobody waiting")
	}
	proceed := make(chan struct{})
	got := make(chan bool)
	var wg sync.WaitGroup
	wg.Go(func() {
		l.Acquire()
		got <- l.ShouldYield()
		<-proceed
		l.Release()
	})
	deadline := time.Now().Add(timeout)
	for !l.ShouldYield() {
		if time.Now().After(deadline) {
			t.Fatalf("ShouldYield() still false %v after a waiter queued", timeout)
		}
		time.Sleep(100 * time.Microsecond)
	}
	l.Release()
	if recv(t, got) {
		t.Error("ShouldYield() = true for the new holder with nobody waiting")
	}
	close(proceed)
	wg.Wait()
}

func TestTimesliceDisabled(t *testing.T) {
	l := gvl.New(gvl.WithTimeslice(0))
	l.Acquire()
	var wg sync.WaitGroup
	wg.Go(func() {
		l.Acquire()
		l.Release()
	})
	waitWaiters(t, l, 1)
	time.Sleep(20 * time.Millisecond)
	if l.ShouldYield() {
		t.Error("ShouldYield() = true with timeslices disabled")
	}
	l.Checkpoint() // must not yield
	if l.Waiters() != 1 {
		t.Error("Checkpoint yielded with timeslices disabled")
	}
	l.Release()
	wg.Wait()
}
