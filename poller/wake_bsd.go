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
	return ignoringEINTR(func() error {
		_, err := c.write(w.wfd, wakeOne[:])
		return err
	})
}

// wakeOne is the byte signal writes, never changed: shared by every Wake,
// so that none allocates (see waker.buf).
var wakeOne = [1]byte{1}

// consume reads the pipe empty (until EAGAIN).
func (w *waker) consume(c *counters) {
	for {
		var n int
		err := ignoringEINTR(func() (err error) {
			n, err = c.read(w.rfd, w.buf[:])
			return err
		})
		if err != nil || n < len(w.buf) {
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
