package poller

import (
	"errors"
	"fmt"
)

// Every error the package returns has one form: "poller: ", the operation
// (the exported method or function that failed), the fd where there is
// one, then the cause, such as
//
//	poller: Add: fd 9: fd already registered
//	poller: Select: fd 1500 outside [0, 1024): fd out of range
//	poller: Remove: fd 7: epoll_ctl: bad file descriptor
//
// The sentinels below carry no prefix of their own, as os.ErrClosed does
// not; errors.Is matches them through the wrapping, and errors.As finds the
// *os.SyscallError of a failed system call.
var (
	// ErrClosed is returned by every Loop method called after Close, and by
	// Run and RunOnce when Close ended them.
	ErrClosed = errors.New("loop closed")

	// ErrRegistered is returned by Add when the fd is already registered
	// with the Loop. Use Modify to change what it waits for.
	ErrRegistered = errors.New("fd already registered")

	// ErrNotRegistered is returned by Modify and Remove for an fd the Loop
	// does not watch.
	ErrNotRegistered = errors.New("fd not registered")

	// ErrFDRange is returned for an fd that is negative, above the
	// kernel's int32 (it would be truncated to another fd), or at least
	// FD_SETSIZE where select(2) must hold it (FD_SET would write outside
	// its fd_set). The check happens before any system call.
	ErrFDRange = errors.New("fd out of range")

	// ErrBackend is wrapped by the error New and NewLoop panic with when
	// WithBackend names a backend the platform lacks (epoll outside
	// Linux); Backends lists those it has.
	ErrBackend = errors.New("backend not available on this platform")
)

// opError returns err in the package's form, for an operation without an
// fd: "poller: op: err".
func opError(op string, err error) error {
	return fmt.Errorf("poller: %s: %w", op, err)
}

// fdError returns err in the package's form, for an operation on fd:
// "poller: op: fd N: err".
func fdError(op string, fd int, err error) error {
	return fmt.Errorf("poller: %s: fd %d: %w", op, fd, err)
}

// rangeError is the error for an fd outside [0, limit).
func rangeError(op string, fd, limit int) error {
	return fmt.Errorf("poller: %s: fd %d outside [0, %d): %w", op, fd, limit, ErrFDRange)
}

// backendError is the value New and NewLoop (op) panic with for a backend
// the platform lacks.
func backendError(op string, b Backend) error {
	return opError(op, fmt.Errorf("%v: %w", b, ErrBackend))
}

// fdLimit is one above the largest fd the kernel's int32 holds.
const fdLimit = 1 << 31
