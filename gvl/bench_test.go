package gvl_test

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gvl"
)

// BenchmarkContended measures the check alone, on a held lock.
func BenchmarkContended(b *testing.B) {
	b.ReportAllocs()
	l := gvl.New()
	l.Acquire()
	defer l.Release()
	n := 0
	for b.Loop() {
		if l.Contended() {
			n++
		}
	}
	require.Zero(b, n, "Contended() true with nobody waiting")
}

// BenchmarkUncontended is acquire+release with nobody else, beside
// sync.Mutex's Lock+Unlock.
func BenchmarkUncontended(b *testing.B) {
	b.Run("gvl", func(b *testing.B) {
		b.ReportAllocs()
		l := gvl.New()
		for b.Loop() {
			l.Acquire()
			l.Release()
		}
	})
	b.Run("mutex", func(b *testing.B) {
		b.ReportAllocs()
		var mu sync.Mutex
		for b.Loop() {
			mu.Lock()
			//lint:ignore SA2001 an empty critical section is what is measured
			mu.Unlock()
		}
	})
}

// BenchmarkPingPong is two goroutines taking turns: one op is a round trip,
// two handoffs. The baseline is the same alternation over unbuffered
// channels. gvl-notimeslice is the lock without timeslices: it sets no
// timer, which shows what the timeslice timer costs a handoff. chan-timer
// is chan in a process with one timer pending (a one-hour
// time.AfterFunc), as any program with a Ticker, a deadline or a
// server's timeouts has: the runtime then reads the clock at its
// scheduling passes, which the lock's watch also makes it do.
func BenchmarkPingPong(b *testing.B) {
	b.Run("gvl", func(b *testing.B) { pingPong(b, 0) })
	b.Run("gvl-notimeslice", func(b *testing.B) { pingPong(b, 0, gvl.WithTimeslice(0)) })
	b.Run("chan", chanPingPong)
	b.Run("chan-timer", func(b *testing.B) {
		t := time.AfterFunc(time.Hour, func() {})
		defer t.Stop()
		chanPingPong(b)
	})
}

// chanPingPong is BenchmarkPingPong's alternation over unbuffered
// channels.
func chanPingPong(b *testing.B) {
	b.ReportAllocs()
	ping, pong := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for range ping {
			pong <- struct{}{}
		}
	})
	for b.Loop() {
		ping <- struct{}{}
		<-pong
	}
	close(ping)
	wg.Wait()
}

// BenchmarkHandoffDepth is PingPong/gvl with the benchmark goroutine
// yielding from deep inside a real recursion: a handoff must not cost more
// with a deeper stack.
func BenchmarkHandoffDepth(b *testing.B) {
	for _, depth := range []int{0, 2000} {
		b.Run("depth="+strconv.Itoa(depth), func(b *testing.B) { pingPong(b, depth) })
	}
}

// pingPong runs b.N round trips through Yield between the benchmark
// goroutine, which yields from depth frames down, and a partner, on a Lock
// made with opts.
func pingPong(b *testing.B, depth int, opts ...gvl.Option) {
	b.ReportAllocs()
	l := gvl.New(opts...)
	l.Acquire()
	stop := false // guarded by l
	var wg sync.WaitGroup
	wg.Go(func() {
		l.Acquire()
		for !stop {
			l.Yield()
		}
		l.Release()
	})
	waitWaiters(b, l, 1)
	recurse(depth, func() {
		b.ResetTimer()
		for range b.N {
			l.Yield()
		}
		b.StopTimer()
	})
	stop = true
	l.Release()
	wg.Wait()
}

// recurse calls fn from n frames down. The work after the recursive call
// keeps the compiler from turning it into a loop.
//
//go:noinline
func recurse(n int, fn func()) int {
	var frame [4]int
	if n == 0 {
		fn()
		return 0
	}
	frame[n%4] = n
	return recurse(n-1, fn) + frame[(n+1)%4]
}

// yieldLock is what BenchmarkYieldWait needs of a lock: the gvl and the
// naive sync.Mutex baseline.
type yieldLock interface {
	Lock()
	Unlock()
	Yield()
}

type gvlYield struct{ l *gvl.Lock }

func (y gvlYield) Lock()   { y.l.Acquire() }
func (y gvlYield) Unlock() { y.l.Release() }
func (y gvlYield) Yield()  { y.l.Yield() }

type mutexYield struct{ *sync.Mutex }

func (l mutexYield) Yield() { l.Mutex.Unlock(); l.Mutex.Lock() }

// BenchmarkYieldWait: a holder works in slices of about 10 µs and yields
// between them; another goroutine sleeps about as long off the lock, then
// takes the lock and lets it go again. One op is one round of that
// goroutine; p50-ns and p99-ns are how long it waited for the lock. With
// sync.Mutex the "yield" is Unlock(); Lock(), and the releaser barges back
// in.
func BenchmarkYieldWait(b *testing.B) {
	b.Run("gvl", func(b *testing.B) { yieldWait(b, gvlYield{gvl.New()}) })
	b.Run("mutex", func(b *testing.B) { yieldWait(b, mutexYield{new(sync.Mutex)}) })
}

func yieldWait(b *testing.B, l yieldLock) {
	const slice = 10 * time.Microsecond
	b.ReportAllocs()
	waits := make([]time.Duration, b.N)
	var stop atomic.Bool
	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		l.Lock()
		close(started)
		for !stop.Load() {
			for t := time.Now(); time.Since(t) < slice; {
			}
			l.Yield()
		}
		l.Unlock()
	})
	<-started
	b.ResetTimer()
	for i := range b.N {
		time.Sleep(slice)
		t := time.Now()
		l.Lock()
		waits[i] = time.Since(t)
		l.Unlock()
	}
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
	slices.Sort(waits)
	b.ReportMetric(float64(waits[len(waits)/2]), "p50-ns")
	b.ReportMetric(float64(waits[len(waits)*99/100]), "p99-ns")
}
