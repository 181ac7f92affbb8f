package gcstep

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeTimer is a Work's timer in the fake world: the test fires it.
type fakeTimer struct {
	w      *world
	f      func()
	armed  bool
	at     time.Duration // when it fires, on the fake clock
	resets int
}

func (ft *fakeTimer) Reset(d time.Duration) bool {
	was := ft.armed
	ft.armed, ft.at = true, ft.w.t+d
	ft.resets++
	return was
}

func (ft *fakeTimer) Stop() bool {
	was := ft.armed
	ft.armed = false
	return was
}

// fire moves the fake clock to the timer's deadline, if it is not past
// it, and runs the timer's function, as its goroutine would.
func (ft *fakeTimer) fire(t *testing.T) {
	t.Helper()
	require.True(t, ft.armed, "the timer is not armed")
	ft.w.t = max(ft.w.t, ft.at)
	ft.armed = false
	ft.f()
}

func newFakeWork(w *world, rt *Runtime) (*Work, *fakeTimer) {
	ft := &fakeTimer{w: w}
	wk := rt.newWork(func(f func()) timer {
		ft.f = f
		return ft
	})
	return wk, ft
}

// requests makes n pieces of work one after the other, each after gap
// with nothing in flight, each allocating alloc bytes and taking 50 µs.
func requests(w *world, wk *Work, n int, gap time.Duration, alloc uint64) {
	for range n {
		w.t += gap
		wk.Begin()
		w.alloc(alloc)
		w.t += 50 * time.Microsecond
		wk.End()
	}
}

func TestWorkEmptiesTheGapAfterABurst(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	wk, ft := newFakeWork(w, rt)
	defer wk.Close()

	requests(w, wk, 300, 20*time.Microsecond, 256*kib) // 21 ms
	assert.Equal(t, 1, ft.resets, "the timer is armed once, at the first fall")
	ft.fire(t) // at 20 ms: the last request ended just now
	assert.Zero(t, w.spawnCount, "released inside the burst")
	require.True(t, ft.armed, "not armed for the end of the quiet period")
	assert.Equal(t, time.Duration(wk.end.Load())+20*ms, ft.at)

	ft.fire(t)
	require.Equal(t, 1, w.spawnCount, "release started")
	w.releaseCost = int(3 * ms)
	w.run()
	s := rt.Stats()
	assert.EqualValues(t, 1, s.Releases)
	assert.Equal(t, 23*ms, s.LastReleaseAfterQuiet)

	// Once per quiet stretch, and only allocation re-arms: nothing is
	// armed any more.
	assert.False(t, ft.armed, "the timer is armed after the release")
	assert.False(t, wk.armed.Load())
	w.t += time.Hour
	assert.Equal(t, 1, w.spawnCount)

	// The gaps between requests were reported as a loop's waits.
	assert.Positive(t, wk.l.nGaps, "no gap reported")
}

func TestWorkWithoutAllocationArmsNothing(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	wk, ft := newFakeWork(w, rt)
	defer wk.Close()
	assert.False(t, ft.armed, "armed before any work")

	requests(w, wk, 100, 20*time.Microsecond, 0)
	ft.fire(t)
	assert.False(t, ft.armed, "armed with nothing to empty")
	assert.False(t, wk.armed.Load())
	w.t += time.Hour
	assert.Zero(t, w.spawnCount+w.gcs+w.starts)
	assert.Equal(t, 1, ft.resets)
}

func TestWorkUnderSteadyLoadArmsNoTimer(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	wk, ft := newFakeWork(w, rt)
	defer wk.Close()
	// Overlapping work: the count never falls to zero.
	wk.Begin()
	for range 10000 {
		wk.Begin()
		w.alloc(256 * kib)
		w.t += 100 * time.Microsecond
		wk.End()
	}
	assert.Zero(t, ft.resets, "armed with work always in flight")
	assert.Zero(t, w.spawnCount+w.gcs+w.starts)
	wk.End()
	assert.Equal(t, 1, ft.resets)
}

func TestWorkArmsOncePerQuietPeriod(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	wk, ft := newFakeWork(w, rt)
	defer wk.Close()
	// One second of requests 1 ms apart; the timer fires when due.
	for range 1000 {
		requests(w, wk, 1, ms, 64*kib)
		if ft.armed && w.t >= ft.at {
			ft.fire(t)
		}
	}
	assert.LessOrEqual(t, ft.resets, 2*int(time.Second/(20*ms)), "timer armings")
	assert.Zero(t, w.spawnCount, "released between requests 1 ms apart")
}

func TestWorkInFlightKeepsTheProcessBusy(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	l := rt.Loop()
	wk, ft := newFakeWork(w, rt)
	defer wk.Close()
	serve(w, l, 50, 20*time.Microsecond, 256*kib)

	wk.Begin() // a long request, alone
	w.t += time.Second
	_, ok := l.NextStep()
	assert.False(t, ok, "the loop is woken while work is in flight")
	l.Waited(time.Second, false)
	l.Step(ms)
	assert.Zero(t, w.spawnCount, "released while work was in flight")

	wk.End()
	require.True(t, ft.armed)
	ft.fire(t)
	assert.Equal(t, 1, w.spawnCount, "not released once the work ended: %+v", rt.Stats())
	w.run()
}

func TestWorkWaitsForALoopThatWorks(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	l := rt.Loop()
	wk, ft := newFakeWork(w, rt)
	defer wk.Close()
	requests(w, wk, 10, 20*time.Microsecond, 256*kib)
	serve(w, l, 1, ms, 0)
	ft.fire(t) // the work's quiet period is over, the loop's not
	assert.Zero(t, w.spawnCount, "released while a loop worked")
	require.True(t, ft.armed, "not armed for the loop's quiet deadline")
	ft.fire(t)
	assert.Equal(t, 1, w.spawnCount)
	w.run()
}

func TestWorkReportsAStretchAtZeroWhole(t *testing.T) {
	// The timer finds nothing to empty and leaves itself disarmed; work
	// comes back 19.4 ms after it last ended, and a hundred requests
	// follow before the timer runs again. The 19.4 ms are reported as
	// one gap, as a loop's wait of 19.4 ms that ended with work would
	// be: the quiet period becomes four times that gap.
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	wk, ft := newFakeWork(w, rt)
	defer wk.Close()
	requests(w, wk, 10, 20*time.Microsecond, 0)
	end, fired := time.Duration(wk.end.Load()), ft.at
	ft.fire(t)
	require.False(t, ft.armed)
	requests(w, wk, 100, 20*time.Microsecond, 0)
	gap := fired + 20*time.Microsecond - end
	require.Equal(t, 19390*time.Microsecond, gap)
	require.True(t, ft.armed)
	ft.fire(t)
	assert.Equal(t, 4*gap, wk.quietPeriod())
}

func TestWorkReportsTheTimeAtZero(t *testing.T) {
	// Nothing allocated, so nothing spends the idle time reported: the
	// Runtime holds all of it.
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	wk, ft := newFakeWork(w, rt)
	defer wk.Close()
	start := w.t
	requests(w, wk, 100, 30*time.Microsecond, 0)
	ft.fire(t)
	busy := 100 * 50 * time.Microsecond
	assert.Equal(t, w.t-start-busy, time.Duration(rt.idle.Load()))
}

func TestWorkEndWithoutBeginPanics(t *testing.T) {
	_, rt := newTest(t)
	wk := rt.Work()
	defer wk.Close()
	assert.PanicsWithValue(t, "gcstep: Work.End without a Begin", wk.End)
}

func TestWorkCloseStopsTheTimer(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(20*ms))
	wk, ft := newFakeWork(w, rt)
	requests(w, wk, 10, 20*time.Microsecond, 256*kib)
	require.True(t, ft.armed)
	wk.Close()
	assert.False(t, ft.armed, "the timer is armed after Close")
	assert.NotContains(t, *rt.loops.Load(), wk.l, "the handle is still attached")
	requests(w, wk, 10, 20*time.Microsecond, 256*kib)
	assert.False(t, ft.armed, "armed after Close")
	assert.Zero(t, wk.InFlight())
}

func TestWorkReleaseOffArmsNothing(t *testing.T) {
	w, rt := newTest(t, WithReleaseDelay(0))
	wk, ft := newFakeWork(w, rt)
	defer wk.Close()
	requests(w, wk, 10, 20*time.Microsecond, 256*kib)
	assert.Zero(t, ft.resets)
}

// On the real runtime: a burst that leaves garbage is followed by a
// release, and then nothing is armed.
func TestWorkReleasesAfterABurst(t *testing.T) {
	rt := NewRuntime()
	defer rt.Close()
	wk := rt.Work()
	defer wk.Close()
	assert.False(t, wk.armed.Load(), "armed before any work")

	wk.Begin()
	garbage(8 << 20)
	wk.End()
	require.Eventually(t, func() bool { return rt.Stats().Releases >= 1 }, 10*time.Second, time.Millisecond,
		"no release after the burst")
	assert.Positive(t, rt.Stats().ReleasedBytes)
	require.Eventually(t, func() bool { return !wk.armed.Load() }, 10*time.Second, time.Millisecond,
		"the timer stays armed after the release")
}

func TestWorkWithoutAllocationReleasesNothing(t *testing.T) {
	// Free pages the Runtime could release, made before it exists: they
	// are not the work's garbage.
	garbage(8 << 20)
	runtime.GC()
	rt := NewRuntime(WithReleaseDelay(5 * ms))
	defer rt.Close()
	wk := rt.Work()
	defer wk.Close()
	for range 100 {
		wk.Begin()
		wk.End()
	}
	require.Eventually(t, func() bool { return !wk.armed.Load() }, 10*time.Second, time.Millisecond,
		"the timer stays armed with nothing to empty")
	time.Sleep(20 * ms) // four quiet periods: a release would have started
	st := rt.Stats()
	assert.Zero(t, st.QuietPeriods, "a release started")
	assert.Zero(t, st.Releases)
	assert.False(t, wk.armed.Load(), "armed again with nothing to empty")
}

// Begin and End from many goroutines while the timer runs: the count
// ends at zero, and Close leaves no goroutine behind (TestMain checks).
func TestWorkConcurrent(t *testing.T) {
	rt := NewRuntime(WithReleaseDelay(ms))
	defer rt.Close()
	wk := rt.Work()
	var wg sync.WaitGroup
	var ended atomic.Int64
	sinks := make([][]byte, 8) // one per goroutine: the test's own writes do not race
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				wk.Begin()
				if i%100 == 0 {
					sinks[g] = make([]byte, 256<<10)
					time.Sleep(2 * ms) // let the count reach zero and the timer fire
				}
				wk.End()
				ended.Add(1)
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 16000, ended.Load())
	assert.Zero(t, wk.InFlight())
	wk.Close()
}

// The request path allocates nothing.
func TestWorkBeginEndAllocatesNothing(t *testing.T) {
	rt := NewRuntime()
	defer rt.Close()
	wk := rt.Work()
	defer wk.Close()
	allocs := testing.AllocsPerRun(1000, func() {
		wk.Begin()
		wk.End()
	})
	assert.Zero(t, allocs)
}

// BenchmarkWorkBeginEnd is the price of the request path: a Begin and an
// End per op. serial: one goroutine, so every op takes the count from zero
// and back (two clock readings, the timer armed once per quiet period);
// parallel: GOMAXPROCS goroutines sharing the count, as a server's
// requests do. Beside it the naive baselines: one atomic counter (the
// floor) and a counter under a mutex.
func BenchmarkWorkBeginEnd(b *testing.B) {
	type counter interface {
		Begin()
		End()
	}
	impls := []struct {
		name string
		make func() (counter, func())
	}{
		{"work", func() (counter, func()) {
			rt := NewRuntime()
			wk := rt.Work()
			return wk, func() { wk.Close(); rt.Close() }
		}},
		{"atomic", func() (counter, func()) { return new(atomicCounter), func() {} }},
		{"mutex", func() (counter, func()) { return new(mutexCounter), func() {} }},
	}
	for _, impl := range impls {
		b.Run("impl="+impl.name+"/run=serial", func(b *testing.B) {
			c, done := impl.make()
			defer done()
			b.ReportAllocs()
			for b.Loop() {
				c.Begin()
				c.End()
			}
		})
		b.Run("impl="+impl.name+"/run=parallel", func(b *testing.B) {
			c, done := impl.make()
			defer done()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					c.Begin()
					c.End()
				}
			})
		})
	}
}

type atomicCounter struct{ n atomic.Int64 }

func (c *atomicCounter) Begin() { c.n.Add(1) }
func (c *atomicCounter) End()   { c.n.Add(-1) }

type mutexCounter struct {
	mu sync.Mutex
	n  int
}

func (c *mutexCounter) Begin() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *mutexCounter) End()   { c.mu.Lock(); c.n--; c.mu.Unlock() }
