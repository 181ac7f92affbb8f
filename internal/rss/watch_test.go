package rss

import (
	"runtime"
	"testing"
	"time"
)

// Watch's peak is at least a Peak read before stop and at least every
// Current read while it watched; its goroutine is gone once stop
// returns, and stop answers the same twice.
func TestWatch(t *testing.T) {
	Watch(time.Millisecond)() // whatever the runtime starts lazily for it
	before := runtime.NumGoroutine()
	stop := Watch(time.Millisecond)
	b := make([]byte, 8<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	cur, cerr := Current()
	runtime.KeepAlive(b)
	time.Sleep(5 * time.Millisecond)
	p, err := Peak()
	if err != nil {
		t.Fatal(err)
	}
	got, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	if got < p {
		t.Errorf("Watch's peak %d below Peak %d", got, p)
	}
	if cerr == nil && got < cur {
		t.Errorf("Watch's peak %d below a Current of %d read while it watched", got, cur)
	}
	if again, _ := stop(); again != got {
		t.Errorf("stop again: %d, first %d", again, got)
	}
	// The runtime may start goroutines of its own meanwhile (the
	// finalizer's, the race detector's): the count may settle later.
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(time.Second); n > before && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(time.Millisecond)
	}
	if n > before {
		t.Errorf("%d goroutines after stop, %d before Watch", n, before)
	}
}

func TestWatchRefusesNoPeriod(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Watch(0) did not panic")
		}
	}()
	Watch(0)
}
