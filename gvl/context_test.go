package gvl_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/idlemux/idlemux/gvl"
)

func TestAcquireContextDone(t *testing.T) {
	l := gvl.New()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.AcquireContext(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("AcquireContext(done ctx) = %v, want context.Canceled", err)
	}
	if !l.TryAcquire() {
		t.Fatal("lock not free after a failed AcquireContext")
	}
	l.Release()
	if err := l.AcquireContext(context.Background()); err != nil {
		t.Fatalf("AcquireContext(Background) = %v, want nil", err)
	}
	l.Release()
}

// TestAcquireContextCancelQueued cancels the middle one of three queued
// waiters: it leaves no trace, and the others keep their order.
func TestAcquireContextCancelQueued(t *testing.T) {
	l := gvl.New()
	l.Acquire()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	order := make(chan int, 2)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			if i == 1 {
				errc <- l.AcquireContext(ctx)
				return
			}
			l.Acquire()
			order <- i
			l.Release()
		})
		waitWaiters(t, l, i+1)
	}
	cancel()
	if err := recv(t, errc); !errors.Is(err, context.Canceled) {
		t.Fatalf("AcquireContext = %v, want context.Canceled", err)
	}
	waitWaiters(t, l, 2)
	if !l.Contended() {
		t.Fatal("Contended() = false with two waiters left")
	}
	l.Release()
	if a, b := recv(t, order), recv(t, order); a != 0 || b != 2 {
		t.Errorf("served %d then %d, want 0 then 2", a, b)
	}
	wg.Wait()
	if l.Waiters() != 0 || !l.TryAcquire() {
		t.Fatalf("after all: Waiters() = %d, lock free = false; want 0, true", l.Waiters())
	}
	if s := l.Stats(); s.Cancelled != 1 {
		t.Errorf("Stats().Cancelled = %d, want 1", s.Cancelled)
	}
}

// TestAcquireContextCancelHead cancels the head waiter, the one timing the
// holder, and checks the next one takes over.
func TestAcquireContextCancelHead(t *testing.T) {
	l := gvl.New()
	l.Acquire()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	got := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { errc <- l.AcquireContext(ctx) })
	waitWaiters(t, l, 1)
	wg.Go(func() {
		l.Acquire()
		close(got)
		l.Release()
	})
	waitWaiters(t, l, 2)
	cancel()
	if err := recv(t, errc); !errors.Is(err, context.Canceled) {
		t.Fatalf("AcquireContext = %v, want context.Canceled", err)
	}
	waitWaiters(t, l, 1)
	l.Release()
	recv(t, got)
	wg.Wait()
}

// TestAcquireContextCancelRacesHandoff releases the lock to a queued waiter
// and cancels its context at about the same time, in both orders, many
// times. At GOMAXPROCS=1 the woken waiter cannot run in between, so:
//   - release first: the grant completes the waiter's wait; it holds the
//     lock and AcquireContext returns nil;
//   - cancel first: the waiter is woken by the cancellation, but the
//     release dequeues it and hands it the lock before it runs. It must
//     pass the lock on, return the error, and leave the lock consistent.
func TestAcquireContextCancelRacesHandoff(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	l := gvl.New()
	var kept, passedOn, left int
	for i := range 200 {
		l.Acquire()
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			err := l.AcquireContext(ctx)
			if err == nil {
				l.Release()
			}
			errc <- err
		}()
		waitWaiters(t, l, 1)
		handoffs := l.Stats().Handoffs
		if i%2 == 0 {
			l.Release()
			cancel()
		} else {
			cancel()
			l.Release()
		}
		err := recv(t, errc)
		handedOver := l.Stats().Handoffs - handoffs
		switch {
		case err == nil && handedOver == 1:
			kept++
		case errors.Is(err, context.Canceled) && handedOver == 1:
			passedOn++
		case errors.Is(err, context.Canceled) && handedOver == 0:
			left++ // it ran before the release: an ordinary cancellation
		default:
			t.Fatalf("AcquireContext = %v after %d handoffs", err, handedOver)
		}
		if l.Waiters() != 0 || !l.TryAcquire() {
			t.Fatalf("after race %d: Waiters() = %d, lock not free", i, l.Waiters())
		}
		l.Release()
	}
	t.Logf("kept %d, passed on %d, left the queue %d", kept, passedOn, left)
	if kept == 0 || passedOn == 0 {
		t.Errorf("kept %d, passed on %d: want both paths taken", kept, passedOn)
	}
	if s := l.Stats(); s.Cancelled != uint64(passedOn+left) {
		t.Errorf("Stats().Cancelled = %d, want %d", s.Cancelled, passedOn+left)
	}
}
