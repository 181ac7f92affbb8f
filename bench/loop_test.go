package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// Seed 004's loop as a benchmark: a writer goroutine streams chunks into a
// pipe, ten dups of its read end are multiplexed by a poller.Loop, and each
// ready one reads into a freshly allocated 16 KiB buffer. One op is one
// chunk. With step=on the loop's idle moments go to gcstep.NewRuntime; the
// footprint lab (bench/footprint) measures what that saves in memory, this
// measures what it costs in time.

const (
	chunkSize = 16 << 10
	chunkDups = 10
)

// chunkSource is one chunk's worth of bytes for the writer to repeat.
var chunkSource = func() []byte {
	b := make([]byte, chunkSize)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}()

// chunkSink holds the last chunk read, so that the compiler cannot prove a
// buffer dead and put it on the stack: the benchmark is about garbage.
var chunkSink []byte

// chunkResult is what a chunk loop did.
type chunkResult struct {
	bytes   int64
	steps   uint64
	cycles  uint64        // GC cycles during the run, the runtime's and the stepper's
	blocked time.Duration // time the loop spent blocked in the kernel: its idle time
}

func gcCyclesNow() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// writeChunks writes n chunks to w and closes it.
func writeChunks(w *os.File, n int) error {
	for range n {
		if _, err := w.Write(chunkSource); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

// chunkLoopGVL reads n chunks through a poller.Loop over ten dups of a
// pipe's read end, stepping with st if it is not nil.
func chunkLoopGVL(n int, st gcstep.Stepper) (chunkResult, error) {
	var res chunkResult
	r, w, err := os.Pipe()
	if err != nil {
		return res, err
	}
	defer r.Close()
	rc, err := r.SyscallConn()
	if err != nil {
		return res, err
	}
	// Dup the read end without File.Fd, which would switch it (and every
	// dup) to blocking mode.
	var fds []int
	var dupErr error
	rc.Control(func(fd uintptr) {
		for range chunkDups {
			d, err := unix.Dup(int(fd))
			if err != nil {
				dupErr = os.NewSyscallError("dup", err)
				return
			}
			unix.CloseOnExec(d)
			fds = append(fds, d)
		}
	})
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	if dupErr != nil {
		w.Close()
		return res, dupErr
	}

	l := gvl.New()
	opts := []poller.Option{poller.WithGVL(l)}
	if st != nil {
		opts = append(opts, poller.WithStepper(st))
	}
	loop, err := poller.NewLoop(opts...)
	if err != nil {
		w.Close()
		return res, err
	}
	defer loop.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		spare   []byte
		readErr error
	)
	for _, fd := range fds {
		err := loop.Add(fd, poller.Read, func(fd int, _ poller.Events) {
			buf := spare
			if buf == nil {
				buf = make([]byte, chunkSize)
			}
			spare = nil
			m, err := unix.Read(fd, buf)
			switch {
			case err == unix.EAGAIN || err == unix.EINTR:
				spare = buf // another dup took the data
			case err != nil:
				readErr = os.NewSyscallError("read", err)
				cancel()
			case m == 0:
				cancel()
			default:
				chunkSink = buf[:m] // kept, as a caller keeps what read returned
				res.bytes += int64(m)
			}
		})
		if err != nil {
			w.Close()
			return res, err
		}
	}
	werr := make(chan error, 1)
	c0 := gcCyclesNow()
	go func() { werr <- writeChunks(w, n) }()
	l.Acquire()
	runErr := loop.Run(ctx)
	l.Release()
	res.cycles = gcCyclesNow() - c0
	ls := loop.Stats()
	res.steps, res.blocked = ls.Steps, ls.BlockedTime
	if errors.Is(runErr, context.Canceled) {
		runErr = nil
	}
	return res, errors.Join(runErr, readErr, <-werr)
}

// chunkLoopOS is the same stream read by one goroutine with blocking
// os.File reads into fresh buffers: Go's netpoller does the waiting.
func chunkLoopOS(n int) (chunkResult, error) {
	var res chunkResult
	r, w, err := os.Pipe()
	if err != nil {
		return res, err
	}
	defer r.Close()
	werr := make(chan error, 1)
	c0 := gcCyclesNow()
	go func() { werr <- writeChunks(w, n) }()
	for {
		buf := make([]byte, chunkSize)
		m, err := r.Read(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, err
		}
		chunkSink = buf[:m]
		res.bytes += int64(m)
	}
	res.cycles = gcCyclesNow() - c0
	return res, <-werr
}

func BenchmarkChunkLoop(b *testing.B) {
	report := func(b *testing.B, res chunkResult, err error) {
		require.NoError(b, err)
		require.Equal(b, int64(b.N)*chunkSize, res.bytes, "bytes read")
		b.SetBytes(chunkSize)
		b.ReportMetric(float64(res.cycles)/float64(b.N), "gc-cycles/op")
		b.ReportMetric(float64(res.steps)/float64(b.N), "steps/op")
		b.ReportMetric(float64(res.blocked.Nanoseconds())/float64(b.N), "idle-ns/op")
	}
	for _, step := range []string{"off", "on"} {
		b.Run(fmt.Sprintf("impl=gvl/step=%s", step), func(b *testing.B) {
			b.ReportAllocs()
			var st gcstep.Stepper
			if step == "on" {
				rt := gcstep.NewRuntime()
				defer rt.Close()
				st = rt
			}
			res, err := chunkLoopGVL(b.N, st)
			report(b, res, err)
		})
	}
	b.Run("impl=os", func(b *testing.B) {
		b.ReportAllocs()
		res, err := chunkLoopOS(b.N)
		report(b, res, err)
	})
}

func TestChunkLoop(t *testing.T) {
	const n = 200
	for _, step := range []bool{false, true} {
		res, err := runWithTimeout(t, func() (chunkResult, error) {
			var st gcstep.Stepper
			if step {
				rt := gcstep.NewRuntime()
				defer rt.Close()
				st = rt
			}
			return chunkLoopGVL(n, st)
		})
		assert.NoError(t, err, "step=%v", step)
		assert.Equal(t, int64(n*chunkSize), res.bytes, "step=%v: bytes read", step)
		if !step {
			assert.Zero(t, res.steps, "step=off: steps")
		}
	}
	res, err := runWithTimeout(t, func() (chunkResult, error) { return chunkLoopOS(n) })
	assert.NoError(t, err, "os")
	assert.Equal(t, int64(n*chunkSize), res.bytes, "os: bytes read")
}
