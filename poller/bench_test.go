package poller_test

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// reportSyscalls reports system calls per op: those the Loop counted
// (waits, wakes) plus extra, the ones the benchmark's handlers made.
func reportSyscalls(b *testing.B, before, after poller.Stats, extra uint64) {
	b.ReportMetric(float64(after.Syscalls-before.Syscalls+extra)/float64(b.N), "syscalls/op")
}

// BenchmarkPingPong bounces one byte between two pipes: one op is a round
// trip, two hops, each a wakeup, a read and a write. The Loop versions do
// it on one goroutine; "goroutines" is what a Go user writes today, two
// goroutines reading and writing *os.File, woken by Go's netpoller.
func BenchmarkPingPong(b *testing.B) {
	for _, be := range poller.Backends() {
		b.Run(be.String(), func(b *testing.B) { benchPingPongLoop(b, be) })
	}
	b.Run("goroutines", benchPingPongGoroutines)
}

func benchPingPongLoop(b *testing.B, be poller.Backend) {
	ping, pong := newPipe(b), newPipe(b)
	l, err := poller.NewLoop(poller.WithBackend(be))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var buf [1]byte
	var rounds int
	var calls uint64
	must := func(_ int, err error) {
		calls++
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Add(ping.r, poller.Read, func(fd int, _ poller.Events) {
		must(unix.Read(fd, buf[:]))
		must(unix.Write(pong.w, buf[:]))
	}); err != nil {
		b.Fatal(err)
	}
	if err := l.Add(pong.r, poller.Read, func(fd int, _ poller.Events) {
		must(unix.Read(fd, buf[:]))
		rounds++
		if rounds < b.N {
			must(unix.Write(ping.w, buf[:]))
		}
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	before := l.Stats()
	b.ResetTimer()
	must(unix.Write(ping.w, []byte{'x'}))
	for rounds < b.N {
		if _, err := l.RunOnce(5 * time.Second); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportSyscalls(b, before, l.Stats(), calls)
}

func benchPingPongGoroutines(b *testing.B) {
	pingR, pingW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	pongR, pongW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, f := range []*os.File{pingR, pingW, pongR, pongW} {
			f.Close()
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	wg.Go(func() { // the echo side
		var buf [1]byte
		for range b.N {
			if _, err := pingR.Read(buf[:]); err != nil {
				b.Error(err)
				return
			}
			if _, err := pongW.Write(buf[:]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	wg.Go(func() { // the serving side
		buf := [1]byte{'x'}
		for range b.N {
			if _, err := pingW.Write(buf[:]); err != nil {
				b.Error(err)
				return
			}
			if _, err := pongR.Read(buf[:]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	wg.Wait()
}

// BenchmarkWaitFD is the cost of a Mux.WaitFD that finds its fd ready: the
// idle algorithm's bookkeeping and one wait, by a goroutine alone
// (lock=off: ppoll or select on its thread) or sharing a lock (lock=on:
// released, the fd armed in the parker's epoll instance and the goroutine
// parked in the netpoller where the platform has one, the lock taken
// back). The ping-pongs of bench (Pipe, Select) time the same calls with a
// second goroutine making the fd ready.
func BenchmarkWaitFD(b *testing.B) {
	for _, be := range poller.Backends() {
		for _, locked := range []bool{false, true} {
			name := be.String() + "/lock=off"
			if locked {
				name = be.String() + "/lock=on"
			}
			b.Run(name, func(b *testing.B) {
				ready := newPipe(b)
				ready.write(ready.w, "x") // never read: stays ready
				opts := []poller.Option{poller.WithBackend(be)}
				if locked {
					lock := gvl.New()
					lock.Acquire()
					defer lock.Release()
					opts = append(opts, poller.WithGVL(lock))
				}
				m := poller.New(opts...)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if ev, err := m.WaitFD(ready.r, poller.Read, -1); err != nil || ev&poller.Read == 0 {
						b.Fatalf("WaitFD: %v, %v; want Read", ev, err)
					}
				}
				b.StopTimer()
				reportSyscalls(b, poller.Stats{}, m.Stats(), 0)
			})
		}
	}
}

// BenchmarkIdleStep is the cost of one idle moment, apart from the work
// the step does: a zero-timeout poll and a Step that does nothing, with the
// lock held and its "is anybody waiting?" check on the way.
func BenchmarkIdleStep(b *testing.B) {
	for _, be := range poller.Backends() {
		b.Run(be.String(), func(b *testing.B) {
			idle := newPipe(b)
			lock := gvl.New()
			lock.Acquire()
			defer lock.Release()
			steps := 0
			var l *poller.Loop
			st := gcstep.Func(func(time.Duration) bool {
				steps++
				if steps >= b.N {
					l.Wake() // end the RunOnce below
					return false
				}
				return true
			})
			var err error
			l, err = poller.NewLoop(poller.WithBackend(be), poller.WithGVL(lock), poller.WithStepper(st))
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			if err := l.Add(idle.r, poller.Read, func(int, poller.Events) {}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			before := l.Stats()
			b.ResetTimer()
			if _, err := l.RunOnce(time.Hour); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			after := l.Stats()
			if steps != b.N {
				b.Fatalf("got %d steps, want %d", steps, b.N)
			}
			reportSyscalls(b, before, after, 0)
		})
	}
}

// BenchmarkManyFDs waits for one ready fd among n registered: epoll's cost
// should not grow with n, poll's and select's will.
func BenchmarkManyFDs(b *testing.B) {
	for _, be := range poller.Backends() {
		b.Run(be.String(), func(b *testing.B) {
			for _, n := range []int{10, 100, 1000} {
				b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchManyFDs(b, be, n) })
			}
		})
	}
}

func benchManyFDs(b *testing.B, be poller.Backend, n int) {
	// The write ends live above FD_SETSIZE, so that the n read ends fit
	// below it for select.
	reads := make([]int, 0, n)
	var writes []int
	defer func() {
		for _, fd := range append(reads, writes...) {
			unix.Close(fd)
		}
	}()
	for range n {
		var p [2]int
		if err := unix.Pipe(p[:]); err != nil {
			b.Skipf("cannot open %d pipes: %v", n, err)
		}
		reads = append(reads, p[0])
		w, err := unix.FcntlInt(uintptr(p[1]), unix.F_DUPFD_CLOEXEC, unix.FD_SETSIZE)
		unix.Close(p[1])
		if err != nil {
			b.Skipf("cannot move a pipe's write end above FD_SETSIZE: %v", err)
		}
		writes = append(writes, w)
	}
	if be == poller.BackendSelect && reads[n-1] >= unix.FD_SETSIZE {
		b.Skipf("fd %d does not fit select's FD_SETSIZE %d", reads[n-1], unix.FD_SETSIZE)
	}
	l, err := poller.NewLoop(poller.WithBackend(be))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	calls := 0
	for _, fd := range reads {
		if err := l.Add(fd, poller.Read, func(int, poller.Events) { calls++ }); err != nil {
			b.Fatal(err)
		}
	}
	// The last one registered is ready, and stays ready: nobody reads it.
	if _, err := unix.Write(writes[n-1], []byte{'x'}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	before := l.Stats()
	b.ResetTimer()
	for range b.N {
		if _, err := l.RunOnce(5 * time.Second); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if calls != b.N {
		b.Fatalf("got %d handler calls, want %d", calls, b.N)
	}
	reportSyscalls(b, before, l.Stats(), 0)
}
