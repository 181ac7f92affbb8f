package lab

import (
	"crypto/sha256"
	"encoding/binary"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
)

// A streamShape is a stream a writer goroutine pushes through a pipe to
// the loop: total bytes in chunk-byte writes, a pause after every burst
// bytes (0: none, the writer goes as fast as the pipe takes it), and dups
// of the read end registered with the loop, each ready one read into a
// fresh chunk-byte buffer.
type streamShape struct {
	total int64
	chunk int
	burst int
	pause time.Duration
	dups  int
}

// pacedConfig is a stream paced by its producer, as data arriving from a
// network is: 16 KiB writes, a 100 µs pause after every 64 KiB. The loop
// keeps up easily and is idle most of the time (80–90 % here).
func pacedConfig(quick bool) streamShape {
	s := streamShape{total: 64 << 20, chunk: 16 << 10, burst: 64 << 10, pause: 100 * time.Microsecond, dups: 1}
	if quick {
		s.total = 8 << 20
	}
	return s
}

// chunkConfig is bench's ChunkLoop: a writer that never pauses and ten
// dups of the read end; the loop is seldom idle, since the writer is
// as fast as the reads.
func chunkConfig(quick bool) streamShape {
	s := streamShape{total: 256 << 20, chunk: 16 << 10, dups: 10}
	if quick {
		s.total = 32 << 20
	}
	return s
}

// runPaced is the paced stream; runChunk the ChunkLoop stream.
func runPaced(st gcstep.Stepper, o runOptions) (workResult, error) {
	return runStream(st, pacedConfig(o.quick), o)
}

func runChunk(st gcstep.Stepper, o runOptions) (workResult, error) {
	return runStream(st, chunkConfig(o.quick), o)
}

// runStream pushes the stream s through a pipe to the loop, each chunk
// read into a fresh buffer (one reused buffer for the floor variant). The
// writer stamps every chunk with its number, so the SHA-256 of what was
// written equals that of what was read only if every chunk arrived once
// and in order.
func runStream(st gcstep.Stepper, s streamShape, o runOptions) (workResult, error) {
	r, w, err := nonblockingPipe()
	if err != nil {
		return workResult{}, err
	}
	wf := os.NewFile(uintptr(w), "pipe") // non-blocking: Go's netpoller writes
	defer unix.Close(r)

	var wsum [sha256.Size]byte
	werr := make(chan error, 1)
	go func() {
		werr <- writeStream(wf, s, wsum[:0])
	}()

	return readStream(st, o, r, s.total, s.chunk, s.dups, werr, &wsum)
}

// writeStream writes the stream s to w from one reused buffer, pausing as
// s says, closes w, and appends the SHA-256 of what it wrote to sum.
func writeStream(w *os.File, s streamShape, sum []byte) error {
	h := sha256.New()
	buf := make([]byte, s.chunk)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	var err error
	sincePause := 0
	for n, i := int64(0), uint64(0); n < s.total && err == nil; i++ {
		m := int(min(int64(s.chunk), s.total-n))
		binary.LittleEndian.PutUint64(buf, i)
		if _, err = w.Write(buf[:m]); err != nil {
			break
		}
		h.Write(buf[:m])
		n += int64(m)
		if sincePause += m; s.burst > 0 && sincePause >= s.burst {
			sincePause = 0
			time.Sleep(s.pause)
		}
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	h.Sum(sum)
	return err
}
