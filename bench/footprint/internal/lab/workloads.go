package lab

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// A Workload is one experiment the lab runs under every policy.
type Workload struct {
	Name string
	// About describes it in a line, at the given scale.
	About func(quick bool) string
	// MemLimit is the GOMEMLIMIT used with GOGC=off: a little above what
	// the workload keeps live.
	MemLimit string
	// FixedDuration is set for a workload that runs for a set time
	// whatever the policy, so that its cost shows in CPU time, not wall.
	FixedDuration bool
	// RequestReply is set for a workload that serves requests in bursts:
	// its table shows CPU time and system calls per request and RSS
	// after each burst.
	RequestReply bool
	// Stream is set for a workload whose producer does not wait for the
	// loop: the frontier runs the stepper there at GOGC=off too, where
	// a loop idle most of the time must keep its heap bounded.
	Stream bool
	// Floor is set for a workload that has a floor variant: the same
	// work making no garbage (one reused buffer, answers computed
	// without allocating), the footprint no collector can beat.
	Floor bool
	run   func(st gcstep.Stepper, o runOptions) (workResult, error)
}

// runOptions are how a workload is run besides its stepper.
type runOptions struct {
	quick bool // the reduced size
	floor bool // the floor variant: no garbage
	// mark tells the sampler when an idle gap starts (true) and ends.
	mark func(gap bool)
}

// workResult is what a workload reports besides what the sampler sees.
type workResult struct {
	Bytes int64  // bytes moved or requested
	OK    bool   // nothing lost, every answer checked
	Check string // what was checked, or what failed
	// Latencies are request latencies (bursty) or timer lateness
	// (bigheap); none for urandom.
	Latencies   []time.Duration
	LatencyKind string
	Loop        poller.Stats
	// Requests counts requests served, HandlerSyscalls the system calls
	// the handlers made (the loop's own are in Loop.Syscalls), and
	// AfterBurst the RSS read at AfterBurstOffsets after each burst
	// ended (0: not read); request/response workloads only.
	Requests        int64
	HandlerSyscalls uint64
	AfterBurst      [][]uint64
}

// Workloads are the lab's experiments, in the order it runs them.
var Workloads = []Workload{
	{
		Name: "urandom",
		About: func(quick bool) string {
			return fmt.Sprintf("seed 004's demo: %d MB from /dev/urandom through a pipe, %d dups of its read end, each ready one read into a fresh %d KiB buffer",
				urandomLen(quick)/1_000_000, urandomReaders, urandomChunk/1024)
		},
		MemLimit: "8MiB",
		Stream:   true,
		Floor:    true,
		run:      runURandom,
	},
	{
		Name: "bursty",
		About: func(quick bool) string {
			c := burstyConfig(quick)
			return fmt.Sprintf("request/response over %d socketpairs: %d bursts of %d requests per connection, each allocating %d KiB, separated by %v idle gaps",
				c.conns, c.bursts, c.perBurst, c.garbage/1024, c.gap)
		},
		MemLimit: "32MiB",
		Floor:    true,
		run:      runBursty,
	},
	{
		Name: "tcp",
		About: func(quick bool) string {
			c := tcpConfig(quick)
			return fmt.Sprintf("request/response over TCP loopback, a client process with %d connections: %d bursts of %d requests per connection, each allocating %d KiB on the server, each burst followed by a %v idle gap",
				c.conns, c.bursts, c.perBurst, c.garbage/1024, c.gap)
		},
		MemLimit:     "32MiB",
		RequestReply: true,
		Floor:        true,
		run:          runTCP,
	},
	{
		Name: "paced",
		About: func(quick bool) string {
			c := pacedConfig(quick)
			return fmt.Sprintf("a stream paced by its producer: %d MiB written into a pipe in %d KiB chunks, a %v pause after every %d KiB, each chunk read by the loop into a fresh buffer",
				c.total>>20, c.chunk>>10, c.pause, c.burst>>10)
		},
		MemLimit: "8MiB",
		Stream:   true,
		Floor:    true,
		run:      runPaced,
	},
	{
		Name: "chunk",
		About: func(quick bool) string {
			c := chunkConfig(quick)
			return fmt.Sprintf("bench's ChunkLoop, a loop seldom idle: %d MiB written into a pipe as fast as it takes them, %d dups of its read end, each ready one read into a fresh %d KiB buffer",
				c.total>>20, c.dups, c.chunk>>10)
		},
		MemLimit: "8MiB",
		Stream:   true,
		Floor:    true,
		run:      runChunk,
	},
	{
		Name: "bigheap",
		About: func(quick bool) string {
			c := bigheapConfig(quick)
			return fmt.Sprintf("%d MiB live heap of 1 KiB items, %d items replaced every %v by a loop timer, for %v",
				c.live>>20, c.perTick, c.tick, c.duration)
		},
		MemLimit:      "192MiB",
		FixedDuration: true,
		run:           runBigheap,
	},
}

// FindWorkload returns the workload called name.
func FindWorkload(name string) (Workload, bool) {
	for _, w := range Workloads {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

// newLoop returns an event loop holding a fresh gvl.Lock, stepping with st
// (nil: no stepping). The caller holds the lock until release is called.
func newLoop(st gcstep.Stepper) (loop *poller.Loop, release func(), err error) {
	l := gvl.New()
	opts := []poller.Option{poller.WithGVL(l)}
	if st != nil {
		opts = append(opts, poller.WithStepper(st))
	}
	loop, err = poller.NewLoop(opts...)
	if err != nil {
		return nil, nil, err
	}
	l.Acquire()
	return loop, func() {
		loop.Close()
		l.Release()
	}, nil
}

// runLoop runs loop until ctx is cancelled, which is how the workloads end.
func runLoop(ctx context.Context, loop *poller.Loop) error {
	if err := loop.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// nonblockingPipe returns a pipe whose ends are both non-blocking.
func nonblockingPipe() (r, w int, err error) {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		return -1, -1, os.NewSyscallError("pipe", err)
	}
	for _, fd := range p {
		unix.CloseOnExec(fd)
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(p[0])
			unix.Close(p[1])
			return -1, -1, os.NewSyscallError("fcntl", err)
		}
	}
	return p[0], p[1], nil
}

// ---- urandom ----

const (
	urandomReaders = 10
	urandomChunk   = 16384
)

func urandomLen(quick bool) int64 {
	if quick {
		return 20_000_000
	}
	return 100_000_000
}

// runURandom is the patch's demo, written against the public API: a writer
// goroutine copies bytes from /dev/urandom into a pipe, ten dups of the
// read end are registered with the loop, and each ready one reads into a
// freshly allocated 16 KiB buffer, the garbage Ruby's read(16384) makes.
// A SHA-256 of everything written must equal one of everything read. Its
// floor variant reads every chunk into the same buffer.
func runURandom(st gcstep.Stepper, o runOptions) (workResult, error) {
	total := urandomLen(o.quick)
	r, w, err := nonblockingPipe()
	if err != nil {
		return workResult{}, err
	}
	wf := os.NewFile(uintptr(w), "pipe") // non-blocking: Go's netpoller writes
	defer unix.Close(r)
	src, err := os.Open("/dev/urandom")
	if err != nil {
		wf.Close()
		return workResult{}, err
	}
	defer src.Close()

	var wsum [sha256.Size]byte
	werr := make(chan error, 1)
	go func() {
		h := sha256.New()
		_, err := io.Copy(io.MultiWriter(wf, h), io.LimitReader(src, total))
		if cerr := wf.Close(); err == nil {
			err = cerr
		}
		h.Sum(wsum[:0])
		werr <- err
	}()

	return readStream(st, o, r, total, urandomChunk, urandomReaders, werr, &wsum)
}

// readStream runs the loop over dups of the pipe's read end r until end of
// file, each ready dup read into a fresh chunk-byte buffer (one reused
// buffer for the floor variant), then waits for the writer's error on werr
// and checks the total bytes read and their SHA-256 against wsum, which
// the writer fills before it reports.
func readStream(st gcstep.Stepper, o runOptions, r int, total int64, chunk, dups int, werr <-chan error, wsum *[sha256.Size]byte) (workResult, error) {
	loop, release, err := newLoop(st)
	if err != nil {
		return workResult{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		read    int64
		rh      = sha256.New()
		readErr error
		fds     []int
		// last keeps the latest chunk, as a Ruby caller holds the
		// String read returned: without it the compiler proves the
		// buffer does not escape and puts it on the stack, and the
		// demo makes no garbage at all.
		last  []byte
		spare []byte
	)
	for range dups {
		fd, err := unix.Dup(r)
		if err != nil {
			release()
			return workResult{}, os.NewSyscallError("dup", err)
		}
		fds = append(fds, fd)
		if err := loop.Add(fd, poller.Read, func(fd int, _ poller.Events) {
			buf := spare
			if buf == nil {
				buf = make([]byte, chunk)
			}
			spare = nil
			n, err := unix.Read(fd, buf)
			switch {
			case err == unix.EAGAIN || err == unix.EINTR:
				// Another dup took the data: keep the buffer for
				// the next read, so that there is one chunk of
				// garbage per read that returns data, as with
				// Ruby's read(16384).
				spare = buf
				return
			case err != nil:
				readErr = os.NewSyscallError("read", err)
				cancel()
			case n == 0:
				cancel() // end of file
			default:
				last = buf[:n]
				rh.Write(last)
				read += int64(n)
				if o.floor {
					spare = buf
				}
			}
		}); err != nil {
			release()
			return workResult{}, err
		}
	}
	runErr := runLoop(ctx, loop)
	stats := loop.Stats()
	release()
	for _, fd := range fds {
		unix.Close(fd)
	}
	if err := <-werr; err != nil {
		return workResult{}, fmt.Errorf("writer: %w", err)
	}
	if err := errors.Join(runErr, readErr); err != nil {
		return workResult{}, err
	}
	res := workResult{Bytes: read, Loop: stats}
	rsum := rh.Sum(nil)
	res.OK = read == total && string(rsum) == string(wsum[:])
	res.Check = fmt.Sprintf("%d of %d bytes, sha256 %x written, %x read", read, total, wsum[:4], rsum[:4])
	return res, nil
}

// ---- bursty ----

// burstLoad is the shape of a request/response workload (bursty, tcp):
// connections, bursts of requests per connection, what each request makes
// the server allocate, and the idle gap after each burst.
type burstLoad struct {
	conns, bursts, perBurst int
	garbage                 int // bytes each request allocates on the server
	gap                     time.Duration
}

func burstyConfig(quick bool) burstLoad {
	if quick {
		return burstLoad{conns: 4, bursts: 4, perBurst: 25, garbage: 256 << 10, gap: 150 * time.Millisecond}
	}
	return burstLoad{conns: 8, bursts: 10, perBurst: 60, garbage: 256 << 10, gap: 400 * time.Millisecond}
}

// A request is 16 bytes: an id and the number of bytes the server must
// allocate to answer (with a seed); a response is the id and a sum over
// what was allocated, which the client checks.
const msgSize = 16

// node is the server's garbage: a linked list of small objects, the way a
// parsed request is a graph of small allocations.
type node struct {
	next *node
	v    [6]uint64
}

// answer serves the request at the start of req (at least msgSize bytes):
// it runs handle and returns the response and the size the request asked
// for. Both request/response workloads answer through it.
func answer(req []byte) (out [msgSize]byte, size uint32) {
	id := binary.LittleEndian.Uint64(req)
	size = binary.LittleEndian.Uint32(req[8:])
	seed := binary.LittleEndian.Uint32(req[12:])
	binary.LittleEndian.PutUint64(out[:], id)
	binary.LittleEndian.PutUint64(out[8:], handle(size, seed))
	return out, size
}

// answerer returns answer, or for a floor variant answerFloor.
func answerer(floor bool) func(req []byte) ([msgSize]byte, uint32) {
	if floor {
		return answerFloor
	}
	return answer
}

// answerFloor is answer without the garbage: the same response, computed
// without allocating.
func answerFloor(req []byte) (out [msgSize]byte, size uint32) {
	id := binary.LittleEndian.Uint64(req)
	size = binary.LittleEndian.Uint32(req[8:])
	seed := binary.LittleEndian.Uint32(req[12:])
	binary.LittleEndian.PutUint64(out[:], id)
	binary.LittleEndian.PutUint64(out[8:], expectedSum(size, seed))
	return out, size
}

// handle allocates about size bytes of linked nodes derived from seed and
// returns their sum.
func handle(size, seed uint32) uint64 {
	var head *node
	for i := range size / 64 {
		head = &node{next: head, v: [6]uint64{uint64(seed) ^ uint64(i)}}
	}
	var sum uint64
	for n := head; n != nil; n = n.next {
		sum += n.v[0]
	}
	return sum
}

// expectedSum is what handle returns, computed without allocating.
func expectedSum(size, seed uint32) uint64 {
	var sum uint64
	for i := range size / 64 {
		sum += uint64(seed) ^ uint64(i)
	}
	return sum
}

// runBursty serves requests over socketpairs from the loop; client
// goroutines send them in bursts separated by idle gaps (the situation
// out-of-band GC was invented for) and time each one. o.mark tells the
// sampler when gaps start and end. Its floor variant answers without
// allocating.
func runBursty(st gcstep.Stepper, o runOptions) (workResult, error) {
	c := burstyConfig(o.quick)
	mark, ans := o.mark, answerer(o.floor)
	loop, release, err := newLoop(st)
	if err != nil {
		return workResult{}, err
	}
	var (
		clients   []*os.File
		serverFDs []int
		serveErr  error
		served    int64
	)
	cleanup := func() {
		for _, f := range clients {
			f.Close()
		}
		for _, fd := range serverFDs {
			unix.Close(fd)
		}
	}
	defer cleanup()
	for range c.conns {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			release()
			return workResult{}, os.NewSyscallError("socketpair", err)
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			unix.SetNonblock(fd, true)
		}
		serverFDs = append(serverFDs, fds[0])
		clients = append(clients, os.NewFile(uintptr(fds[1]), "client"))
		var pending []byte
		in := make([]byte, 4096)
		if err := loop.Add(fds[0], poller.Read, func(fd int, _ poller.Events) {
			n, err := unix.Read(fd, in)
			if err == unix.EAGAIN || err == unix.EINTR {
				return
			}
			if err != nil || n == 0 {
				if err != nil {
					serveErr = os.NewSyscallError("read", err)
				}
				loop.Remove(fd)
				return
			}
			pending = append(pending, in[:n]...)
			for len(pending) >= msgSize {
				out, size := ans(pending)
				pending = pending[msgSize:]
				// One outstanding request per connection: the
				// response always fits in the socket buffer.
				if _, err := unix.Write(fd, out[:]); err != nil {
					serveErr = os.NewSyscallError("write", err)
				}
				served += int64(size)
			}
			if len(pending) == 0 {
				pending = pending[:0:0]
			}
		}); err != nil {
			release()
			return workResult{}, err
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lat := make([][]time.Duration, c.conns)
	errs := make([]error, c.conns)
	start := make([]chan struct{}, c.bursts)
	for i := range start {
		start[i] = make(chan struct{})
	}
	var burstWG sync.WaitGroup
	var clientsWG sync.WaitGroup
	for i, f := range clients {
		clientsWG.Add(1)
		go func() {
			defer clientsWG.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			var req, resp [msgSize]byte
			id := uint64(0)
			for b := range c.bursts {
				<-start[b]
				for range c.perBurst {
					if errs[i] != nil {
						break
					}
					id++
					seed := rng.Uint32()
					binary.LittleEndian.PutUint64(req[:], id)
					binary.LittleEndian.PutUint32(req[8:], uint32(c.garbage))
					binary.LittleEndian.PutUint32(req[12:], seed)
					t0 := time.Now()
					if _, err := f.Write(req[:]); err != nil {
						errs[i] = err
						break
					}
					if _, err := io.ReadFull(f, resp[:]); err != nil {
						errs[i] = err
						break
					}
					lat[i] = append(lat[i], time.Since(t0))
					if binary.LittleEndian.Uint64(resp[:]) != id ||
						binary.LittleEndian.Uint64(resp[8:]) != expectedSum(uint32(c.garbage), seed) {
						errs[i] = fmt.Errorf("connection %d: wrong response to request %d", i, id)
					}
				}
				burstWG.Done()
			}
		}()
	}
	// The driver: start a burst, wait for every client to finish it,
	// then leave the loop idle for a gap.
	go func() {
		defer cancel()
		for b := range c.bursts {
			burstWG.Add(c.conns)
			mark(false)
			close(start[b])
			burstWG.Wait()
			mark(true)
			time.Sleep(c.gap)
		}
		mark(false)
	}()
	runErr := runLoop(ctx, loop)
	stats := loop.Stats()
	release()
	// Should the loop have stopped early, clients still waiting for a
	// response see end of file instead of hanging.
	for _, fd := range serverFDs {
		unix.Close(fd)
	}
	serverFDs = nil
	clientsWG.Wait()

	res := workResult{Bytes: served, Loop: stats, LatencyKind: "request"}
	for _, l := range lat {
		res.Latencies = append(res.Latencies, l...)
	}
	want := c.conns * c.bursts * c.perBurst
	if err := errors.Join(runErr, serveErr, errors.Join(errs...)); err != nil {
		res.Check = err.Error()
		return res, nil
	}
	res.OK = len(res.Latencies) == want
	res.Check = fmt.Sprintf("%d of %d requests answered and checked", len(res.Latencies), want)
	return res, nil
}

// ---- bigheap ----

type bigheap struct {
	live     int // bytes of payload kept live
	perTick  int // items replaced per tick
	tick     time.Duration
	duration time.Duration
}

func bigheapConfig(quick bool) bigheap {
	// The tick is a few step budgets long: the poller steps only while
	// at least one budget is left before the next timer.
	if quick {
		return bigheap{live: 16 << 20, perTick: 64, tick: 4 * time.Millisecond, duration: 500 * time.Millisecond}
	}
	return bigheap{live: 64 << 20, perTick: 64, tick: 4 * time.Millisecond, duration: 5 * time.Second}
}

// item is one entry of the live set: a 1 KiB payload and a few small
// objects of its own, so the collector has pointers to follow. Nothing
// outside an item points into it, so an item replaced in the set is garbage
// at once and the live heap stays the same size.
type item struct {
	id      int
	payload []byte
	parts   [4]*part
}

type part struct{ a, b uint64 }

func newItem(id int) *item {
	it := &item{id: id, payload: make([]byte, 1024)}
	it.payload[0] = byte(id)
	for j := range it.parts {
		it.parts[j] = &part{a: uint64(id), b: uint64(j)}
	}
	return it
}

// runBigheap keeps a large live heap and replaces a few items at every
// tick of a loop timer: steady churn with short idle moments between ticks,
// where an idle collector that collects whenever it can would spend its
// life marking the same live heap. It reports how late each tick fired.
func runBigheap(st gcstep.Stepper, o runOptions) (workResult, error) {
	c := bigheapConfig(o.quick)
	n := c.live / 1024
	items := make([]*item, n)
	for i := range items {
		items[i] = newItem(i)
	}
	loop, release, err := newLoop(st)
	if err != nil {
		return workResult{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rng := rand.New(rand.NewPCG(7, 7))
	var (
		lateness []time.Duration
		replaced int64
		tick     func()
	)
	start := time.Now()
	next := start.Add(c.tick)
	tick = func() {
		now := time.Now()
		lateness = append(lateness, now.Sub(next))
		for range c.perTick {
			i := rng.IntN(n)
			items[i] = newItem(i)
			replaced++
		}
		if now.Sub(start) >= c.duration {
			cancel()
			return
		}
		next = next.Add(c.tick)
		if d := time.Until(next); d > 0 {
			loop.AfterFunc(d, tick)
		} else {
			// Behind schedule: catch up at once rather than
			// piling ticks up.
			next = time.Now()
			loop.AfterFunc(0, tick)
		}
	}
	loop.AfterFunc(c.tick, tick)
	runErr := runLoop(ctx, loop)
	stats := loop.Stats()
	release()
	if runErr != nil {
		return workResult{}, runErr
	}
	bad := 0
	for i, it := range items {
		if it.id != i || it.payload[0] != byte(i) || it.parts[3].a != uint64(i) {
			bad++
		}
	}
	return workResult{
		Bytes:       replaced * 1024,
		OK:          bad == 0 && len(lateness) > 0,
		Check:       fmt.Sprintf("%d ticks, %d items replaced, %d of %d items wrong", len(lateness), replaced, bad, n),
		Latencies:   lateness,
		LatencyKind: "tick lateness",
		Loop:        stats,
	}, nil
}
