package bench

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gvl"
)

// The workloads below are Ruby's benchmark/vm_thread_*.rb, one function per
// implementation. Each takes the number of operations n and returns what a
// test can check (that every operation happened, under mutual exclusion), so
// that the benchmarks measure workloads the tests have proved correct.

// ---- pass: two goroutines taking turns (vm_thread_pass) ----

// passGVL runs n turns shared by two goroutines on a gvl.Lock, each turn
// ending with Yield. It returns how many turns found the other goroutine
// ahead of them: a switch of holder. Yield hands over directly, so nearly
// every turn is a switch.
func passGVL(n int) (switches int) {
	l := gvl.New()
	last := -1
	var wg sync.WaitGroup
	l.Acquire()
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Acquire()
			for i := g; i < n; i += 2 {
				if last != g {
					switches++
				}
				last = g
				l.Yield()
			}
			l.Release()
		}()
	}
	releaseWhenQueued(l, 2)
	wg.Wait()
	return switches
}

// passMutex is passGVL on a sync.Mutex, where "yield" is Unlock, Gosched,
// Lock: what a Go programmer writes to let others in. Nothing stops the
// releaser from barging back in ahead of the other goroutine.
func passMutex(n int) (switches int) {
	var mu sync.Mutex
	last := -1
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			for i := g; i < n; i += 2 {
				if last != g {
					switches++
				}
				last = g
				mu.Unlock()
				runtime.Gosched()
				mu.Lock()
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return switches
}

func BenchmarkPass(b *testing.B) {
	for _, impl := range []struct {
		name string
		run  func(int) int
	}{{"gvl", passGVL}, {"mutex", passMutex}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			sw := impl.run(b.N)
			b.ReportMetric(float64(sw)/float64(b.N), "switches/op")
		})
	}
}

// releaseWhenQueued releases l, held by the caller, once k goroutines queue
// for it, so that a benchmark starts with everybody in line rather than
// timing goroutine start-up. A goroutine that has not queued yet is not
// waiting, and Yield would pass it by.
func releaseWhenQueued(l *gvl.Lock, k int) {
	deadline := time.Now().Add(time.Minute)
	for l.Waiters() < k {
		if time.Now().After(deadline) {
			panic("bench: goroutines never queued for the lock")
		}
		runtime.Gosched()
	}
	l.Release()
}

// ---- mutex: lock and unlock under contention (vm_thread_mutex1-3) ----

// locker is the tiny interface the mutex benchmark compares through.
type locker interface {
	Lock()
	Unlock()
}

// gvlLocker adapts a gvl.Lock to locker.
type gvlLocker struct{ l *gvl.Lock }

func (g gvlLocker) Lock()   { g.l.Acquire() }
func (g gvlLocker) Unlock() { g.l.Release() }

// contend spreads n lock/increment/unlock operations over the given number
// of goroutines and returns the counter, which equals n exactly when the lock
// excluded.
func contend(mu locker, goroutines, n int) int {
	counter := 0
	var wg sync.WaitGroup
	for g := range goroutines {
		share := n / goroutines
		if g < n%goroutines {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range share {
				mu.Lock()
				counter++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return counter
}

func BenchmarkMutex(b *testing.B) {
	for _, impl := range []struct {
		name string
		mu   func() locker
	}{
		{"gvl", func() locker { return gvlLocker{gvl.New()} }},
		{"mutex", func() locker { return new(sync.Mutex) }},
	} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			for _, g := range []int{1, 2, 2000} {
				b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
					b.ReportAllocs()
					require.Equal(b, b.N, contend(impl.mu(), g, b.N), "counter")
				})
			}
		})
	}
}

// ---- create_join: start a goroutine that takes the lock, join it ----

// createJoinGVL is vm_thread_create_join (seed 003): the main goroutine holds
// the lock, starts a goroutine that acquires it, and joins that goroutine
// with the lock released while it waits, as Thread#join does. It returns how
// many children ran.
func createJoinGVL(n int) int {
	l := gvl.New()
	ran := 0
	var wg sync.WaitGroup
	l.Acquire()
	for range n {
		wg.Add(1)
		go func() {
			l.Acquire()
			ran++
			l.Release()
			wg.Done()
		}()
		l.Blocking(wg.Wait)
	}
	l.Release()
	return ran
}

// createJoinMutex is createJoinGVL on a sync.Mutex.
func createJoinMutex(n int) int {
	var mu sync.Mutex
	ran := 0
	var wg sync.WaitGroup
	mu.Lock()
	for range n {
		wg.Add(1)
		go func() {
			mu.Lock()
			ran++
			mu.Unlock()
			wg.Done()
		}()
		mu.Unlock()
		wg.Wait()
		mu.Lock()
	}
	mu.Unlock()
	return ran
}

func BenchmarkCreateJoin(b *testing.B) {
	benchCounted(b, "goroutines ran", namedRun{"gvl", createJoinGVL}, namedRun{"mutex", createJoinMutex})
}

// ---- alive_check: poll a new goroutine's liveness, passing meanwhile ----

// aliveCheckGVL is vm_thread_alive_check1: start a goroutine that needs the
// lock, then loop "while t.alive?; Thread.pass; end" until it has finished.
// Gosched comes before Yield because a goroutine that has not yet run far
// enough to queue is not waiting (see gvl.Lock.Yield). It returns the number
// of children that ran and the number of passes, which the benchmark
// reports per goroutine.
func aliveCheckGVL(n int) (ran, passes int) {
	l := gvl.New()
	l.Acquire()
	for range n {
		var alive atomic.Bool
		alive.Store(true)
		go func() {
			l.Acquire()
			ran++
			alive.Store(false)
			l.Release()
		}()
		for alive.Load() {
			runtime.Gosched()
			l.Yield()
			passes++
		}
	}
	l.Release()
	return ran, passes
}

// aliveCheckMutex is aliveCheckGVL on a sync.Mutex.
func aliveCheckMutex(n int) (ran, passes int) {
	var mu sync.Mutex
	mu.Lock()
	for range n {
		var alive atomic.Bool
		alive.Store(true)
		go func() {
			mu.Lock()
			ran++
			alive.Store(false)
			mu.Unlock()
		}()
		for alive.Load() {
			mu.Unlock()
			runtime.Gosched()
			mu.Lock()
			passes++
		}
	}
	mu.Unlock()
	return ran, passes
}

func BenchmarkAliveCheck(b *testing.B) {
	for _, impl := range []struct {
		name string
		run  func(int) (int, int)
	}{{"gvl", aliveCheckGVL}, {"mutex", aliveCheckMutex}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			ran, passes := impl.run(b.N)
			require.Equal(b, b.N, ran, "goroutines ran")
			b.ReportMetric(float64(passes)/float64(b.N), "passes/op")
		})
	}
}

// ---- queue: producer to consumer (vm_thread_queue) ----

// gvlQueue is an unbounded FIFO guarded by a gvl.Lock, like Ruby's Queue
// under the GVL: push never blocks, pop waits with the lock released.
type gvlQueue struct {
	l       *gvl.Lock
	items   []int
	head    int
	waiting bool          // a popper is blocked on ready
	ready   chan struct{} // capacity 1: a push happened while waiting
}

func newGVLQueue(l *gvl.Lock) *gvlQueue {
	return &gvlQueue{l: l, ready: make(chan struct{}, 1)}
}

// push appends v. Must be called with q.l held.
func (q *gvlQueue) push(v int) {
	q.items = append(q.items, v)
	if q.waiting {
		q.waiting = false
		q.ready <- struct{}{}
	}
}

// pop removes the oldest item, waiting with the lock released while the
// queue is empty. Must be called with q.l held.
func (q *gvlQueue) pop() int {
	for q.head == len(q.items) {
		q.waiting = true
		q.l.Blocking(func() { <-q.ready })
	}
	v := q.items[q.head]
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return v
}

// queueGVL moves 0..n-1 from a producer to a consumer through a gvlQueue.
// The producer calls Checkpoint after each push, so it keeps the lock for a
// timeslice at a time, as a Ruby thread keeps the GVL. It returns how many
// items arrived in order.
func queueGVL(n int) (inOrder int) {
	l := gvl.New()
	q := newGVLQueue(l)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Acquire()
		for i := range n {
			if q.pop() == i {
				inOrder++
			}
		}
		l.Release()
	}()
	l.Acquire()
	for i := range n {
		q.push(i)
		l.Checkpoint()
	}
	l.Release()
	<-done
	return inOrder
}

// queueChan is queueGVL over a buffered channel, Go's own queue.
func queueChan(n int) (inOrder int) {
	ch := make(chan int, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			if <-ch == i {
				inOrder++
			}
		}
	}()
	for i := range n {
		ch <- i
	}
	<-done
	return inOrder
}

func BenchmarkQueue(b *testing.B) {
	benchCounted(b, "items in order", namedRun{"gvl", queueGVL}, namedRun{"chan", queueChan})
}

// ---- condvar: two goroutines signalling each other (vm_thread_condvar1) ----

// condvarGVL passes a ball between two goroutines n times. Each waits for
// its turn with the lock released (Blocking on a one-slot channel, the
// condition variable a gvl.Lock needs) and signals the other. It returns the
// number of turns taken, n exactly when no signal was lost.
func condvarGVL(n int) (turns int) {
	l := gvl.New()
	ball := 0
	var sig [2]chan struct{}
	for i := range sig {
		sig[i] = make(chan struct{}, 1)
	}
	var wg sync.WaitGroup
	l.Acquire()
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Acquire()
			defer l.Release()
			for i := g; i < n; i += 2 {
				for ball != g {
					l.Blocking(func() { <-sig[g] })
				}
				turns++
				ball = 1 - g
				select {
				case sig[1-g] <- struct{}{}:
				default: // a signal is already pending
				}
			}
		}()
	}
	releaseWhenQueued(l, 2)
	wg.Wait()
	return turns
}

// condvarCond is condvarGVL with a sync.Mutex and a sync.Cond.
func condvarCond(n int) (turns int) {
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	ball := 0
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			for i := g; i < n; i += 2 {
				for ball != g {
					cond.Wait()
				}
				turns++
				ball = 1 - g
				cond.Signal()
			}
		}()
	}
	wg.Wait()
	return turns
}

func BenchmarkCondvar(b *testing.B) {
	benchCounted(b, "turns", namedRun{"gvl", condvarGVL}, namedRun{"cond", condvarCond})
}

// A namedRun is one implementation of a workload: run does n units of work
// and returns how many it saw completed.
type namedRun struct {
	name string
	run  func(n int) int
}

// benchCounted runs each implementation as the sub-benchmark impl=name and
// fails it unless all b.N units completed; what names the unit in the
// failure message.
func benchCounted(b *testing.B, what string, impls ...namedRun) {
	for _, impl := range impls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			require.Equal(b, b.N, impl.run(b.N), what)
		})
	}
}
