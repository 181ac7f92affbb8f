package gvl_test

import (
	"sync"
	"testing"

	"github.com/idlemux/idlemux/gvl"
)

func TestBlockingNobodyWaiting(t *testing.T) {
	l := gvl.New()
	l.Acquire()
	ran := false
	l.Blocking(func() {
		ran = true
		if !l.TryAcquire() {
			t.Error("lock held inside Blocking")
		} else {
			l.Release()
		}
	})
	if !ran {
		t.Fatal("fn did not run")
	}
	if l.TryAcquire() {
		t.Fatal("lock not held after Blocking")
	}
	l.Release()
	if s := l.Stats(); s.Handoffs != 0 || s.Contended != 0 {
		t.Errorf("Stats() = %+v, want no handoffs", s)
	}
}

// TestBlockingLetsWaiterIn: while fn runs, a waiter gets the lock; the
// caller gets it back afterwards.
func TestBlockingLetsWaiterIn(t *testing.T) {
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
	l.Blocking(func() {
		recv(t, got)
		close(proceed)
	})
	if l.TryAcquire() {
		t.Fatal("lock not held after Blocking")
	}
	wg.Wait()
	l.Release()
}

// TestBlockingPanics: a panic in fn propagates, and the caller holds the
// lock again when it sees the panic, with or without a waiter in between.
func TestBlockingPanics(t *testing.T) {
	for _, waiter := range []bool{false, true} {
		name := map[bool]string{false: "alone", true: "waiter"}[waiter]
		t.Run(name, func(t *testing.T) {
			l := gvl.New()
			l.Acquire()
			var wg sync.WaitGroup
			got := make(chan struct{})
			if waiter {
				wg.Go(func() {
					l.Acquire()
					close(got)
					l.Release()
				})
				waitWaiters(t, l, 1)
			}
			v := panicValue(func() {
				l.Blocking(func() {
					if waiter {
						recv(t, got)
					}
					panic("boom")
				})
			})
			if v != "boom" {
				t.Fatalf("recovered %#v, want %q", v, "boom")
			}
			if l.TryAcquire() {
				t.Fatal("lock not held after a panic in Blocking")
			}
			if l.Waiters() != 0 {
				t.Errorf("Waiters() = %d, want 0", l.Waiters())
			}
			l.Release()
			wg.Wait()
			if !l.TryAcquire() {
				t.Fatal("lock not free after Release")
			}
		})
	}
}
