package gvl_test

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gvl"
)

// timerfds counts this process's open timerfds.
func timerfds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == "anon_inode:[timerfd]" {
			n++
		}
	}
	return n
}

// TestWatchTimerfd: while a goroutine waits, the lock's watch is a
// timerfd, and once nobody waits its fd and goroutine go away by
// themselves, without the Lock being closed or collected.
func TestWatchTimerfd(t *testing.T) {
	const slice = time.Millisecond
	// The watches of locks of earlier tests stop within half their slice.
	deadline := time.Now().Add(timeout)
	for timerfds(t) != 0 {
		require.False(t, time.Now().After(deadline), "%d timerfds open before the test", timerfds(t))
		time.Sleep(slice)
	}
	goroutines := runtime.NumGoroutine()
	l := gvl.New(gvl.WithTimeslice(slice))
	l.Acquire()
	w := queueWaiter(t, l)
	require.Equal(t, 1, timerfds(t), "timerfds open while a goroutine waits")
	for !l.ShouldYield() {
		require.False(t, time.Now().After(deadline), "ShouldYield() still false %v after a waiter queued", timeout)
		time.Sleep(100 * time.Microsecond)
	}
	l.Release()
	w.finish(t)
	for timerfds(t) != 0 || runtime.NumGoroutine() > goroutines {
		require.False(t, time.Now().After(deadline), "after %v nobody waiting: %d timerfds open; %d goroutines, want %d",
			timeout, timerfds(t), runtime.NumGoroutine(), goroutines)
		time.Sleep(slice)
	}
}
