package poller

import (
	"fmt"
	"math"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// A Mux makes one-shot waits, like Ruby's IO.select and
// rb_wait_for_single_fd, with the idle algorithm of the package comment
// built in. A Mux is safe for concurrent use; the lock given with WithGVL
// must be held by the caller of each wait.
//
// Negative timeouts wait indefinitely, zero never blocks (and never steps).
type Mux struct {
	backend Backend
	c       counters
	idle    idler
}

// New returns a Mux configured by opts. It panics if WithBackend names a
// backend the platform lacks. The backend matters to WaitFD only: Select is
// always select(2) and Poll always poll; with epoll, WaitFD waits with
// ppoll(2), since one fd is not worth an epoll instance (create, add, wait
// and close: four calls instead of one).
func New(opts ...Option) *Mux {
	cfg := newConfig(opts)
	if !cfg.backend.available() {
		panic(fmt.Sprintf("poller: backend %v not available on this platform", cfg.backend))
	}
	m := &Mux{backend: cfg.backend}
	m.idle = idler{lock: cfg.lock, stepper: cfg.stepper, budget: cfg.budget, c: &m.c}
	return m
}

// Stats returns what m did so far.
func (m *Mux) Stats() Stats { return m.c.snapshot() }

// Poll waits until one of fds is ready or timeout passes, and returns how
// many have nonzero Revents, like poll(2): Revents is set on return, and
// Events says what to wait for. A negative Fd is ignored, as poll(2) does.
// A closed fd is reported ready with POLLNVAL in its Revents. It polls first
// and steps when nothing is ready, as the package comment describes.
func (m *Mux) Poll(fds []unix.PollFd, timeout time.Duration) (int, error) {
	n, err := m.idle.wait(timeout, false, new(true), func(t time.Duration) (int, error) {
		return m.pollWait(fds, t)
	})
	if err != nil {
		return 0, os.NewSyscallError(pollName, err)
	}
	m.c.events.Add(uint64(n))
	return n, nil
}

// Select waits until one of the fds in r is readable, one in w writable or
// one in e has an exceptional condition (such as out-of-band data), or
// timeout passes, and returns the ready fds of each list, in the order
// given, each once. An fd below zero or at least FD_SETSIZE is an error
// naming it, found before any system call. A closed fd makes select(2) fail
// with EBADF, returned wrapped. It polls first and steps when nothing is
// ready, as the package comment describes.
func (m *Mux) Select(r, w, e []int, timeout time.Duration) (rr, wr, er []int, err error) {
	var in [3]unix.FdSet
	nfd := 0
	for i, list := range [3][]int{r, w, e} {
		for _, fd := range list {
			if err := checkSelectFD("select", fd); err != nil {
				return nil, nil, nil, err
			}
			in[i].Set(fd)
			nfd = max(nfd, fd+1)
		}
	}
	var out [3]unix.FdSet
	n, err := m.idle.wait(timeout, false, new(true), func(t time.Duration) (int, error) {
		if m.park(t, func(p *parker) bool {
			return addSelect(p, r, unix.POLLIN) && addSelect(p, w, unix.POLLOUT) && addSelect(p, e, unix.POLLPRI)
		}) {
			t = 0
		}
		out = in
		return m.c.sel(nfd, &out[0], &out[1], &out[2], t)
	})
	if err != nil {
		return nil, nil, nil, os.NewSyscallError("select", err)
	}
	if n == 0 {
		return nil, nil, nil, nil
	}
	ready := func(list []int, set *unix.FdSet) []int {
		var res []int
		for _, fd := range list {
			if set.IsSet(fd) {
				res = append(res, fd)
				set.Clear(fd) // duplicates in list are reported once
			}
		}
		return res
	}
	rr, wr, er = ready(r, &out[0]), ready(w, &out[1]), ready(e, &out[2])
	m.c.events.Add(uint64(len(rr) + len(wr) + len(er)))
	return rr, wr, er, nil
}

// WaitFD waits until fd is ready for one of ev (Read, Write, Priority) or
// timeout passes, and returns what is ready (Hangup and Error are reported
// even if not asked for), or 0 on timeout. A closed fd returns Invalid and
// a nil error, at once. A negative fd, one above the kernel's int32, or one
// select(2) cannot hold when the backend is select, is an error naming it.
//
// WaitFD steps before its first poll, not after: it usually follows a read
// that failed with EAGAIN, so a poll right away is likely to find nothing.
func (m *Mux) WaitFD(fd int, ev Events, timeout time.Duration) (Events, error) {
	if fd < 0 || fd > math.MaxInt32 {
		return 0, fmt.Errorf("poller: WaitFD: fd %d: %w", fd, ErrFDRange)
	}
	if m.backend == BackendSelect {
		return m.waitSelect(fd, ev, timeout)
	}
	p := [1]unix.PollFd{{Fd: int32(fd), Events: toPoll(ev)}}
	n, err := m.idle.wait(timeout, true, new(true), func(t time.Duration) (int, error) {
		return m.pollWait(p[:], t)
	})
	if err != nil {
		return 0, os.NewSyscallError(pollName, err)
	}
	if n == 0 {
		return 0, nil
	}
	m.c.events.Add(1)
	return fromPoll(p[0].Revents), nil
}

func (m *Mux) waitSelect(fd int, ev Events, timeout time.Duration) (Events, error) {
	if err := checkSelectFD("WaitFD", fd); err != nil {
		return 0, err
	}
	var r, w, e unix.FdSet
	n, err := m.idle.wait(timeout, true, new(true), func(t time.Duration) (int, error) {
		if m.park(t, func(p *parker) bool { return p.add(int32(fd), toPoll(ev)) }) {
			t = 0
		}
		r.Zero()
		w.Zero()
		e.Zero()
		if ev&Read != 0 {
			r.Set(fd)
		}
		if ev&Write != 0 {
			w.Set(fd)
		}
		if ev&Priority != 0 {
			e.Set(fd)
		}
		return m.c.sel(fd+1, &r, &w, &e, t)
	})
	if err == unix.EBADF {
		m.c.events.Add(1)
		return Invalid, nil
	}
	if err != nil {
		return 0, os.NewSyscallError("select", err)
	}
	if n == 0 {
		return 0, nil
	}
	var got Events
	if r.IsSet(fd) {
		got |= Read
	}
	if w.IsSet(fd) {
		got |= Write
	}
	if e.IsSet(fd) {
		got |= Priority
	}
	m.c.events.Add(1)
	return got, nil
}

// pollWait is poll(2) on fds with timeout t, or, for a blocking wait of a
// Mux that shares a lock, a wait parked in the netpoller followed by a
// zero-timeout poll(2) that says what is ready.
func (m *Mux) pollWait(fds []unix.PollFd, t time.Duration) (int, error) {
	if m.park(t, func(p *parker) bool {
		for i := range fds {
			if fds[i].Fd >= 0 && !p.add(fds[i].Fd, fds[i].Events) {
				return false
			}
		}
		return true
	}) {
		t = 0
	}
	return m.c.poll(fds, t)
}

// park makes a blocking wait (t nonzero) of a Mux that shares a lock wait
// parked in Go's netpoller instead of blocking its thread (park_linux.go
// says why), for the fds add gives the parker. It reports whether it did:
// then the wait has ended (something may be ready, or t has passed) and
// the caller asks with a zero timeout; otherwise the caller makes its
// blocking call as usual. A Mux without a lock, or a zero t, never parks:
// one goroutine blocking its own thread pays no convoy.
func (m *Mux) park(t time.Duration, add func(p *parker) bool) bool {
	if t == 0 || m.idle.lock == nil {
		return false
	}
	p := getParker(&m.c)
	if p == nil {
		return false
	}
	ok := add(p) && p.park(&m.c, t)
	putParker(p)
	return ok
}

// addSelect adds each fd of list to p with the poll(2) events ev.
func addSelect(p *parker, list []int, ev int16) bool {
	for _, fd := range list {
		if !p.add(int32(fd), ev) {
			return false
		}
	}
	return true
}
