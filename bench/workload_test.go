package bench

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

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
			assert.Equal(t, n, tc.run(n), "units of work completed")
		})
	}
}

func TestContendExcludes(t *testing.T) {
	for _, tc := range []struct {
		name string
		mu   locker
	}{{"gvl", gvlLocker{gvl.New()}}, {"mutex", new(sync.Mutex)}} {
		for _, g := range []int{1, 2, 2000} {
			assert.Equal(t, 4001, contend(tc.mu, g, 4001), "%s goroutines=%d: counter", tc.name, g)
		}
	}
}

// TestPassTakesTurns checks the claim BenchmarkPass reports as switches/op:
// with the gvl every Yield hands the lock to the other goroutine, so the
// two alternate strictly (bar the first turn and the tail after one of them
// finishes).
func TestPassTakesTurns(t *testing.T) {
	const n = 2000
	assert.GreaterOrEqual(t, passGVL(n), n-2, "gvl: switches in %d turns", n)
	got := passMutex(n)
	assert.GreaterOrEqual(t, got, 1, "mutex: switches in %d turns, want 1..%d", n, n)
	assert.LessOrEqual(t, got, n, "mutex: switches in %d turns, want 1..%d", n, n)
}

func TestAliveCheckRunsEveryGoroutine(t *testing.T) {
	for _, run := range []func(int) (int, int){aliveCheckGVL, aliveCheckMutex} {
		ran, _ := run(200)
		assert.Equal(t, 200, ran, "goroutines ran")
	}
}

func TestAtDepth(t *testing.T) {
	for _, d := range depths {
		called := false
		atDepth(d, func() { called = true })
		assert.True(t, called, "depth %d: fn called", d)
	}
}
