package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// Request/response bursts, the workload where idle stepping used to lose
// (issue 11): clients send requests in bursts separated by silence, the
// server, a poller.Loop, allocates for every request and replies. With
// step=on the loop steps with gcstep.NewRuntime; step=keep is the same
// without emptying the gaps (WithReleaseDelay(0)), to show what returning
// memory to the OS costs the next burst.
//
// One op is one burst and the gap after it, so run it with a fixed count,
// e.g. -benchtime 4x. Also reported: faults/req, the process's minor page
// faults per request, which returning memory to the OS raises in the next
// burst. Configurations run one after another in one process
// are not alike: the later ones measured up to 1.4 times the CPU per
// request of the first even when they did the same thing. For numbers,
// run each configuration in its own process, interleaved (bench/README.md
// shows how). Reported per request: p50-ns and p99-ns round trips
// (nearest rank over every request of the run; the first burst, which
// warms up the heap, is left out), cpu-ns/req (the process's CPU time:
// server and clients), loop-syscalls/req (the loop's own system calls:
// waits, wakeups; the handler's reads and writes are the same in both
// modes and not counted), and rss-after-MiB, the process's RSS
// reqRSSDelay after each burst ended, median over the bursts.

const (
	reqSize     = 64
	reqGap      = 400 * time.Millisecond
	reqRSSDelay = 300 * time.Millisecond
)

// reqShape is one transport's workload.
type reqShape struct {
	name     string
	clients  int    // connections, each a closed-loop client
	perBurst int    // requests per client per burst
	alloc    int    // bytes the server allocates per request
	tcp      bool   // TCP loopback; otherwise one socketpair per client
	_        string // keep the literal keyed
}

var reqShapes = []reqShape{
	{name: "socketpair", clients: 1, perBurst: 300, alloc: 256 << 10},
	{name: "tcp", clients: 32, perBurst: 20, alloc: 128 << 10},
}

// reqSink keeps the last request's allocation reachable until the next:
// the compiler cannot prove it dead, and the garbage is what the
// benchmark is about.
var reqSink []byte

// reqServer is a poller.Loop answering fixed-size requests.
type reqServer struct {
	lock   *gvl.Lock
	loop   *poller.Loop
	rt     *gcstep.Runtime
	conns  []io.Closer // keeps the server ends open
	fds    []int
	alloc  int
	part   map[int]int // bytes of an incomplete request, per fd
	buf    []byte
	done   chan error
	cancel context.CancelFunc
}

func newReqServer(step string, alloc int) (*reqServer, error) {
	s := &reqServer{lock: gvl.New(), alloc: alloc, part: map[int]int{}, buf: make([]byte, 64*reqSize)}
	opts := []poller.Option{poller.WithGVL(s.lock)}
	switch step {
	case "on":
		s.rt = gcstep.NewRuntime()
	case "keep":
		s.rt = gcstep.NewRuntime(gcstep.WithReleaseDelay(0))
	}
	if s.rt != nil {
		opts = append(opts, poller.WithStepper(s.rt))
	}
	l, err := poller.NewLoop(opts...)
	if err != nil {
		return nil, err
	}
	s.loop = l
	return s, nil
}

// handle reads what is there and answers every whole request.
func (s *reqServer) handle(fd int, _ poller.Events) {
	n, err := unix.Read(fd, s.buf)
	if err != nil || n == 0 {
		if err != unix.EAGAIN && err != unix.EINTR {
			s.loop.Remove(fd)
		}
		return
	}
	got := s.part[fd] + n
	for ; got >= reqSize; got -= reqSize {
		b := make([]byte, s.alloc)
		b[len(b)-1] = 1
		reqSink = b
		reply := s.buf[:reqSize]
		for off := 0; off < len(reply); {
			m, err := unix.Write(fd, reply[off:])
			if err == unix.EAGAIN || err == unix.EINTR {
				continue // 64 bytes into an empty socket: never long
			}
			if err != nil {
				return
			}
			off += m
		}
	}
	s.part[fd] = got
}

func (s *reqServer) add(c io.Closer, fd int) error {
	s.conns = append(s.conns, c)
	s.fds = append(s.fds, fd)
	return s.loop.Add(fd, poller.Read, s.handle)
}

func (s *reqServer) start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.done = make(chan error, 1)
	go func() {
		s.lock.Acquire()
		defer s.lock.Release()
		err := s.loop.Run(ctx)
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		s.done <- err
	}()
}

func (s *reqServer) stop() error {
	s.cancel()
	err := <-s.done
	for _, fd := range s.fds {
		s.loop.Remove(fd)
	}
	for _, c := range s.conns {
		c.Close()
	}
	err = errors.Join(err, s.loop.Close())
	if s.rt != nil {
		s.rt.Close()
	}
	return err
}

// reqClients opens the clients' connections to a new server.
func reqClients(s *reqServer, shape reqShape) ([]net.Conn, error) {
	var clients []net.Conn
	if shape.tcp {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		for range shape.clients {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				return clients, err
			}
			clients = append(clients, c)
			sc, err := ln.Accept()
			if err != nil {
				return clients, err
			}
			fd, err := connFD(sc.(*net.TCPConn))
			if err != nil {
				return clients, err
			}
			if err := s.add(sc, fd); err != nil {
				return clients, err
			}
		}
		return clients, nil
	}
	for range shape.clients {
		p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			return clients, err
		}
		for _, fd := range p {
			unix.CloseOnExec(fd)
			if err := unix.SetNonblock(fd, true); err != nil {
				unix.Close(p[0])
				unix.Close(p[1])
				return clients, err
			}
		}
		cf := os.NewFile(uintptr(p[0]), "client")
		c, err := net.FileConn(cf)
		cf.Close()
		if err != nil {
			unix.Close(p[1])
			return clients, err
		}
		clients = append(clients, c)
		if err := s.add(fdCloser(p[1]), p[1]); err != nil {
			return clients, err
		}
	}
	return clients, nil
}

type fdCloser int

func (f fdCloser) Close() error { return unix.Close(int(f)) }

func connFD(c *net.TCPConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	err = rc.Control(func(s uintptr) { fd = int(s) })
	return fd, err
}

// burst runs one burst: every client sends perBurst requests, one at a
// time, and records each round trip in rtts[client].
func burst(clients []net.Conn, perBurst int, rtts [][]time.Duration) error {
	var wg sync.WaitGroup
	errs := make([]error, len(clients))
	for i, c := range clients {
		wg.Go(func() {
			req := make([]byte, reqSize)
			resp := make([]byte, reqSize)
			for range perBurst {
				start := time.Now()
				if _, err := c.Write(req); err != nil {
					errs[i] = err
					return
				}
				if _, err := io.ReadFull(c, resp); err != nil {
					errs[i] = err
					return
				}
				rtts[i] = append(rtts[i], time.Since(start))
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func rssBytes() (uint64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	var size, res uint64
	if _, err := fmt.Sscan(string(b), &size, &res); err != nil {
		return 0, err
	}
	return res * uint64(os.Getpagesize()), nil
}

// usage is the process's CPU time and minor page faults so far.
func usage() (time.Duration, int64) {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), int64(ru.Minflt)
}

func BenchmarkReqResp(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads RSS from /proc/self/statm")
	}
	for _, shape := range reqShapes {
		for _, step := range []string{"off", "on", "keep"} {
			name := fmt.Sprintf("transport=%s/step=%s", shape.name, step)
			b.Run(name, func(b *testing.B) { benchReqResp(b, shape, step) })
		}
	}
}

func benchReqResp(b *testing.B, shape reqShape, step string) {
	b.StopTimer()
	// Every configuration starts from the same heap: what the one before
	// it left, collected and returned to the OS.
	debug.FreeOSMemory()
	s, err := newReqServer(step, shape.alloc)
	if err != nil {
		b.Fatal(err)
	}
	clients, err := reqClients(s, shape)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	if err != nil {
		s.loop.Close()
		b.Fatal(err)
	}
	s.start()
	rtts := make([][]time.Duration, len(clients))
	// A warm-up burst, not counted: the heap grows to its working size.
	if err := burst(clients, shape.perBurst, rtts); err != nil {
		b.Fatal(err)
	}
	time.Sleep(reqGap)
	for i := range rtts {
		rtts[i] = rtts[i][:0]
	}
	var rss []float64
	var cpu time.Duration
	var faults int64
	sys0 := s.loop.Stats().Syscalls
	for range b.N {
		c0, f0 := usage()
		b.StartTimer()
		err := burst(clients, shape.perBurst, rtts)
		b.StopTimer()
		c1, f1 := usage()
		cpu += c1 - c0
		faults += f1 - f0
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(reqRSSDelay)
		r, err := rssBytes()
		if err != nil {
			b.Fatal(err)
		}
		rss = append(rss, float64(r)/(1<<20))
		time.Sleep(reqGap - reqRSSDelay)
	}
	sys := s.loop.Stats().Syscalls - sys0
	var st gcstep.Stats
	if s.rt != nil {
		st = s.rt.Stats()
	}
	if err := s.stop(); err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(rtts...)
	slices.Sort(rss)
	n := float64(len(all))
	reportPercentiles(b, all)
	b.ReportMetric(float64(cpu)/n, "cpu-ns/req")
	b.ReportMetric(float64(faults)/n, "faults/req")
	b.ReportMetric(float64(sys)/n, "loop-syscalls/req")
	b.ReportMetric(rss[len(rss)/2], "rss-after-MiB")
	if s.rt != nil {
		b.ReportMetric(float64(st.CyclesInline), "inline")
		b.ReportMetric(float64(st.Releases), "releases")
		b.ReportMetric(float64(st.StepsDelayedWork), "delayed-steps")
	}
}

// TestPercentileOfTen: the nearest rank that ReqResp's p50 and p99 are
// taken by, on ten samples.
func TestPercentileOfTen(t *testing.T) {
	s := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tt := range []struct {
		p    int
		want time.Duration
	}{{50, 5}, {99, 10}, {90, 9}, {10, 1}, {0, 1}, {100, 10}} {
		if got := percentile(s, tt.p); got != tt.want {
			t.Errorf("percentile(1..10, %v) = %v, want %v", tt.p, got, tt.want)
		}
	}
}
