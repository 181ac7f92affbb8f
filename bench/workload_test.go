package bench

import (
	"sync"
	"testing"

	"github.com/idlemux/idlemux/gvl"
)

// TestWorkloads runs every benchmark workload once, small, and checks what
// it returns, so that a benchmark never times a workload that lost work.
func TestWorkloads(t *testing.T) {
	const n = 1000
	for _, tc := range []struct {
		name string
		run  func(int) int
	}{
		{"createJoinGVL", createJoinGVL},
		{"createJoinMutex", createJoinMutex},
		{"queueGVL", queueGVL},
		{"queueChan", queueChan},
		{"condvarGVL", condvarGVL},
		{"condvarCond", condvarCond},
		{"deepCreateJoinGVL", deepCreateJoinGVL},
		{"deepCreateJoinGo", deepCreateJoinGo},
		{"deepPingPongGVL", deepPingPongGVL},
		{"deepPingPongChan", deepPingPongChan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.run(n); got != n {
				t.Errorf("got %d, want %d", got, n)
			}
		})
	}
}

func TestContendExcludes(t *testing.T) {
	for _, tc := range []struct {
		name string
		mu   locker
	}{{"gvl", gvlLocker{gvl.New()}}, {"mutex", new(sync.Mutex)}} {
		for _, g := range []int{1, 2, 2000} {
			if got, want := contend(tc.mu, g, 4001), 4001; got != want {
				t.Errorf("%s goroutines=%d: counter %d, want %d", tc.name, g, got, want)
			}
		}
	}
}

// TestPassTakesTurns checks the claim BenchmarkPass reports as switches/op:
// with the gvl every Yield hands the lock to the other goroutine, so the
// two alternate strictly (bar the first turn and the tail after one of them
// finishes).
func TestPassTakesTurns(t *testing.T) {
	const n = 2000
	if got := passGVL(n); got < n-2 {
		t.Errorf("gvl: %d switches in %d turns, want at least %d", got, n, n-2)
	}
	if got := passMutex(n); got < 1 || got > n {
		t.Errorf("mutex: %d switches in %d turns, want 1..%d", got, n, n)
	}
}

func TestAliveCheckRunsEveryGoroutine(t *testing.T) {
	for _, run := range []func(int) (int, int){aliveCheckGVL, aliveCheckMutex} {
		if ran, _ := run(200); ran != 200 {
			t.Errorf("%d goroutines ran, want 200", ran)
		}
	}
}

func TestAtDepth(t *testing.T) {
	for _, d := range depths {
		called := false
		atDepth(d, func() { called = true })
		if !called {
			t.Errorf("depth %d: fn not called", d)
		}
	}
}
