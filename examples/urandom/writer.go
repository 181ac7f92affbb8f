package main

import (
	"fmt"
	"io"
	"os"
)

// urandomPath is the source the Ruby script copies from.
const urandomPath = "/dev/urandom"

// writeBufSize is the size of the writer's one reused buffer: 16 KiB, what
// Ruby's IO.copy_stream uses when it cannot splice. The writer makes no
// garbage, so the only garbage in a run is the readers'.
const writeBufSize = 16 << 10

// A writeResult is what the writer wrote, or why it stopped.
type writeResult struct {
	sum streamSum
	err error
}

// startWriter copies n bytes from /dev/urandom into w on a new goroutine,
// digesting them, and closes w when done or failed, so that the readers see
// end of file either way. The result arrives on the returned channel.
func startWriter(w *os.File, n int64) <-chan writeResult {
	done := make(chan writeResult, 1)
	go func() {
		d := newDigest()
		err := copyRandom(w, n, d)
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing the pipe: %w", cerr)
		}
		done <- writeResult{sum: d.sum(), err: err}
	}()
	return done
}

// copyRandom writes n bytes of /dev/urandom to w and adds them to d.
func copyRandom(w io.Writer, n int64, d *digest) error {
	src, err := os.Open(urandomPath)
	if err != nil {
		return fmt.Errorf("writer: %w", err)
	}
	defer src.Close()
	buf := make([]byte, writeBufSize)
	for n > 0 {
		m, err := io.ReadFull(src, buf[:min(n, int64(len(buf)))])
		if err != nil {
			return fmt.Errorf("writer: reading %s: %w", urandomPath, err)
		}
		if _, err := w.Write(buf[:m]); err != nil {
			return fmt.Errorf("writer: writing the pipe: %w", err)
		}
		d.add(buf[:m])
		n -= int64(m)
	}
	return nil
}
