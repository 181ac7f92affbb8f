package poller

import (
	"time"

	"golang.org/x/sys/unix"
)

// A waitFunc makes one wait system call with the given timeout (negative:
// block indefinitely; zero: poll without blocking) and returns how many fds
// it found ready. It returns raw errnos.
type waitFunc func(timeout time.Duration) (int, error)

// restart calls wait until it returns something other than EINTR, and is
// the only place EINTR from a wait is handled. The time still to wait is
// recomputed after every restart from the absolute deadline fixed at entry,
// so a signal storm can neither stretch the call past its timeout nor make
// it wait again from the start. A wait interrupted with no time left (a
// zero timeout, or a deadline that has passed) is reported as a timeout,
// so a storm cannot keep the call here either.
//
// A wait that reports nothing ready before its deadline (or fails with
// EAGAIN, which means "not ready", never a user error) is spurious and is
// restarted the same way; at the deadline it is an honest timeout. The
// first spurious return is restarted at once; a run of them (a kernel that
// keeps failing with EAGAIN while short of memory for its tables) backs off,
// from spuriousBackoffMin doubling to spuriousBackoffMax, never past the
// deadline, so a fault that does not clear cannot spin on a core.
func (c *counters) restart(timeout time.Duration, wait waitFunc) (int, error) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	var backoff time.Duration
	for {
		n, err := wait(timeout)
		switch {
		case err == unix.EINTR:
			c.restarts.Add(1)
		case err == unix.EAGAIN || err == nil && n == 0:
			if timeout == 0 || timeout > 0 && !time.Now().Before(deadline) {
				return 0, nil // an honest timeout
			}
			c.spurio.Add(1)
			if backoff > 0 {
				pause := backoff
				if timeout > 0 {
					pause = min(pause, time.Until(deadline))
				}
				time.Sleep(pause)
			}
			backoff = min(max(2*backoff, spuriousBackoffMin), spuriousBackoffMax)
		default:
			return n, err
		}
		if timeout == 0 {
			return 0, nil // interrupted with no time left
		}
		if timeout > 0 {
			timeout = max(time.Until(deadline), 0)
		}
	}
}

// The pauses between spurious returns after the first; see restart.
const (
	spuriousBackoffMin = 50 * time.Microsecond
	spuriousBackoffMax = 10 * time.Millisecond
)

// ignoringEINTR calls fn until it fails with something other than EINTR,
// for the short calls on the wake fd (read and write, never close: see
// counters.close). Waits use restart instead, which also keeps a deadline.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}
