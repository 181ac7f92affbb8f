package gvl_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gvl"
)

func TestBlockingNobodyWaiting(t *testing.T) {
	l := gvl.New()
	l.Acquire()
	ran := false
	l.Blocking(func() {
		ran = true
		if assert.True(t, l.TryAcquire(), "lock held inside Blocking") {
			l.Release()
		}
	})
	require.True(t, ran, "fn did not run")
	require.False(t, l.TryAcquire(), "lock not held after Blocking")
	l.Release()
	s := l.Stats()
	assert.Zero(t, s.Handoffs, "Stats() = %+v, want no handoffs", s)
	assert.Zero(t, s.Contended, "Stats() = %+v, want no handoffs", s)
}

// TestBlockingLetsWaiterIn: while fn runs, a waiter gets the lock; the
// caller gets it back afterwards.
func TestBlockingLetsWaiterIn(t *testing.T) {
	l := gvl.New()
	l.Acquire()
	w := queueWaiter(t, l)
	l.Blocking(func() {
		recv(t, w.got)
		close(w.proceed)
	})
	require.False(t, l.TryAcquire(), "lock not held after Blocking")
	w.wg.Wait()
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
			require.PanicsWithValue(t, "boom", func() {
				l.Blocking(func() {
					if waiter {
						recv(t, got)
					}
					panic("boom")
				})
			})
			require.False(t, l.TryAcquire(), "lock not held after a panic in Blocking")
			assert.Zero(t, l.Waiters())
			l.Release()
			wg.Wait()
			require.True(t, l.TryAcquire(), "lock not free after Release")
		})
	}
}
