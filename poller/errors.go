package poller

import "errors"

var (
	// ErrClosed is returned by every Loop method called after Close, and by
	// Run and RunOnce when Close ended them.
	ErrClosed = errors.New("poller: loop closed")

	// ErrRegistered is returned by Add when the fd is already registered
	// with the Loop. Use Modify to change what it waits for.
	ErrRegistered = errors.New("poller: fd already registered")

	// ErrNotRegistered is returned by Modify and Remove for an fd the Loop
	// does not watch.
	ErrNotRegistered = errors.New("poller: fd not registered")

	// ErrFDRange is returned, wrapped in an error naming the fd, for an fd
	// that is negative, above the kernel's int32 (it would be truncated
	// to another fd), or at least FD_SETSIZE where select(2) must hold it. The check happens before any system call: select(2) on such an
	// fd would write outside its fd_set.
	ErrFDRange = errors.New("poller: fd out of range")

	// ErrBackend is returned when the requested Backend is not available
	// on this platform (epoll outside Linux).
	ErrBackend = errors.New("poller: backend not available on this platform")
)
