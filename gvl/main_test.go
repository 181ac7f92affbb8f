package gvl_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/idlemux/idlemux/gvl"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// timeout bounds every wait in these tests. It is generous: it only turns
// a hang into a failure, it does not judge speed.
const timeout = 10 * time.Second

// waitWaiters polls until exactly n goroutines wait for l.
func waitWaiters(tb testing.TB, l *gvl.Lock, n int) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for l.Waiters() != n {
		require.False(tb, time.Now().After(deadline), "Waiters() = %d after %v, want %d", l.Waiters(), timeout, n)
		time.Sleep(20 * time.Microsecond)
	}
}

// recv receives from ch, failing the test after the timeout.
func recv[T any](tb testing.TB, ch <-chan T) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		require.FailNow(tb, "nothing received", "after %v", timeout)
		panic("unreachable")
	}
}

// panicValue runs fn and returns what it panicked with, or nil.
func panicValue(fn func()) (v any) {
	defer func() { v = recover() }()
	fn()
	return nil
}

// A heldWaiter is a goroutine that waits for a lock the test holds and,
// once it has it, holds it until told to let go.
type heldWaiter struct {
	got     chan struct{} // closed once it has the lock
	proceed chan struct{} // closed by the test: release the lock
	wg      sync.WaitGroup
}

// queueWaiter starts a heldWaiter on l, which the caller holds, and
// returns once it waits.
func queueWaiter(tb testing.TB, l *gvl.Lock) *heldWaiter {
	tb.Helper()
	w := &heldWaiter{got: make(chan struct{}), proceed: make(chan struct{})}
	w.wg.Go(func() {
		l.Acquire()
		close(w.got)
		<-w.proceed
		l.Release()
	})
	waitWaiters(tb, l, 1)
	return w
}

// finish waits until w has the lock, lets it go and waits for w to end.
func (w *heldWaiter) finish(tb testing.TB) {
	tb.Helper()
	recv(tb, w.got)
	close(w.proceed)
	w.wg.Wait()
}
