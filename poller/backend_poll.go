package poller

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// toPoll returns the poll(2) events for ev. Read also asks for pollRDHUP,
// so a peer's close is reported as Hangup where the platform can tell;
// it comes with POLLIN (the read returns 0), so it wakes no loop that Read
// would not have woken.
func toPoll(ev Events) int16 {
	var e int16
	if ev&Read != 0 {
		e |= unix.POLLIN | pollRDHUP
	}
	if ev&Write != 0 {
		e |= unix.POLLOUT
	}
	if ev&Priority != 0 {
		e |= unix.POLLPRI
	}
	return e
}

func fromPoll(e int16) Events {
	var ev Events
	if e&unix.POLLIN != 0 {
		ev |= Read
	}
	if e&unix.POLLOUT != 0 {
		ev |= Write
	}
	if e&unix.POLLPRI != 0 {
		ev |= Priority
	}
	if e&(unix.POLLHUP|pollRDHUP) != 0 {
		ev |= Hangup
	}
	if e&unix.POLLERR != 0 {
		ev |= Error
	}
	if e&unix.POLLNVAL != 0 {
		ev |= Invalid
	}
	return ev
}

// pollBackend waits with ppoll(2) (poll(2) outside Linux) over an array it
// rebuilds only when registrations change. Its cost grows with the number
// of registered fds: the kernel scans them all on every wait.
type pollBackend struct {
	c *counters

	mu   sync.Mutex
	fds  []unix.PollFd // guarded by mu; the kernel never sees this copy
	gens []uint32      // guarded by mu; gens[i] belongs to fds[i]
	idx  map[int]int   // guarded by mu; fd → index in fds

	// Copies the wait works on, owned by the loop goroutine. A change made
	// during a wait lands in fds, not here; the Loop wakes the wait
	// (wakeOnChange) so the next one sees it.
	wfds  []unix.PollFd
	wgens []uint32
	next  int // where the next scan of wfds starts
}

func newPollBackend(c *counters) *pollBackend {
	return &pollBackend{c: c, idx: make(map[int]int)}
}

func (b *pollBackend) add(fd int, ev Events, gen uint32) error {
	if !b.c.fdOpen(fd) {
		return os.NewSyscallError("fcntl", unix.EBADF)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.idx[fd] = len(b.fds)
	b.fds = append(b.fds, unix.PollFd{Fd: int32(fd), Events: toPoll(ev)})
	b.gens = append(b.gens, gen)
	return nil
}

func (b *pollBackend) modify(fd int, ev Events, gen uint32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	i, ok := b.idx[fd]
	if !ok {
		return ErrNotRegistered // the Loop checks first: not reached
	}
	b.fds[i].Events = toPoll(ev)
	b.gens[i] = gen
	return nil
}

func (b *pollBackend) remove(fd int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	i, ok := b.idx[fd]
	if !ok {
		return ErrNotRegistered // the Loop checks first: not reached
	}
	last := len(b.fds) - 1
	if i != last {
		b.fds[i], b.gens[i] = b.fds[last], b.gens[last]
		b.idx[int(b.fds[i].Fd)] = i
	}
	b.fds, b.gens = b.fds[:last], b.gens[:last]
	delete(b.idx, fd)
	return nil
}

func (b *pollBackend) wait(timeout time.Duration, evs []readyEvent) (int, error) {
	b.mu.Lock()
	b.wfds = append(b.wfds[:0], b.fds...)
	b.wgens = append(b.wgens[:0], b.gens...)
	b.mu.Unlock()

	n, err := b.c.poll(b.wfds, timeout)
	if err != nil || n == 0 {
		return 0, err
	}
	// Start where the last full batch stopped, so that fds late in the
	// array are not starved when more are ready than evs holds; those left
	// out stay ready for the next wait (level-triggered).
	m := len(b.wfds)
	start := b.next % m
	k, j := 0, 0
	for ; j < m && k < len(evs); j++ {
		i := (start + j) % m
		p := &b.wfds[i]
		if p.Revents == 0 {
			continue
		}
		evs[k] = readyEvent{fd: p.Fd, gen: b.wgens[i], ev: fromPoll(p.Revents)}
		k++
	}
	b.next = start + j
	return k, nil
}

func (b *pollBackend) wakeOnChange() bool { return true }

func (b *pollBackend) close() error { return nil }

func (b *pollBackend) waitName() string { return pollName }
