package gvl_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gvl"
)

func TestAcquireContextDone(t *testing.T) {
	l := gvl.New()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, l.AcquireContext(ctx), context.Canceled)
	require.True(t, l.TryAcquire(), "lock not free after a failed AcquireContext")
	l.Release()
	require.NoError(t, l.AcquireContext(context.Background()))
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
	require.ErrorIs(t, recv(t, errc), context.Canceled)
	waitWaiters(t, l, 2)
	require.True(t, l.Contended(), "Contended() = false with two waiters left")
	l.Release()
	a, b := recv(t, order), recv(t, order)
	assert.Equal(t, []int{0, 2}, []int{a, b}, "the order they were served in")
	wg.Wait()
	require.Zero(t, l.Waiters())
	require.True(t, l.TryAcquire(), "lock not free after all")
	assert.Equal(t, uint64(1), l.Stats().Cancelled)
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
	require.ErrorIs(t, recv(t, errc), context.Canceled)
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
			require.FailNowf(t, "unexpected outcome", "AcquireContext = %v after %d handoffs", err, handedOver)
		}
		require.Zero(t, l.Waiters(), "after race %d", i)
		require.True(t, l.TryAcquire(), "after race %d: lock not free", i)
		l.Release()
	}
	t.Logf("kept %d, passed on %d, left the queue %d", kept, passedOn, left)
	assert.NotZero(t, kept, "the path where the waiter keeps the lock was never taken")
	assert.NotZero(t, passedOn, "the path where the waiter passes the lock on was never taken")
	assert.Equal(t, uint64(passedOn+left), l.Stats().Cancelled)
}
