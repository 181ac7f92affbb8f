package bench

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// vm_thread_pipe and seed 004's IO.select: one byte bounced between two
// goroutines over a pair of pipes, each goroutine holding the lock while it
// runs and releasing it only while it waits in the poller. The seeds 000 and
// 001 measured Ruby 1.8 making two rt_sigprocmask calls per iteration; the
// benchmarks report the system calls they make per round trip, counted by
// the poller itself (its Stats) and by the benchmark for its own reads and
// writes.

// A pipe is the two ends of a non-blocking pipe(2).
type pipe struct {
	r, w   int
	closeW *sync.Once // the write end is closed early on failure
}

func newPipe() (pipe, error) {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		return pipe{}, os.NewSyscallError("pipe", err)
	}
	for _, fd := range p {
		unix.CloseOnExec(fd)
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(p[0])
			unix.Close(p[1])
			return pipe{}, os.NewSyscallError("fcntl", err)
		}
	}
	return pipe{p[0], p[1], new(sync.Once)}, nil
}

// shutWrite closes the write end, once, so the reader sees end of file.
func (p pipe) shutWrite() { p.closeW.Do(func() { unix.Close(p.w) }) }

func (p pipe) close() {
	unix.Close(p.r)
	p.shutWrite()
}

// A waiter waits, holding the lock, until fd is readable.
type waiter func(fd int) error

// ioCounts is what one side of a bounce did.
type ioCounts struct {
	syscalls int // reads and writes, EAGAINs included
	again    int // reads that found nothing and waited
	// rtts are the pinger's round-trip times, when it was asked to keep them.
	rtts []time.Duration
}

// bounce runs one side of the ping-pong n times: the pinger (rtts not nil)
// writes a byte and reads the echo, keeping each round trip in rtts, whose
// capacity must be n; the ponger reads a byte and writes it back. With
// selectFirst it waits before every read, as IO.select callers do;
// otherwise it reads first and waits only after EAGAIN, as
// rb_wait_for_single_fd callers do. The pinger checks every echo.
func bounce(in, out int, n int, rtts []time.Duration, selectFirst bool, wait waiter) (c ioCounts, err error) {
	ping := rtts != nil
	var b [1]byte
	read := func() error {
		if selectFirst {
			if err := wait(in); err != nil {
				return err
			}
		}
		for {
			c.syscalls++
			m, err := unix.Read(in, b[:])
			switch {
			case err == unix.EAGAIN:
				c.again++
				if err := wait(in); err != nil {
					return err
				}
			case err == unix.EINTR:
			case err != nil:
				return os.NewSyscallError("read", err)
			case m == 0:
				return errors.New("bench: pipe closed early")
			default:
				return nil
			}
		}
	}
	write := func(v byte) error {
		b[0] = v
		for {
			c.syscalls++
			_, err := unix.Write(out, b[:])
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return os.NewSyscallError("write", err)
			}
			return nil
		}
	}
	c.rtts = rtts[:0]
	for i := range n {
		v := byte(i)
		if ping {
			t0 := time.Now()
			if err := write(v); err != nil {
				return c, err
			}
			if err := read(); err != nil {
				return c, err
			}
			c.rtts = append(c.rtts, time.Since(t0))
			if b[0] != v {
				return c, fmt.Errorf("bench: round %d: echo %d, want %d", i, b[0], v)
			}
		} else {
			if err := read(); err != nil {
				return c, err
			}
			if err := write(b[0]); err != nil {
				return c, err
			}
		}
	}
	return c, nil
}

// pingPongResult is what a ping-pong of n round trips did, for the metrics.
type pingPongResult struct {
	io    ioCounts     // both sides' own reads and writes, the pinger's round trips
	mux   poller.Stats // the poller's counters over the run
	steps uint64       // idle steps taken
	lock  gvl.Stats    // the lock's counters over the run
}

// A clock is the part of testing.B a ping-pong uses to keep its setup
// (pipes, the stepper, starting the goroutines) and teardown out of the
// timed region; tests pass nil.
type clock interface {
	ResetTimer()
	StopTimer()
}

// timed runs f, the timed part of a ping-pong, between c's ResetTimer and
// StopTimer.
func timed(c clock, f func()) {
	if c != nil {
		c.ResetTimer()
		defer c.StopTimer()
	}
	f()
}

// pingPongGVL bounces a byte n times between two goroutines sharing a
// gvl.Lock and a poller.Mux. useSelect picks Mux.Select (wait, then read)
// over Mux.WaitFD (read, then wait on EAGAIN); step turns idle stepping on,
// with gcstep.NewRuntime's default policy. Only the bouncing is timed on c.
func pingPongGVL(c clock, n int, useSelect, step bool, backend poller.Backend) (pingPongResult, error) {
	var res pingPongResult
	ab, err := newPipe()
	if err != nil {
		return res, err
	}
	defer ab.close()
	ba, err := newPipe()
	if err != nil {
		return res, err
	}
	defer ba.close()

	l := gvl.New()
	opts := []poller.Option{poller.WithGVL(l), poller.WithBackend(backend)}
	if step {
		rt := gcstep.NewRuntime()
		defer rt.Close()
		opts = append(opts, poller.WithStepper(rt))
	}
	m := poller.New(opts...)
	wait := func(fd int) error {
		_, err := m.WaitFD(fd, poller.Read, -1)
		return err
	}
	if useSelect {
		wait = func(fd int) error {
			_, _, _, err := m.Select([]int{fd}, nil, nil, -1)
			return err
		}
	}

	var (
		wg     sync.WaitGroup
		counts [2]ioCounts
		errs   [2]error
		ready  sync.WaitGroup
		start  = make(chan struct{})
		// Made before the timed part, which then allocates only what
		// the poller does.
		rtts = make([]time.Duration, 0, n)
	)
	for side := range 2 {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			ready.Done()
			<-start
			l.Acquire()
			defer l.Release()
			in, out := ba, ab
			if side == 1 {
				in, out = ab, ba
			}
			var keep []time.Duration // the ponger keeps none
			if side == 0 {
				keep = rtts
			}
			counts[side], errs[side] = bounce(in.r, out.w, n, keep, useSelect, wait)
			if errs[side] != nil {
				// Unblock the other side: it sees EOF and fails too.
				out.shutWrite()
			}
		}()
	}
	ready.Wait()
	timed(c, func() {
		close(start)
		wg.Wait()
	})
	res.io = ioCounts{counts[0].syscalls + counts[1].syscalls, counts[0].again + counts[1].again, counts[0].rtts}
	res.mux = m.Stats()
	res.steps = res.mux.Steps
	res.lock = l.Stats()
	return res, errors.Join(errs[0], errs[1])
}

// pingPongOS is the same ping-pong as a Go programmer writes it: two
// goroutines, blocking os.File reads and writes on two os.Pipe pairs, no
// lock; Go's netpoller does the waiting. Only the bouncing is timed on c.
func pingPongOS(c clock, n int) ([]time.Duration, error) {
	ar, aw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer ar.Close()
	defer aw.Close()
	br, bw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer br.Close()
	defer bw.Close()
	done := make(chan error, 1)
	start := make(chan struct{})
	go func() {
		<-start
		var b [1]byte
		for range n {
			if _, err := ar.Read(b[:]); err != nil {
				done <- err
				return
			}
			if _, err := bw.Write(b[:]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var b [1]byte
	rtts := make([]time.Duration, 0, n)
	echoed := false // the echo side's result was received
	timed(c, func() {
		close(start)
		for i := range n {
			b[0] = byte(i)
			t0 := time.Now()
			if _, err = aw.Write(b[:]); err != nil {
				return
			}
			if _, err = br.Read(b[:]); err != nil {
				return
			}
			rtts = append(rtts, time.Since(t0))
			if b[0] != byte(i) {
				err = fmt.Errorf("bench: round %d: echo %d, want %d", i, b[0], byte(i))
				return
			}
		}
		err = <-done
		echoed = true
	})
	if !echoed {
		// Unblock the echo side, which may wait for a byte that is not
		// coming: closing its pipe ends its read.
		ar.Close()
		<-done
	}
	if err != nil {
		return nil, err
	}
	return rtts, nil
}

// reportPercentiles reports the median and 99th percentile round trip:
// a mean would hide whether every round trip is slow or a few are very slow.
func reportPercentiles(b *testing.B, rtts []time.Duration) {
	if len(rtts) == 0 {
		return
	}
	slices.Sort(rtts)
	b.ReportMetric(float64(percentile(rtts, 50)), "p50-ns")
	b.ReportMetric(float64(percentile(rtts, 99)), "p99-ns")
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted, by the
// nearest-rank method: the smallest sample with at least p % of the
// samples at or below it.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n), from 1
	return sorted[max(rank, 1)-1]
}

func benchPingPong(b *testing.B, useSelect bool) {
	for _, step := range []bool{false, true} {
		name := "impl=gvl/step=off"
		if step {
			name = "impl=gvl/step=on"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			res, err := pingPongGVL(b, b.N, useSelect, step, poller.BackendDefault)
			if err != nil {
				b.Fatal(err)
			}
			n := float64(b.N)
			b.ReportMetric(float64(res.mux.Syscalls)/n, "poller-syscalls/op")
			b.ReportMetric(float64(res.io.syscalls)/n, "rw-syscalls/op")
			b.ReportMetric(float64(res.mux.BlockingPolls)/n, "blocking-polls/op")
			// Blocking waits that parked in Go's netpoller rather than
			// blocking a thread.
			b.ReportMetric(float64(res.mux.Parked)/n, "parked/op")
			b.ReportMetric(float64(res.steps)/n, "steps/op")
			// Acquisitions that had to queue: each is a goroutine
			// parked and woken again, the handoff a Ruby thread pays too.
			b.ReportMetric(float64(res.lock.Contended)/n, "lock-waits/op")
			reportPercentiles(b, res.io.rtts)
		})
	}
	b.Run("impl=os", func(b *testing.B) {
		b.ReportAllocs()
		rtts, err := pingPongOS(b, b.N)
		if err != nil {
			b.Fatal(err)
		}
		reportPercentiles(b, rtts)
	})
}

// BenchmarkPipe is vm_thread_pipe: a read that finds nothing waits in
// Mux.WaitFD with the lock released. One op is one round trip.
func BenchmarkPipe(b *testing.B) { benchPingPong(b, false) }

// BenchmarkSelect is the same round trip waiting in Mux.Select before each
// read, as the seed's IO.select loop does.
func BenchmarkSelect(b *testing.B) { benchPingPong(b, true) }

// TestPingPong checks every configuration the benchmarks time: all bytes
// echoed in order, and the poller's counters consistent with what happened.
func TestPingPong(t *testing.T) {
	const n = 500
	for _, backend := range poller.Backends() {
		for _, useSelect := range []bool{false, true} {
			for _, step := range []bool{false, true} {
				name := fmt.Sprintf("%v/select=%v/step=%v", backend, useSelect, step)
				t.Run(name, func(t *testing.T) {
					res, err := runWithTimeout(t, func() (pingPongResult, error) {
						return pingPongGVL(nil, n, useSelect, step, backend)
					})
					if err != nil {
						t.Fatal(err)
					}
					if !step && res.steps != 0 {
						t.Errorf("%d steps without a stepper", res.steps)
					}
					// Every round trip is at least two reads and two writes.
					if res.io.syscalls < 4*n {
						t.Errorf("%d reads and writes for %d round trips, want at least %d", res.io.syscalls, n, 4*n)
					}
					if len(res.io.rtts) != n {
						t.Errorf("%d round trips timed, want %d", len(res.io.rtts), n)
					}
					if useSelect && res.mux.Syscalls < 2*n {
						t.Errorf("%d poller calls for %d round trips, want at least %d", res.mux.Syscalls, n, 2*n)
					}
				})
			}
		}
	}
	if rtts, err := pingPongOS(nil, n); err != nil || len(rtts) != n {
		t.Errorf("os: %d round trips, error %v; want %d", len(rtts), err, n)
	}
}

// runWithTimeout runs f and fails the test if it has not returned within a
// generous bound, rather than hanging the test binary.
func runWithTimeout[T any](t *testing.T, f func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(time.Minute):
		t.Fatal("timed out after a minute")
		panic("unreachable")
	}
}

func TestPercentile(t *testing.T) {
	// Nearest rank: of the samples 1..100 the 99th percentile is 99, not
	// the maximum, and the median is 50, not the upper median 51.
	seq := func(n int, v func(i int) int) []time.Duration {
		var s []time.Duration
		for i := 1; i <= n; i++ {
			s = append(s, time.Duration(v(i)))
		}
		return s
	}
	same := func(i int) int { return i }
	for _, c := range []struct {
		samples []time.Duration
		p       int
		want    time.Duration
	}{
		{seq(100, same), 50, 50},
		{seq(100, same), 99, 99},
		{seq(100, same), 100, 100},
		{seq(10, same), 50, 5},
		{seq(10, same), 99, 10},
		{seq(2, same), 50, 1},
		{seq(1, same), 99, 1},
		{seq(200, func(i int) int { return (i + 1) / 2 }), 99, 99},
	} {
		assert.Equal(t, c.want, percentile(c.samples, c.p), "p%d of %d samples", c.p, len(c.samples))
	}
}
