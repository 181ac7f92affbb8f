package poller

import (
	"math"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
)

// A Mux makes one-shot waits, like Ruby's IO.select and
// rb_wait_for_single_fd, with the idle algorithm of the package comment
// built in. A Mux is safe for concurrent use; the lock given with WithGVL
// must be held by the caller of each wait.
//
// Negative timeouts wait indefinitely, zero never blocks (and never steps).
//
// Once a step reports no more work, or a stepper that is a
// gcstep.LoopObserver answers Lull with no, the Mux's calls offer the
// stepper none for one step budget (WithStepBudget): a call is one idle
// moment, and goroutines that bounce work between them make hundreds of
// calls per millisecond, each of which would otherwise pay a step and the
// zero-timeout poll after it, or the question, for a stepper that has
// just said it has nothing to do.
//
// Goroutines that share the lock given with WithGVL do not block a thread
// while they wait with it released: on Linux they park in Go's netpoller,
// as os.File reads do, and are woken by the runtime's scheduler (see
// bench/README.md for what that saves). Fds epoll cannot watch (regular
// files, directories) and waits on more than 64 fds block the thread in
// poll(2) or select(2) as a Mux without a lock always does.
//
// For such a Mux, a stepper that is a gcstep.Deferred does not bound the
// waits: a parked wait's bound is a timer moved at every wait. One timer
// of the Mux's does the deferred work instead, taking the lock when the
// work falls due, and stepping while nobody waits for the lock.
type Mux struct {
	backend Backend
	c       counters
	idle    idler

	// restAt is the time (since idle's epoch, when the Mux was made) from
	// which calls offer the stepper work again, or 0 once a call has seen
	// that time pass: see the type's comment and mayStep.
	restAt atomic.Int64
}

// New returns a Mux configured by opts. It panics if WithBackend names a
// backend the platform lacks. The backend matters to WaitFD only: Select is
// always select(2) and Poll always poll; with epoll, WaitFD waits with
// ppoll(2), since one fd is not worth an epoll instance (create, add, wait
// and close: four calls instead of one).
func New(opts ...Option) *Mux {
	cfg := newConfig(opts)
	if !cfg.backend.available() {
		panic(backendError("New", cfg.backend))
	}
	m := &Mux{backend: cfg.backend}
	m.idle = idler{lock: cfg.lock, stepper: cfg.stepper, budget: cfg.budget, c: &m.c, lullRests: true, epoch: time.Now()}
	if ds, ok := cfg.stepper.(gcstep.Deferred); ok && cfg.lock != nil {
		m.idle.alarm = newAlarm(&m.idle, ds)
	}
	return m
}

// mayStep says whether a call may offer the stepper work: there is a
// stepper, and neither a step nor Lull said there was none within the
// last budget.
// Only a call during or just after such a rest reads the clock: the first
// to see it over clears restAt, so the calls after it need not.
func (m *Mux) mayStep() bool {
	if m.idle.stepper == nil {
		return false
	}
	rest := m.restAt.Load()
	if rest == 0 {
		return true
	}
	if m.idle.since(time.Now()) < rest {
		return false
	}
	m.restAt.CompareAndSwap(rest, 0) // a newer rest, stored meanwhile, stays
	return true
}

// stepped ends a call: if it offered the stepper work and a step or Lull
// said there was none (may went false), the calls of the next budget
// offer none.
func (m *Mux) stepped(offered, may bool) {
	if offered && !may {
		m.restAt.Store(m.idle.since(time.Now()) + int64(m.idle.budget))
	}
}

// Stats returns what m did so far.
func (m *Mux) Stats() Stats { return m.c.snapshot() }

// Poll waits until one of fds is ready or timeout passes, and returns how
// many have nonzero Revents, like poll(2): Revents is set on return, and
// Events says what to wait for. A negative Fd is ignored, as poll(2) does.
// A closed fd is reported ready with POLLNVAL in its Revents. It polls first
// and steps when nothing is ready, as the package comment describes.
func (m *Mux) Poll(fds []unix.PollFd, timeout time.Duration) (int, error) {
	offered := m.mayStep()
	may := offered
	n, err := m.idle.wait(timeout, false, false, &may, func(t time.Duration) (int, error) {
		return m.pollWait(fds, t)
	})
	m.stepped(offered, may)
	if err != nil {
		return 0, opError("Poll", os.NewSyscallError(pollName, err))
	}
	m.c.events.Add(uint64(n))
	return n, nil
}

// Select waits until one of the fds in r is readable, one in w writable or
// one in e has an exceptional condition (such as out-of-band data), or
// timeout passes, and returns the ready fds of each list, in the order
// given, each once. A result may be part of the list it comes from (when
// its fds are consecutive there, as for a list of one fd): it allocates
// nothing then, and shares that list's memory, its capacity capped so that
// appending to it copies. An fd below zero or at least FD_SETSIZE is an error
// naming it, found before any system call. A closed fd makes select(2) fail
// with EBADF, returned wrapped. It polls first and steps when nothing is
// ready, as the package comment describes.
func (m *Mux) Select(r, w, e []int, timeout time.Duration) (rr, wr, er []int, err error) {
	var in [3]unix.FdSet
	nfd := 0
	for i, list := range [3][]int{r, w, e} {
		for _, fd := range list {
			if err := checkSelectFD("Select", fd); err != nil {
				return nil, nil, nil, err
			}
			in[i].Set(fd)
			nfd = max(nfd, fd+1)
		}
	}
	var out [3]unix.FdSet
	offered := m.mayStep()
	may := offered
	n, err := m.idle.wait(timeout, false, false, &may, func(t time.Duration) (int, error) {
		return m.selectWait(nfd, r, w, e, &in, &out, t)
	})
	m.stepped(offered, may)
	if err != nil {
		return nil, nil, nil, opError("Select", os.NewSyscallError("select", err))
	}
	if n == 0 {
		return nil, nil, nil, nil
	}
	rr, wr, er = readyOf(r, &out[0]), readyOf(w, &out[1]), readyOf(e, &out[2])
	m.c.events.Add(uint64(len(rr) + len(wr) + len(er)))
	return rr, wr, er, nil
}

// readyOf returns the fds of list that are in set, in list's order, each
// once. When they are consecutive in list (one fd, or all of them, the
// usual cases) the result is that part of list, its capacity capped so
// that an append to it copies, and a wait allocates nothing; otherwise it
// is a new slice.
func readyOf(list []int, set *unix.FdSet) []int {
	var res []int    // the ready fds, once they are not consecutive in list
	from, to := 0, 0 // list[from:to] are the ready fds while res is nil
	for i, fd := range list {
		if !set.IsSet(fd) {
			continue
		}
		set.Clear(fd) // duplicates in list are reported once
		switch {
		case res != nil:
			res = append(res, fd)
		case from == to:
			from, to = i, i+1
		case to == i:
			to++
		default:
			res = append(slices.Clip(list[from:to]), fd)
		}
	}
	if res != nil {
		return res
	}
	if from == to {
		return nil
	}
	return slices.Clip(list[from:to])
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
		return 0, rangeError("WaitFD", fd, fdLimit)
	}
	if m.backend == BackendSelect {
		return m.waitSelect(fd, ev, timeout)
	}
	p := [1]unix.PollFd{{Fd: int32(fd), Events: toPoll(ev)}}
	offered := m.mayStep()
	may := offered
	n, err := m.idle.wait(timeout, true, false, &may, func(t time.Duration) (int, error) {
		return m.pollWait(p[:], t)
	})
	m.stepped(offered, may)
	if err != nil {
		return 0, fdError("WaitFD", fd, os.NewSyscallError(pollName, err))
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
	one := []int{fd}
	var lists [3][]int
	var in, out [3]unix.FdSet
	for i, asked := range [3]Events{Read, Write, Priority} {
		if ev&asked != 0 {
			lists[i] = one
			in[i].Set(fd)
		}
	}
	offered := m.mayStep()
	may := offered
	n, err := m.idle.wait(timeout, true, false, &may, func(t time.Duration) (int, error) {
		return m.selectWait(fd+1, lists[0], lists[1], lists[2], &in, &out, t)
	})
	m.stepped(offered, may)
	if err == unix.EBADF {
		m.c.events.Add(1)
		return Invalid, nil
	}
	if err != nil {
		return 0, fdError("WaitFD", fd, os.NewSyscallError("select", err))
	}
	if n == 0 {
		return 0, nil
	}
	var got Events
	for i, ready := range [3]Events{Read, Write, Priority} {
		if out[i].IsSet(fd) {
			got |= ready
		}
	}
	m.c.events.Add(1)
	return got, nil
}

// pollWait is poll(2) on fds with timeout t; for a blocking wait of a Mux
// that shares a lock, the wait is parked in the netpoller instead, and
// fills Revents as poll(2) does.
func (m *Mux) pollWait(fds []unix.PollFd, t time.Duration) (int, error) {
	n, err, parked := m.park(t, func(p *parker) bool {
		for i := range fds {
			if fds[i].Fd >= 0 && !p.add(fds[i].Fd, uint32(uint16(fds[i].Events))) {
				return false
			}
		}
		return true
	}, func(p *parker) int {
		n := 0
		for i := range fds {
			fds[i].Revents = 0
			if fds[i].Fd < 0 {
				continue
			}
			// poll(2)'s filter: what was asked for, and errors and
			// hangups always.
			r := p.revents(fds[i].Fd) & (uint32(uint16(fds[i].Events)) | unix.POLLERR | unix.POLLHUP)
			if r != 0 {
				fds[i].Revents = int16(r)
				n++
			}
		}
		return n
	})
	if parked {
		return n, err
	}
	return m.c.poll(fds, t)
}

// selectWait is select(2) on the fds of r, w and e (whose sets in, and
// whose ready fds out, are given) with timeout t; for a blocking wait of a
// Mux that shares a lock, the wait is parked in the netpoller instead,
// and fills out as select(2) does.
func (m *Mux) selectWait(nfd int, r, w, e []int, in, out *[3]unix.FdSet, t time.Duration) (int, error) {
	n, err, parked := m.park(t, func(p *parker) bool {
		return addSelect(p, r, selectIn) && addSelect(p, w, selectOut) && addSelect(p, e, selectEx)
	}, func(p *parker) int {
		n := 0
		for i, list := range [3][]int{r, w, e} {
			out[i].Zero()
			set := [3]uint32{selectIn, selectOut, selectEx}[i]
			for _, fd := range list {
				if !out[i].IsSet(fd) && p.revents(int32(fd))&set != 0 {
					out[i].Set(fd)
					n++
				}
			}
		}
		return n
	})
	if parked {
		return n, err
	}
	*out = *in
	return m.c.sel(nfd, &out[0], &out[1], &out[2], t)
}

// park makes a blocking wait (t nonzero) of a Mux that shares a lock wait
// parked in Go's netpoller instead of blocking its thread (park_linux.go
// says why), for the fds add gives the parker. If it did (parked), n and
// err are the wait's result, got having turned the parker's reports into
// the caller's; otherwise the caller makes its blocking call as usual. A
// Mux without a lock, or a zero t, never parks: a goroutine that shares no
// lock pays no convoy for blocking its own thread, and a zero-timeout wait
// does not block.
func (m *Mux) park(t time.Duration, add func(p *parker) bool, got func(p *parker) int) (n int, err error, parked bool) {
	if t == 0 || m.idle.lock == nil {
		return 0, nil, false
	}
	p := getParker(&m.c)
	if p == nil {
		return 0, nil, false
	}
	defer putParker(p)
	if !add(p) {
		return 0, nil, false
	}
	ok, err := p.park(&m.c, t)
	if !ok {
		return 0, nil, false
	}
	m.c.parked.Add(1)
	if err != nil {
		return 0, err, true
	}
	return got(p), nil, true
}

// addSelect adds each fd of list to p with the poll(2) events ev.
func addSelect(p *parker, list []int, ev uint32) bool {
	for _, fd := range list {
		if !p.add(int32(fd), ev) {
			return false
		}
	}
	return true
}
