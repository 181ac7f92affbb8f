package poller

import (
	"time"

	"golang.org/x/sys/unix"
)

// A readyEvent is one fd a backend found ready. gen is the generation the fd
// was registered with; the Loop drops an event whose generation is no longer
// the fd's current one (the fd was removed, and perhaps its number reused,
// between the wait and the dispatch). The kernel holds only fd and gen,
// never a Go pointer.
type readyEvent struct {
	fd  int32
	gen uint32
	ev  Events
}

// wakeGen is the generation of the Loop's own wake fd; user registrations
// get generations from 1 up, skipping it.
const wakeGen = 0

// backend is the contract every Loop backend keeps (epoll in
// backend_epoll_linux.go, poll in backend_poll.go, select in
// backend_select.go).
//
//   - add starts watching fd for ev (a subset of Read|Write|Priority; Hangup,
//     Error and Invalid are reported whether asked for or not) and tags its
//     events with gen. modify changes ev and gen of a watched fd; remove
//     stops watching it. The Loop calls these with its mutex held, never
//     twice for the same fd without the matching remove, and may call them
//     from any goroutine, also while wait runs on the loop goroutine.
//     add is never called with an fd outside [0, fdLimitOf(backend)). Their
//     errors are system-call errors wrapped with os.NewSyscallError, which
//     the Loop wraps again with the operation and the fd.
//   - wait is called by the loop goroutine only, never concurrently with
//     itself or close. If timeout < 0, it blocks indefinitely; if
//     timeout == 0, it polls without blocking; otherwise it blocks for at
//     most about timeout (it may return early with nothing: the caller
//     restarts it). It fills evs (len(evs) > 0) and returns how many it
//     filled, or a raw errno; EINTR is returned as is, for restart.
//   - A change made by add/modify/remove during a wait must take effect by
//     the next wait; if it must take effect during the current one, the
//     backend reports so with wakeOnChange and the Loop wakes the wait.
//   - close releases the backend's own fds. It is called once, not during
//     wait.
type backend interface {
	add(fd int, ev Events, gen uint32) error
	modify(fd int, ev Events, gen uint32) error
	remove(fd int) error
	wait(timeout time.Duration, evs []readyEvent) (int, error)
	wakeOnChange() bool
	close() error
	waitName() string // the wait's system call, for errors
}

// fdLimitOf returns one above the largest fd backend b can watch.
func fdLimitOf(b Backend) int {
	if b == BackendSelect {
		return unix.FD_SETSIZE
	}
	return fdLimit
}

// newBackend makes a Loop backend of kind b, one the platform has, counting
// its system calls in c.
func newBackend(b Backend, c *counters) (backend, error) {
	switch b {
	case BackendPoll:
		return newPollBackend(c), nil
	case BackendSelect:
		return newSelectBackend(c), nil
	}
	return newPlatformBackend(b, c)
}
