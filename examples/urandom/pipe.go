package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// A pipe is the demo's pipe: the write end as an *os.File for the writer
// goroutine, and the read end's dups as raw fds, all non-blocking.
//
// The write end is an *os.File so that the writer parks in Go's netpoller
// while the pipe is full, as a Ruby thread releases the GVL. The read ends
// stay raw fds: the poller modes need reads that return EAGAIN instead of
// parking, and the goroutines mode wraps them in *os.File itself.
type pipe struct {
	w    *os.File
	dups []int
}

// newPipe makes a pipe and n dups of its read end, closing the original
// read end as the Ruby script leaves its rd unused. os.Pipe makes both ends
// non-blocking (and close-on-exec), and the dups share that mode with the
// original.
func newPipe(n int) (p *pipe, err error) {
	rd, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("making the pipe: %w", err)
	}
	defer rd.Close()
	p = &pipe{w: w}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	rc, err := rd.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("the pipe's read end: %w", err)
	}
	var dupErr error
	err = rc.Control(func(fd uintptr) {
		for range n {
			// F_DUPFD_CLOEXEC: a dup must not leak into a child process.
			d, err := unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
			if err != nil {
				dupErr = fmt.Errorf("dup %d of %d of the read end: %w", len(p.dups)+1, n, os.NewSyscallError("fcntl", err))
				return
			}
			p.dups = append(p.dups, d)
		}
	})
	if err == nil {
		err = dupErr
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// takeDups hands the dups over to a caller that will close them itself.
func (p *pipe) takeDups() []int {
	dups := p.dups
	p.dups = nil
	return dups
}

// closeReaders closes the dups that are still open. A writer still writing
// then gets EPIPE and stops.
func (p *pipe) closeReaders() {
	for _, fd := range p.dups {
		unix.Close(fd)
	}
	p.dups = nil
}

// close closes every end.
func (p *pipe) close() {
	p.closeReaders()
	p.w.Close()
}
