package poller

import (
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// checkSelectFD returns an error naming op and fd if select(2) cannot hold
// fd: an fd_set has room for FD_SETSIZE fds, and FD_SET on a larger one
// writes past the set (glibc's "buffer overflow detected", or silent
// corruption).
func checkSelectFD(op string, fd int) error {
	if fd < 0 || fd >= unix.FD_SETSIZE {
		return rangeError(op, fd, unix.FD_SETSIZE)
	}
	return nil
}

// selectBackend waits with select(2). Like poll, its cost grows with the
// highest registered fd; unlike poll, it cannot hold an fd of FD_SETSIZE or
// more, and it tells neither a hangup (reported as Read) nor a closed fd
// (the whole call fails with EBADF; the backend then probes each fd and
// reports the closed ones Invalid).
type selectBackend struct {
	c *counters

	mu   sync.Mutex
	regs []selectReg // guarded by mu
	idx  map[int]int // guarded by mu; fd → index in regs
	wreg []selectReg // the wait's copy, owned by the loop goroutine
	next int         // where the next scan of wreg starts
	r, w unix.FdSet  // wait's sets, owned by the loop goroutine
	e    unix.FdSet
}

type selectReg struct {
	fd  int
	ev  Events
	gen uint32
}

func newSelectBackend(c *counters) *selectBackend {
	return &selectBackend{c: c, idx: make(map[int]int)}
}

func (b *selectBackend) add(fd int, ev Events, gen uint32) error {
	if fd < 0 || fd >= unix.FD_SETSIZE {
		// The Loop checks first (fdLimitOf): FD_SET must never see it.
		panic(fmt.Sprintf("poller: select backend: fd %d outside [0, %d)", fd, unix.FD_SETSIZE))
	}
	if !b.c.fdOpen(fd) {
		return os.NewSyscallError("fcntl", unix.EBADF)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.idx[fd] = len(b.regs)
	b.regs = append(b.regs, selectReg{fd: fd, ev: ev, gen: gen})
	return nil
}

func (b *selectBackend) modify(fd int, ev Events, gen uint32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	i, ok := b.idx[fd]
	if !ok {
		return ErrNotRegistered // the Loop checks first: not reached
	}
	b.regs[i].ev, b.regs[i].gen = ev, gen
	return nil
}

func (b *selectBackend) remove(fd int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	i, ok := b.idx[fd]
	if !ok {
		return ErrNotRegistered // the Loop checks first: not reached
	}
	last := len(b.regs) - 1
	if i != last {
		b.regs[i] = b.regs[last]
		b.idx[b.regs[i].fd] = i
	}
	b.regs = b.regs[:last]
	delete(b.idx, fd)
	return nil
}

func (b *selectBackend) wait(timeout time.Duration, evs []readyEvent) (int, error) {
	b.mu.Lock()
	b.wreg = append(b.wreg[:0], b.regs...)
	b.mu.Unlock()

	b.r.Zero()
	b.w.Zero()
	b.e.Zero()
	nfd := 0
	for _, r := range b.wreg {
		if r.ev&Read != 0 {
			b.r.Set(r.fd)
		}
		if r.ev&Write != 0 {
			b.w.Set(r.fd)
		}
		if r.ev&Priority != 0 {
			b.e.Set(r.fd)
		}
		nfd = max(nfd, r.fd+1)
	}
	n, err := b.c.sel(nfd, &b.r, &b.w, &b.e, timeout)
	if err == unix.EBADF {
		return b.invalid(evs), nil
	}
	if err != nil || n == 0 {
		return 0, err
	}
	m := len(b.wreg)
	start := b.next % m
	k, j := 0, 0
	for ; j < m && k < len(evs); j++ {
		r := b.wreg[(start+j)%m]
		var ev Events
		if b.r.IsSet(r.fd) {
			ev |= Read
		}
		if b.w.IsSet(r.fd) {
			ev |= Write
		}
		if b.e.IsSet(r.fd) {
			ev |= Priority
		}
		if ev != 0 {
			evs[k] = readyEvent{fd: int32(r.fd), gen: r.gen, ev: ev}
			k++
		}
	}
	b.next = start + j
	return k, nil
}

// invalid reports the closed fds among wreg as Invalid, after select failed
// with EBADF. If none is closed any more (closed and reused in between), it
// reports nothing and the wait is simply restarted.
func (b *selectBackend) invalid(evs []readyEvent) int {
	k := 0
	for _, r := range b.wreg {
		if k == len(evs) {
			break
		}
		if !b.c.fdOpen(r.fd) {
			evs[k] = readyEvent{fd: int32(r.fd), gen: r.gen, ev: Invalid}
			k++
		}
	}
	return k
}

func (b *selectBackend) wakeOnChange() bool { return true }

func (b *selectBackend) close() error { return nil }

func (b *selectBackend) waitName() string { return "select" }
