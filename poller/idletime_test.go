package poller_test

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// idleStepper records the idle time its caller reports.
type idleStepper struct {
	idle    atomic.Int64
	reports atomic.Int64
}

func (s *idleStepper) Step(time.Duration) bool { return false }

func (s *idleStepper) Idled(d time.Duration) {
	s.idle.Add(int64(d))
	s.reports.Add(1)
}

var _ gcstep.IdleObserver = (*idleStepper)(nil)

func TestBlockingWaitsReportIdleTime(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)
		lock := gvl.New()
		lock.Acquire()
		defer lock.Release()

		t.Run("Loop", func(t *testing.T) {
			s := &idleStepper{}
			l := newLoop(t, poller.WithBackend(b), poller.WithGVL(lock), poller.WithStepper(s))
			require.NoError(t, l.Add(p.r, poller.Read, func(int, poller.Events) {}))
			start := time.Now()
			n, err := l.RunOnce(20 * time.Millisecond)
			elapsed := time.Since(start)
			require.NoError(t, err)
			assert.Zero(t, n)
			st := l.Stats()
			assert.Equal(t, int64(st.BlockingPolls), s.reports.Load(), "one report per blocking wait")
			assert.Equal(t, st.BlockedTime, time.Duration(s.idle.Load()), "reported idle time and Stats.BlockedTime differ")
			assert.Positive(t, st.BlockedTime)
			assert.LessOrEqual(t, st.BlockedTime, elapsed)
		})

		t.Run("WaitFD", func(t *testing.T) {
			s := &idleStepper{}
			m := poller.New(poller.WithBackend(b), poller.WithGVL(lock), poller.WithStepper(s))
			_, err := m.WaitFD(p.r, poller.Read, 5*time.Millisecond)
			require.NoError(t, err)
			assert.Equal(t, m.Stats().BlockedTime, time.Duration(s.idle.Load()))
			assert.Positive(t, s.reports.Load())
		})

		t.Run("zero timeouts are not idle", func(t *testing.T) {
			s := &idleStepper{}
			m := poller.New(poller.WithBackend(b), poller.WithGVL(lock), poller.WithStepper(s))
			for range 10 {
				_, err := m.WaitFD(p.r, poller.Read, 0)
				require.NoError(t, err)
			}
			assert.Zero(t, s.reports.Load())
			assert.Zero(t, m.Stats().BlockedTime)
		})

		t.Run("through a Chain", func(t *testing.T) {
			s := &idleStepper{}
			m := poller.New(poller.WithBackend(b), poller.WithStepper(gcstep.Chain(s)))
			_, err := m.WaitFD(p.r, poller.Read, time.Millisecond)
			require.NoError(t, err)
			assert.Positive(t, s.reports.Load())
		})
	})
}

// observer is a gcstep.LoopObserver that records what the loop reports
// and answers Lull as told.
type observer struct {
	lull    atomic.Bool
	onStep  func()
	steps   atomic.Int64
	waits   []waitReport // loop goroutine only
	stepped []bool
	lulls   atomic.Int64
}

type waitReport struct {
	d    time.Duration
	work bool
}

func (o *observer) Step(time.Duration) bool {
	o.steps.Add(1)
	if o.onStep != nil {
		o.onStep()
	}
	return false
}
func (o *observer) Idled(time.Duration) {}
func (o *observer) Waited(d time.Duration, work bool) {
	o.waits = append(o.waits, waitReport{d, work})
}
func (o *observer) Stepped(_ time.Duration, work bool) { o.stepped = append(o.stepped, work) }
func (o *observer) Lull() bool {
	o.lulls.Add(1)
	return o.lull.Load()
}

var _ gcstep.LoopObserver = (*observer)(nil)

// A stepper with nothing to do at a lull costs the loop no system call:
// it blocks at once, as it would without a stepper.
func TestNoLullNoZeroPoll(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		for _, lull := range []bool{false, true} {
			p := newPipe(t)
			o := &observer{}
			o.lull.Store(lull)
			l := newLoop(t, poller.WithBackend(b), poller.WithStepper(o))
			buf := make([]byte, 16)
			require.NoError(t, l.Add(p.r, poller.Read, func(fd int, _ poller.Events) { unix.Read(fd, buf) }))
			for range 10 {
				p.write(p.w, "x")
				_, err := l.RunOnce(time.Second)
				require.NoError(t, err)
			}
			st := l.Stats()
			if lull {
				assert.GreaterOrEqual(t, st.ZeroPolls, uint64(10), "zero polls with a lull")
			} else {
				assert.Zero(t, st.ZeroPolls, "zero polls without a lull")
				assert.Zero(t, o.steps.Load(), "steps without a lull")
				assert.EqualValues(t, 10, st.BlockingPolls)
			}
			assert.Positive(t, o.lulls.Load())
		}
	})
}

func TestLoopReportsWaitsAndSteps(t *testing.T) {
	p := newPipe(t)
	o := &observer{}
	o.lull.Store(true)
	// The step takes long enough for work to arrive meanwhile.
	o.onStep = func() { p.write(p.w, "x") }
	l := newLoop(t, poller.WithStepper(o))
	buf := make([]byte, 16)
	require.NoError(t, l.Add(p.r, poller.Read, func(fd int, _ poller.Events) { unix.Read(fd, buf) }))
	n, err := l.RunOnce(time.Second)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.Equal(t, []bool{true}, o.stepped, "a step after which work was waiting")
	st := l.Stats()
	assert.EqualValues(t, 1, st.DelayedSteps)
	assert.Positive(t, st.StepDelay)

	// A wait that ends with an event is work; one that times out is not.
	o.onStep = nil
	o.lull.Store(false)
	_, err = l.RunOnce(5 * time.Millisecond)
	require.NoError(t, err)
	require.NotEmpty(t, o.waits)
	assert.False(t, o.waits[len(o.waits)-1].work, "a wait that timed out")
	p.write(p.w, "x")
	_, err = l.RunOnce(time.Second)
	require.NoError(t, err)
	assert.True(t, o.waits[len(o.waits)-1].work, "a wait that ended with an event")

	// A wait cut short for a timer ends with work, the timer: a loop
	// driven by its timers is not quiet.
	fired := 0
	l.AfterFunc(2*time.Millisecond, func() { fired++ })
	n, err = l.RunOnce(time.Second)
	require.NoError(t, err)
	require.Equal(t, 1, fired)
	assert.Equal(t, 1, n)
	assert.True(t, o.waits[len(o.waits)-1].work, "a wait that ran to a timer")
}

// The runtime stepper in a real loop: inline cycles in the gaps of a
// stream whose producer is slower than the loop, and, once the stream
// stops, the gap emptied: a collection and the memory returned to the OS.
// The test is about the loop's plumbing, not the policy's prices: the
// whole of the program's CPU is the budget, so every cycle is affordable.
func TestRuntimeStepperInALoop(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // only the stepper and its bound collect
	rt := gcstep.NewRuntime(gcstep.WithBudget(1))
	defer rt.Close()
	p := newPipe(t)
	lock := gvl.New()
	lock.Acquire()
	defer lock.Release()
	// A budget and gaps generous enough for a cycle even under the race
	// detector on a loaded machine.
	l := newLoop(t, poller.WithGVL(lock), poller.WithStepper(rt), poller.WithStepBudget(20*time.Millisecond))
	buf := make([]byte, 16)
	var kept []byte
	require.NoError(t, l.Add(p.r, poller.Read, func(fd int, _ poller.Events) {
		unix.Read(fd, buf)
		kept = make([]byte, 128<<10) // garbage at the next event
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			time.Sleep(2 * time.Millisecond)
			unix.Write(p.w, []byte("x"))
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-done:
		default:
			_, err := l.RunOnce(50 * time.Millisecond)
			require.NoError(t, err)
			require.True(t, time.Now().Before(deadline))
			continue
		}
		break
	}
	for { // what the writer wrote last
		n, err := l.RunOnce(10 * time.Millisecond)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	_ = kept
	s := rt.Stats()
	assert.Positive(t, s.CyclesInline, "no inline cycle in 2 ms gaps: %+v", s)

	// The release is paid from the program's CPU, the budget being a
	// share of it. On a loaded machine the stream's cycles, each charged
	// the loop's wait, can cost more than the stream earned, and the
	// tokens a process starts with went to its first Runtime, in an
	// earlier test: the test's own CPU, spent outside the loop, earns the
	// release's price (a few ms) many times over.
	for s := rt.Stats(); s.Earned-s.Charged < 50*time.Millisecond; s = rt.Stats() {
		require.True(t, time.Now().Before(deadline), "the budget earned too little: %+v", s)
		for end := time.Now().Add(time.Millisecond); time.Now().Before(end); {
		}
	}

	// Quiet: the loop blocks; the Runtime wakes it to empty the gap.
	start := time.Now()
	for rt.Stats().Releases == 0 && time.Since(start) < 5*time.Second {
		_, err := l.RunOnce(100 * time.Millisecond)
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, rt.Stats().Releases, "the gap was not emptied: %+v", rt.Stats())
	assert.Positive(t, rt.Stats().ReleaseCost, "the release's price")
	// Once per quiet stretch.
	_, err := l.RunOnce(2 * gcstep.DefaultReleaseDelay)
	require.NoError(t, err)
	assert.EqualValues(t, 1, rt.Stats().Releases)
}

// A program that allocates nothing: no cycle, and a loop that waits with
// no extra system call.
func TestRuntimeStepperIdleProgram(t *testing.T) {
	// The test binary itself allocates now and then (the race detector
	// more): a threshold it does not reach in 300 ms stands for "nothing".
	rt := gcstep.NewRuntime(gcstep.WithMinGarbage(16 << 20))
	defer rt.Close()
	p := newPipe(t)
	l := newLoop(t, poller.WithStepper(rt))
	buf := make([]byte, 16)
	require.NoError(t, l.Add(p.r, poller.Read, func(fd int, _ poller.Events) { unix.Read(fd, buf) }))
	before := rt.Stats()
	_, err := l.RunOnce(300 * time.Millisecond)
	require.NoError(t, err)
	st := l.Stats()
	s := rt.Stats()
	assert.EqualValues(t, 1, st.BlockingPolls, "waits in an idle RunOnce")
	assert.Equal(t, before.CyclesInline+before.Releases, s.CyclesInline+s.Releases, "collections in an idle program")
}

// Several Loops, each on its own goroutine with its own lock, share one
// Runtime through a handle each (run with -race): once they are all
// quiet, the gap after their garbage is emptied once. The whole of the
// program's CPU is the budget: the test is about sharing, not prices.
func TestLoopsShareARuntime(t *testing.T) {
	rt := gcstep.NewRuntime(gcstep.WithBudget(1))
	defer rt.Close()
	const loops = 4
	var wg sync.WaitGroup
	for range loops {
		h := rt.Loop()
		p := newPipe(t)
		lock := gvl.New()
		l := newLoop(t, poller.WithGVL(lock), poller.WithStepper(h))
		buf := make([]byte, 16)
		var kept [][]byte
		require.NoError(t, l.Add(p.r, poller.Read, func(fd int, _ poller.Events) {
			unix.Read(fd, buf)
			kept = append(kept[:0], make([]byte, 64<<10))
		}))
		wg.Go(func() {
			defer h.Close()
			lock.Acquire()
			defer lock.Release()
			for i := range 200 {
				if i%4 == 0 {
					time.Sleep(200 * time.Microsecond)
				}
				unix.Write(p.w, []byte("x"))
				_, err := l.RunOnce(time.Second)
				assert.NoError(t, err)
				_ = rt.Stats()
			}
			// Quiet: wait on until the gap was emptied (by any loop).
			deadline := time.Now().Add(5 * time.Second)
			for rt.Stats().Releases == 0 && time.Now().Before(deadline) {
				_, err := l.RunOnce(50 * time.Millisecond)
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	s := rt.Stats()
	assert.EqualValues(t, 1, s.Releases, "releases for loops that went quiet together: %+v", s)
}

// TestWaitWhileOthersHoldTheLockIsNotIdle: a goroutine of a Mux that
// blocks while another goroutine sharing the lock takes it and works was
// not idle, for the program: the wait reports no idle time. A wait with
// nobody else taking the lock reports all of it.
func TestWaitWhileOthersHoldTheLockIsNotIdle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		p := newPipe(t)
		lock := gvl.New()
		s := &idleStepper{}
		m := poller.New(poller.WithBackend(b), poller.WithGVL(lock), poller.WithStepper(s))

		lock.Acquire()
		_, err := m.WaitFD(p.r, poller.Read, 5*time.Millisecond)
		require.NoError(t, err)
		require.Positive(t, s.reports.Load())
		assert.Equal(t, m.Stats().BlockedTime, time.Duration(s.idle.Load()), "alone: the whole wait is idle")

		s.idle.Store(0)
		s.reports.Store(0)
		other := make(chan struct{})
		go func() {
			defer close(other)
			lock.Acquire() // granted once the waiter below releases the lock
			time.Sleep(2 * time.Millisecond)
			_, err := unix.Write(p.w, []byte{1})
			assert.NoError(t, err)
			lock.Release()
		}()
		ev, err := m.WaitFD(p.r, poller.Read, 5*time.Second)
		require.NoError(t, err)
		assert.NotZero(t, ev&poller.Read)
		lock.Release()
		select {
		case <-other:
		case <-time.After(5 * time.Second):
			t.Fatal("the other goroutine never finished")
		}
		assert.Positive(t, s.reports.Load())
		assert.Zero(t, s.idle.Load(), "a wait while another goroutine held the lock counted as idle")
	})
}

// A loop that finds work ready at the zero-timeout poll Lull asked for
// handles it and takes no step; with no lull it does not poll for one.
func TestNoStepWithWorkReady(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		for _, lull := range []bool{false, true} {
			p := newPipe(t)
			o := &observer{}
			o.lull.Store(lull)
			l := newLoop(t, poller.WithBackend(b), poller.WithStepper(o))
			buf := make([]byte, 1)
			require.NoError(t, l.Add(p.r, poller.Read, func(fd int, _ poller.Events) { unix.Read(fd, buf) }))
			p.write(p.w, "xxxxxxxxxx") // ten reads' worth: work ready at every wait
			for range 10 {
				_, err := l.RunOnce(time.Second)
				require.NoError(t, err)
			}
			assert.Zero(t, o.steps.Load(), "steps with work ready")
		}
	})
}
