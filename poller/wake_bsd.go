//go:build darwin || freebsd

package poller

import (
	"errors"
	"os"
)

// open makes the wake pipe, both ends nonblocking.
func (w *waker) open(c *counters) error {
	r, wr, err := c.pipe()
	if err != nil {
		return os.NewSyscallError("pipe", err)
	}
	w.rfd, w.wfd = r, wr
	return nil
}

// signal writes one byte. EAGAIN (the pipe is full) means the loop is
// already due to wake: not an error.
func (w *waker) signal(c *counters) error {
	b := [1]byte{1}
	return ignoringEINTR(func() error {
		_, err := c.write(w.wfd, b[:])
		return err
	})
}

// consume reads the pipe empty (until EAGAIN).
func (w *waker) consume(c *counters) {
	var buf [64]byte
	for {
		var n int
		err := ignoringEINTR(func() (err error) {
			n, err = c.read(w.rfd, buf[:])
			return err
		})
		if err != nil || n < len(buf) {
			return
		}
	}
}

func (w *waker) closeFDs(c *counters) error {
	return errors.Join(
		os.NewSyscallError("close", c.close(w.rfd)),
		os.NewSyscallError("close", c.close(w.wfd)),
	)
}
