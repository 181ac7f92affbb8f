package poller

import (
	"encoding/binary"
	"os"
)

// open makes the wake eventfd: one fd for both ends, and an 8-byte counter
// instead of a pipe buffer.
func (w *waker) open(c *counters) error {
	fd, err := c.eventfd()
	if err != nil {
		return os.NewSyscallError("eventfd", err)
	}
	w.rfd, w.wfd = fd, fd
	return nil
}

// signal adds one to the eventfd counter. EAGAIN (the counter is full)
// means the loop is already due to wake: not an error.
func (w *waker) signal(c *counters) error {
	return ignoringEINTR(func() error {
		_, err := c.write(w.wfd, wakeOne[:])
		return err
	})
}

// wakeOne is the eventfd increment signal writes, never changed: shared
// by every Wake, so that none allocates (see waker.buf).
var wakeOne = func() (one [8]byte) {
	binary.NativeEndian.PutUint64(one[:], 1)
	return one
}()

// consume reads the counter back to zero. EAGAIN (already zero: a spurious
// report) is fine.
func (w *waker) consume(c *counters) {
	ignoringEINTR(func() error {
		_, err := c.read(w.rfd, w.buf[:8])
		return err
	})
}

func (w *waker) closeFDs(c *counters) error {
	return os.NewSyscallError("close", c.close(w.rfd))
}
