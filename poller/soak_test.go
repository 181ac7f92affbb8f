package poller_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/internal/rss"
	"github.com/idlemux/idlemux/poller"
)

// TestSoak moves bytes through many pipes and socketpairs at once, written
// in random sizes by a goroutine each (waiting with Mux.WaitFD when a pipe
// is full), into a Loop that steps while idle (gcstep.NewRuntime, a
// gvl.Lock) and reads each ready fd into a fresh buffer, as the urandom
// demo does. It checks that every byte arrives exactly once and in order
// per stream, that RSS stays bounded, and that goroutines and fds are back
// to their starting counts afterwards.
//
// It runs for about a second by default and a quarter of that under
// -short. IDLEMUX_SOAK=duration (such as IDLEMUX_SOAK=5m) runs it for that
// long, split over the backends; the figures are logged (go test -v).
func TestSoak(t *testing.T) {
	d := time.Second
	if testing.Short() {
		d = 250 * time.Millisecond
	}
	streams := 32
	if v := os.Getenv("IDLEMUX_SOAK"); v != "" {
		var err error
		d, err = time.ParseDuration(v)
		require.NoError(t, err, "IDLEMUX_SOAK")
		streams = 128
	}
	backends := poller.Backends()
	if os.Getenv("IDLEMUX_SOAK") == "" {
		backends = backends[:1]
	}
	for _, b := range backends {
		t.Run(b.String(), func(t *testing.T) {
			soak(t, b, d/time.Duration(len(backends)), streams)
		})
	}
}

// soakPattern is what every stream carries: stream i sends the pattern
// from offset i*7919 on, wrapping around. Its length is prime, so writes
// and reads of any size fall across the wrap at ever different places.
const soakPatternLen = 65521

var soakPattern = func() []byte {
	p := make([]byte, 2*soakPatternLen) // twice, so any window is contiguous
	r := rand.New(rand.NewPCG(1, 2))
	for i := range soakPatternLen {
		p[i] = byte(r.Uint32())
	}
	copy(p[soakPatternLen:], p[:soakPatternLen])
	return p
}()

// window returns the n bytes (n <= soakPatternLen) stream s carries from
// offset off.
func window(s int, off uint64, n int) []byte {
	i := int((uint64(s)*7919 + off) % soakPatternLen)
	return soakPattern[i : i+n]
}

// The writers write for soakBusy of every soakPeriod and pause for the
// rest, together, so that the loop is idle for a while in every period.
const (
	soakPeriod = 10 * time.Millisecond
	soakBusy   = 7 * time.Millisecond
)

// soakQuiet is how long the writers stay quiet at the end, streams open,
// before closing them: the loop is then idle, not between requests, and
// must step.
const soakQuiet = 100 * time.Millisecond

// soakStream is one pipe or socketpair: a writer goroutine at w, the loop
// reading r.
type soakStream struct {
	r, w    int
	written atomic.Uint64 // bytes written, final once the writer is done
	read    uint64        // bytes read and checked; loop goroutine only
	bad     bool          // a byte out of place; loop goroutine only
	eof     bool          // loop goroutine only
}

func soak(t *testing.T, b poller.Backend, d time.Duration, n int) {
	goroutinesBefore := runtime.NumGoroutine()
	fdsBefore := openFDs(t)

	streams := make([]*soakStream, n)
	for i := range streams {
		var p [2]int
		var err error
		if i%2 == 0 {
			err = unix.Pipe(p[:])
		} else {
			p, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		}
		require.NoError(t, err)
		for _, fd := range p {
			unix.CloseOnExec(fd)
			require.NoError(t, unix.SetNonblock(fd, true))
		}
		streams[i] = &soakStream{r: p[0], w: p[1]}
	}

	lock := gvl.New()
	stepper := gcstep.NewRuntime()
	defer stepper.Close()
	l, err := poller.NewLoop(poller.WithBackend(b), poller.WithGVL(lock), poller.WithStepper(stepper))
	require.NoError(t, err)

	done := 0 // streams at EOF; loop goroutine only
	var finished atomic.Bool
	for i, s := range streams {
		require.NoError(t, l.Add(s.r, poller.Read, func(fd int, ev poller.Events) {
			// One read into a fresh buffer per call, as in the demo:
			// garbage for the stepper, and many events.
			buf := make([]byte, 16<<10)
			{
				k, err := unix.Read(fd, buf)
				if err == unix.EAGAIN || err == unix.EINTR {
					return
				}
				if err != nil {
					t.Errorf("stream %d: read: %v", i, err)
					s.bad = true
				}
				if k <= 0 {
					s.eof = true
					l.Remove(fd)
					if done++; done == len(streams) {
						finished.Store(true)
						l.Wake()
					}
					return
				}
				if !s.bad && !bytes.Equal(buf[:k], window(i, s.read, k)) {
					t.Errorf("stream %d: bytes out of place at offset %d", i, s.read)
					s.bad = true
				}
				s.read += uint64(k)
			}
		}))
	}
	// A timer that keeps rearming itself, and Wake from outside, so the
	// loop also fires timers and drains wakeups all through the run.
	var ticks int
	var tick func()
	tick = func() {
		ticks++
		if !finished.Load() {
			l.AfterFunc(20*time.Millisecond, tick)
		}
	}
	l.AfterFunc(20*time.Millisecond, tick)

	runErr := make(chan error, 1)
	go func() {
		lock.Acquire()
		defer lock.Release()
		for !finished.Load() {
			if _, err := l.RunOnce(100 * time.Millisecond); err != nil {
				runErr <- err
				return
			}
		}
		runErr <- nil
	}()

	// RSS, sampled while the bytes move.
	var rssFirst, rssPeak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				cur, err := rss.Current()
				if err != nil {
					return
				}
				rssFirst.CompareAndSwap(0, cur)
				if cur > rssPeak.Load() {
					rssPeak.Store(cur)
				}
				l.Wake()
			}
		}
	})

	epoch := time.Now()
	deadline := epoch.Add(d)
	m := poller.New()
	var writers sync.WaitGroup
	for i, s := range streams {
		writers.Go(func() {
			defer unix.Close(s.w) // EOF for the reader
			defer func() { time.Sleep(time.Until(deadline.Add(soakQuiet))) }()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			var off uint64
			for time.Now().Before(deadline) {
				if ph := time.Since(epoch) % soakPeriod; ph > soakBusy {
					// Every writer pauses at once for the end of
					// each period: the loop drains what is left,
					// finds nothing and steps.
					time.Sleep(soakPeriod - ph)
				}
				chunk := window(i, off, 1+rng.IntN(32<<10))
				for len(chunk) > 0 {
					k, err := unix.Write(s.w, chunk)
					switch {
					case err == unix.EAGAIN:
						if _, err := m.WaitFD(s.w, poller.Write, 100*time.Millisecond); err != nil {
							t.Errorf("stream %d: WaitFD: %v", i, err)
							return
						}
						continue
					case err == unix.EINTR:
						continue
					case err != nil:
						t.Errorf("stream %d: write: %v", i, err)
						return
					}
					chunk = chunk[k:]
					off += uint64(k)
					s.written.Store(off)
				}
			}
		})
	}
	writers.Wait()

	select {
	case err := <-runErr:
		require.NoError(t, err)
	case <-time.After(d + 30*time.Second):
		l.Close()
		t.Fatalf("the loop never saw every stream end: %d of %d", done, len(streams))
	}
	close(stop)
	wg.Wait()

	var moved uint64
	lost := 0
	for i, s := range streams {
		moved += s.read
		if s.read != s.written.Load() || s.bad || !s.eof {
			lost++
			t.Errorf("stream %d: wrote %d, read %d (eof %v, out of place %v)", i, s.written.Load(), s.read, s.eof, s.bad)
		}
		unix.Close(s.r)
	}
	ls, ss := l.Stats(), stepper.Stats()
	require.NoError(t, l.Close())
	stepper.Close()

	// Bounded RSS: what the run peaked at, against where it started. The
	// loop keeps nothing per byte, so a leak would grow with the bytes
	// moved; a generous bound only catches that.
	first, peak := rssFirst.Load(), rssPeak.Load()
	if first > 0 {
		assert.Less(t, peak, first+256<<20, "RSS grew from %d to %d bytes", first, peak)
	}
	var goroutinesAfter int
	for range 500 {
		if goroutinesAfter = runtime.NumGoroutine(); goroutinesAfter <= goroutinesBefore {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fdsAfter := openFDs(t)
	assert.LessOrEqual(t, goroutinesAfter, goroutinesBefore, "goroutines left running")
	assert.Equal(t, fdsBefore, fdsAfter, "fds leaked")
	assert.Zero(t, lost, "streams that lost, duplicated or reordered bytes")
	assert.NotZero(t, moved)
	// The writers end with a quiet stretch: the loop must have offered it
	// to the stepper, and the stepper counted the same calls. (Whether
	// it collected is the policy's call; TestLoopRuntimeStepperCollects
	// asserts that it can.)
	assert.NotZero(t, ls.Steps, "the loop never stepped, even in %v of quiet", soakQuiet)
	assert.Equal(t, ls.Steps, ss.Steps, "steps counted by the loop and by the stepper")
	t.Logf("%v on %v: %d streams, %d bytes moved (%.1f MB/s), %d streams lost bytes; "+
		"loop: %d events, %d steps (%v), %d timers, %d wakeups, %d restarts, %d spurious; "+
		"stepper: %d cycles, %d releases; RSS first %.1f MB, peak %.1f MB; "+
		"goroutines %d before, %d after; fds %d before, %d after; %d ticks",
		d, b, len(streams), moved, float64(moved)/d.Seconds()/1e6, lost,
		ls.Events, ls.Steps, ls.StepTime, ls.Timers, ls.Wakeups, ls.Restarts, ls.Spurious,
		ss.CyclesInline, ss.Releases, float64(first)/1e6, float64(peak)/1e6,
		goroutinesBefore, goroutinesAfter, fdsBefore, fdsAfter, ticks)
}
