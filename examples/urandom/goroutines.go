package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// readGoroutines is the goroutines mode: what a Go programmer writes without
// idlemux, one goroutine per dup in a blocking os.File read, parked in Go's
// netpoller while the pipe is empty.
//
// A reader holds mu across its read and the digest update, so bytes are
// digested in the order they left the pipe: without it, a reader could read
// chunk A, lose the CPU, and digest A after another reader digested the
// later chunk B. The readers therefore take turns; with ten dups of one
// pipe, only one read at a time can find data anyway.
func readGoroutines(p *pipe, j job, d *digest) (loopStats, error) {
	chunk := j.chunk
	fds := p.takeDups()
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		// The fds are non-blocking, so NewFile puts them in the netpoller.
		files[i] = os.NewFile(uintptr(fd), "pipe|r")
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs = make([]error, len(files))
	)
	for i, f := range files {
		wg.Go(func() { errs[i] = readFile(f, &mu, chunk, d) })
	}
	wg.Wait()
	for _, f := range files {
		f.Close()
	}
	return loopStats{}, errors.Join(errs...)
}

// readFile reads f until end of file, each read into a fresh buffer.
func readFile(f *os.File, mu *sync.Mutex, chunk int, d *digest) error {
	for {
		mu.Lock()
		buf := make([]byte, chunk)
		n, err := f.Read(buf)
		d.add(buf[:n])
		mu.Unlock()
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return fmt.Errorf("reading %s: %w", f.Name(), err)
		}
	}
}
