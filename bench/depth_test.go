package bench

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idlemux/idlemux/gvl"
)

// Seed 002: Ruby 1.8 copied the whole C stack, parent frames included, on
// every thread switch, so creating threads and switching between them got
// slower the deeper the creating thread was nested. A goroutine switch
// copies nothing, and a gvl handoff is a goroutine wake: the cost per
// operation at depth=2000 must match depth=0.

// depths are the stack depths the experiments run at: none, and the 2000
// frames of the patch's "Totally Bogus Benchmark" scripts.
var depths = []int{0, 2000}

// atDepth calls fn from d frames further down the stack. Each frame keeps a
// small array live so that the frames have real size, as Ruby's did.
//
//go:noinline
func atDepth(d int, fn func()) {
	var pad [8]uintptr
	pad[d%len(pad)] = uintptr(d)
	if d <= 0 {
		fn()
		return
	}
	atDepth(d-1, fn)
	sink = pad[0]
}

// sink keeps atDepth's frames from being optimised away.
var sink uintptr

// deepCreateJoinGVL is the patch's script #1: from the current depth, n
// times, start a goroutine that takes the lock and runs a closure built from
// its arguments (the script's Proc), and join it with the lock released.
func deepCreateJoinGVL(n int) (ran int) {
	l := gvl.New()
	var wg sync.WaitGroup
	l.Acquire()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Acquire()
			k := func(a, b int) string { return fmt.Sprint(a, b) }
			if k(i, 0) != "" {
				ran++
			}
			l.Release()
		}()
		l.Blocking(wg.Wait)
	}
	l.Release()
	return ran
}

// deepCreateJoinGo is the same without a lock: go and WaitGroup.
func deepCreateJoinGo(n int) (ran int) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := func(a, b int) string { return fmt.Sprint(a, b) }
			if k(i, 0) != "" {
				ran++
			}
		}()
		wg.Wait()
	}
	return ran
}

// deepPingPongGVL is the patch's script #2: the calling goroutine and a
// partner hand the lock back and forth n times (one round trip per
// operation). It returns the partner's turns, n exactly when every handoff
// reached it.
func deepPingPongGVL(n int) (partnerTurns int) {
	l := gvl.New()
	l.Acquire()
	done := false
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		l.Acquire()
		for !done {
			partnerTurns++
			l.Yield()
		}
		l.Release()
	}()
	// The partner may not have queued yet: wait for it with the lock
	// released, so that its first Acquire queues behind nobody.
	for partnerTurns == 0 {
		l.Blocking(func() {})
	}
	start := partnerTurns
	for range n {
		l.Yield()
	}
	done = true
	l.Release()
	<-finished
	return partnerTurns - start
}

// deepPingPongChan is the same round trip over two unbuffered channels.
func deepPingPongChan(n int) (partnerTurns int) {
	ping, pong := make(chan struct{}), make(chan struct{})
	go func() {
		for range ping {
			partnerTurns++
			pong <- struct{}{}
		}
		close(pong)
	}()
	for range n {
		ping <- struct{}{}
		<-pong
	}
	close(ping)
	<-pong
	return partnerTurns
}

func benchDepth(b *testing.B, impls []depthImpl) {
	for _, impl := range impls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			for _, d := range depths {
				b.Run(fmt.Sprintf("depth=%d", d), func(b *testing.B) {
					b.ReportAllocs()
					atDepth(d, func() {
						b.ResetTimer()
						assert.Equal(b, b.N, impl.run(b.N), "operations done")
					})
				})
			}
		})
	}
}

type depthImpl struct {
	name string
	run  func(int) int
}

func BenchmarkDeepCreateJoin(b *testing.B) {
	benchDepth(b, []depthImpl{{"gvl", deepCreateJoinGVL}, {"chan", deepCreateJoinGo}})
}

func BenchmarkDeepPingPong(b *testing.B) {
	benchDepth(b, []depthImpl{{"gvl", deepPingPongGVL}, {"chan", deepPingPongChan}})
}
