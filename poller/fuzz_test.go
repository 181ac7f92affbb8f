package poller_test

import (
	"errors"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// The argument sets FuzzMux hands to Select, Poll and WaitFD. Each byte of
// spec names one fd: its low three bits its kind, the rest which select set
// it goes in or what Poll and WaitFD wait for on it.
const (
	fdEmpty  = iota // a pipe's read end, nothing to read
	fdData          // a pipe's read end with a byte to read
	fdHangup        // a pipe's read end whose writer is closed
	fdWrite         // a pipe's write end with room
	fdClosed        // a number that was just closed
	fdNeg           // a negative number
	fdHuge          // a number far above anything open, or beyond int32
	fdDup           // the previous fd again (duplicates in one call)
)

// hugeFDs are the numbers fdHuge picks from. The last ones do not fit the
// kernel's int: an fd is an int32 there, and a number truncated to its low
// 32 bits would name another, open, fd.
var hugeFDs = []int{unix.FD_SETSIZE, unix.FD_SETSIZE + 1, 1 << 20, math.MaxInt32, 1 << 32, -1 << 31}

// muxTimeouts are the timeouts FuzzMux picks from; negative and huge ones
// are used only when something is ready, or the call would never return.
var muxTimeouts = []time.Duration{
	0, 1, time.Microsecond, 100 * time.Microsecond, time.Millisecond,
	-1, -time.Hour, math.MinInt64, math.MaxInt64, time.Hour,
}

// fuzzFDs holds one iteration's fds, made on demand.
type fuzzFDs struct {
	t      *testing.T
	pipes  [4]*fdPair // by kind: fdEmpty, fdData, fdHangup, fdWrite
	closed int        // the fdClosed number, -1 until made
}

func (f *fuzzFDs) pipe(kind int) *fdPair {
	if p := f.pipes[kind]; p != nil {
		return p
	}
	p := newPipe(f.t)
	switch kind {
	case fdData:
		p.write(p.w, "x")
	case fdHangup:
		p.close(&p.w)
	}
	f.pipes[kind] = p
	return p
}

// fd returns the number for kind, with x (the byte's upper bits) to vary it.
func (f *fuzzFDs) fd(kind, x int, prev int) int {
	switch kind {
	case fdEmpty, fdData, fdHangup:
		return f.pipe(kind).r
	case fdWrite:
		return f.pipe(kind).w
	case fdClosed:
		if f.closed < 0 {
			// A dup closed at once: its number is free, and nothing in
			// this goroutine opens an fd before the call (every pipe
			// is made first, or one could take the number).
			for k := range f.pipes {
				f.pipe(k)
			}
			fd, err := unix.Dup(f.pipe(fdEmpty).r)
			require.NoError(f.t, err)
			require.NoError(f.t, unix.Close(fd))
			f.closed = fd
		}
		return f.closed
	case fdNeg:
		return -1 - x
	case fdHuge:
		h := hugeFDs[x%len(hugeFDs)]
		if h == 1<<32 {
			h += f.pipe(fdData).r // truncated to 32 bits: an open fd
		}
		return h
	}
	return prev // fdDup
}

// readiness is what poll(2) reports for kind, asked for everything.
func readiness(kind int) int16 {
	switch kind {
	case fdData:
		return unix.POLLIN
	case fdHangup:
		return unix.POLLHUP
	case fdWrite:
		return unix.POLLOUT
	case fdClosed:
		return unix.POLLNVAL
	}
	return 0
}

// isOpen reports whether the fd of kind is open.
func isOpen(kind int) bool { return kind <= fdWrite }

// FuzzMux calls Select, Poll or WaitFD with argument sets made of pipes in
// every state, closed, duplicate, negative and huge fds and odd timeouts,
// on every backend, with and without a stepper and a lock, and checks the
// answer against what the kernel must report: the documented errors, the
// ready fds each once, nothing else, and no early return.
func FuzzMux(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(0), []byte{fdData, fdEmpty, fdWrite << 0})
	f.Add(uint8(1), uint8(1), uint8(4), []byte{fdData | 1<<3, fdWrite | 2<<3, fdHangup | 1<<3})
	f.Add(uint8(2), uint8(2), uint8(5), []byte{fdClosed | 1<<3})
	f.Fuzz(func(t *testing.T, call, config, tsel uint8, spec []byte) {
		if len(spec) > 16 {
			spec = spec[:16]
		}
		backends := poller.Backends()
		b := backends[int(config>>2)%len(backends)]
		var opts []poller.Option
		opts = append(opts, poller.WithBackend(b))
		if config&1 != 0 {
			steps := 0
			opts = append(opts, poller.WithStepBudget(50*time.Microsecond),
				poller.WithStepper(gcstep.Func(func(time.Duration) bool { steps++; return steps < 3 })))
		}
		if config&2 != 0 {
			l := gvl.New()
			l.Acquire()
			defer l.Release()
			opts = append(opts, poller.WithGVL(l))
		}
		m := poller.New(opts...)
		fds := &fuzzFDs{t: t, closed: -1}
		timeout := muxTimeouts[int(tsel)%len(muxTimeouts)]
		switch call % 3 {
		case 0:
			fuzzSelect(t, m, fds, spec, timeout)
		case 1:
			fuzzPoll(t, m, fds, spec, timeout)
		case 2:
			if len(spec) == 0 {
				spec = []byte{fdEmpty}
			}
			fuzzWaitFD(t, m, b, fds, spec[0], timeout)
		}
	})
}

// bounded returns timeout, or a millisecond where timeout would wait too
// long (or forever) for a call that finds nothing ready.
func bounded(timeout time.Duration, ready bool) time.Duration {
	if !ready && (timeout < 0 || timeout > time.Millisecond) {
		return time.Millisecond
	}
	return timeout
}

// checkElapsed checks that a call that found nothing did not return before
// its timeout, and that no call overran it grossly.
func checkElapsed(t *testing.T, start time.Time, timeout time.Duration, ready bool) {
	elapsed := time.Since(start)
	if !ready {
		assert.GreaterOrEqual(t, elapsed, timeout, "returned before the timeout")
	}
	if timeout < time.Hour {
		assert.Less(t, elapsed, max(timeout, 0)+slack, "overran the timeout")
	}
}

func fuzzSelect(t *testing.T, m *poller.Mux, fds *fuzzFDs, spec []byte, timeout time.Duration) {
	var sets [3][]int
	var want [3][]int
	var kinds [3][]int
	badRange, badFD := false, false
	prev, prevKind := fds.pipe(fdEmpty).r, fdEmpty // what a leading fdDup repeats
	for _, s := range spec {
		kind, x := int(s&7), int(s>>3)
		fd := fds.fd(kind, x, prev)
		if kind == fdDup {
			kind = prevKind
		}
		prev, prevKind = fd, kind
		set := x % 3
		sets[set] = append(sets[set], fd)
		kinds[set] = append(kinds[set], kind)
		switch {
		case fd < 0 || fd >= unix.FD_SETSIZE:
			badRange = true
		case !isOpen(kind):
			badFD = true
		}
	}
	for set := range sets {
		for i, fd := range sets[set] {
			k := kinds[set][i]
			ready := set == 0 && (k == fdData || k == fdHangup) || set == 1 && k == fdWrite
			if ready && !slices.Contains(want[set], fd) {
				want[set] = append(want[set], fd)
			}
		}
	}
	ready := badRange || badFD || len(want[0])+len(want[1])+len(want[2]) > 0
	timeout = bounded(timeout, ready)
	before := m.Stats()
	start := time.Now()
	rr, wr, er, err := m.Select(sets[0], sets[1], sets[2], timeout)
	switch {
	case badRange:
		require.ErrorIs(t, err, poller.ErrFDRange)
		assert.Equal(t, before.Syscalls, m.Stats().Syscalls, "a system call for an fd out of range")
	case badFD:
		require.ErrorIs(t, err, unix.EBADF)
		var se *os.SyscallError
		assert.True(t, errors.As(err, &se), "%v is not wrapped", err)
	default:
		require.NoError(t, err)
		assert.Equal(t, want[0], rr, "read set")
		assert.Equal(t, want[1], wr, "write set")
		assert.Equal(t, want[2], er, "except set")
	}
	if err != nil {
		assert.Nil(t, rr)
		assert.Nil(t, wr)
		assert.Nil(t, er)
	}
	checkElapsed(t, start, timeout, ready)
}

// pollAsk turns three bits into poll events.
func pollAsk(x int) int16 {
	var e int16
	if x&1 != 0 {
		e |= unix.POLLIN
	}
	if x&2 != 0 {
		e |= unix.POLLOUT
	}
	if x&4 != 0 {
		e |= unix.POLLPRI
	}
	return e
}

func fuzzPoll(t *testing.T, m *poller.Mux, fds *fuzzFDs, spec []byte, timeout time.Duration) {
	var pfds []unix.PollFd
	var want []int16
	prev, prevKind := fds.pipe(fdEmpty).r, fdEmpty // what a leading fdDup repeats
	nwant := 0
	for _, s := range spec {
		kind, x := int(s&7), int(s>>3)
		fd := fds.fd(kind, x, prev)
		if kind == fdDup {
			kind = prevKind
		}
		prev, prevKind = fd, kind
		if fd > math.MaxInt32 {
			// A PollFd holds an int32: the caller cannot even say it.
			fd = math.MaxInt32
		}
		ask := pollAsk(x)
		var w int16
		switch {
		case fd < 0:
			// poll(2) ignores a negative fd.
		case kind == fdHuge:
			w = unix.POLLNVAL
		default:
			w = readiness(kind) & (ask | unix.POLLHUP | unix.POLLERR | unix.POLLNVAL)
		}
		pfds = append(pfds, unix.PollFd{Fd: int32(fd), Events: ask, Revents: -1})
		want = append(want, w)
		if w != 0 {
			nwant++
		}
	}
	timeout = bounded(timeout, nwant > 0)
	start := time.Now()
	n, err := m.Poll(pfds, timeout)
	require.NoError(t, err)
	assert.Equal(t, nwant, n)
	for i := range pfds {
		assert.Equal(t, want[i], pfds[i].Revents, "fd %d (entry %d), events %#x", pfds[i].Fd, i, pfds[i].Events)
	}
	checkElapsed(t, start, timeout, nwant > 0)
}

func fuzzWaitFD(t *testing.T, m *poller.Mux, b poller.Backend, fds *fuzzFDs, s byte, timeout time.Duration) {
	kind, x := int(s&7), int(s>>3)
	if kind == fdDup {
		kind = fdData
	}
	fd := fds.fd(kind, x, 0)
	ask := poller.Events(x) & (poller.Read | poller.Write | poller.Priority)
	if x&8 != 0 {
		ask = poller.Events(x) // bits beyond what may be asked for
	}
	var want poller.Events
	var wantErr error
	switch {
	case fd < 0 || fd > math.MaxInt32:
		wantErr = poller.ErrFDRange
	case b == poller.BackendSelect && fd >= unix.FD_SETSIZE:
		wantErr = poller.ErrFDRange
	case !isOpen(kind):
		want = poller.Invalid
	case b == poller.BackendSelect:
		// select(2) cannot tell a hangup: it reports the fd readable.
		switch {
		case kind == fdData || kind == fdHangup:
			want = poller.Read & ask
		case kind == fdWrite:
			want = poller.Write & ask
		}
	default:
		switch kind {
		case fdData:
			want = poller.Read & ask
		case fdHangup:
			want = poller.Hangup
		case fdWrite:
			want = poller.Write & ask
		}
	}
	if want == poller.Invalid && b == poller.BackendSelect && ask&(poller.Read|poller.Write|poller.Priority) == 0 {
		// select(2) with empty sets never looks at the fd: it sleeps.
		want = 0
	}
	ready := want != 0 || wantErr != nil
	timeout = bounded(timeout, ready)
	start := time.Now()
	got, err := m.WaitFD(fd, ask, timeout)
	if wantErr != nil {
		require.ErrorIs(t, err, wantErr, "fd %d", fd)
		assert.Zero(t, got)
	} else {
		require.NoError(t, err, "fd %d", fd)
		assert.Equal(t, want, got, "fd %d (%d), asked %v", fd, kind, ask)
	}
	checkElapsed(t, start, timeout, ready)
}

// TestFDBeyondInt32 is FuzzMux's first finding, kept as a plain test: the
// kernel's fd is an int32, so a larger number, truncated on its way in,
// named another fd, which WaitFD waited on and a Loop registered. It must
// be refused like a negative one.
func TestFDBeyondInt32(t *testing.T) {
	p := newPipe(t)
	p.write(p.w, "x")
	huge := 1<<32 + p.r // truncated to 32 bits: p.r, which is readable
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		m := poller.New(poller.WithBackend(b))
		got, err := m.WaitFD(huge, poller.Read, 100*time.Millisecond)
		require.ErrorIs(t, err, poller.ErrFDRange, "WaitFD got %v", got)

		l := newLoop(t, poller.WithBackend(b))
		err = l.Add(huge, poller.Read, func(int, poller.Events) {})
		require.ErrorIs(t, err, poller.ErrFDRange)
	})
}

// TestSelectHugeTimeout is FuzzMux's second finding: a timeout near
// math.MaxInt64 made select(2) fail with EINVAL (the timeval wrapped
// negative), although the fd was ready.
func TestSelectHugeTimeout(t *testing.T) {
	p := newPipe(t)
	p.write(p.w, "x")
	for _, timeout := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 - 999} {
		m := poller.New()
		rr, _, _, err := m.Select([]int{p.r}, nil, nil, timeout)
		require.NoError(t, err, "timeout %v", timeout)
		assert.Equal(t, []int{p.r}, rr)

		m = poller.New(poller.WithBackend(poller.BackendSelect))
		got, err := m.WaitFD(p.r, poller.Read, timeout)
		require.NoError(t, err, "timeout %v", timeout)
		assert.Equal(t, poller.Read, got)
	}
}

// TestWaitFDShortTimeoutPolls is FuzzMux's third finding: WaitFD with a
// stepper steps before it polls, and a timeout that passed before the first
// step (a nanosecond) ended the call with no poll at all, so a ready fd was
// reported as a timeout.
func TestWaitFDShortTimeoutPolls(t *testing.T) {
	p := newPipe(t)
	p.write(p.w, "x")
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		m := poller.New(poller.WithBackend(b), poller.WithStepper(&stepper{}))
		got, err := m.WaitFD(p.r, poller.Read, time.Nanosecond)
		require.NoError(t, err)
		assert.Equal(t, poller.Read, got)
		assert.NotZero(t, m.Stats().ZeroPolls+m.Stats().BlockingPolls, "no poll")
	})
}
