package poller_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// The operations of FuzzLoop, one per byte of its program: the low four
// bits pick the operation, the high four its argument (a slot in the low
// two, a choice in the next two).
const (
	lopAdd      = iota // Add the slot's fd
	lopModify          // Modify it
	lopRemove          // Remove it
	lopSend            // the peer sends the slot a byte
	lopAction          // what the slot's handler does, actions 0-3
	lopAction2         // the same, actions 4-7
	lopDrain           // whether the slot's handler reads what it is sent
	lopAfter           // AfterFunc
	lopStop            // Timer.Stop
	lopReset           // Timer.Reset
	lopWake            // Wake
	lopRunZero         // RunOnce(0)
	lopRun             // RunOnce with a timeout
	lopClose           // Close
	lopRun2            // RunOnce with a timeout, more often
	lopTimerAct        // what the funcs of the timers made next do
)

// What a timer func does when called.
const (
	tactNone = iota
	tactClose
	tactStopFirst // Stop the first timer made
	tactRearm     // Reset itself to fire at the next RunOnce
)

// What a handler does when called, besides reading.
const (
	actNone = iota
	actRemoveSelf
	actRemoveNext
	actClose
	actAddNext
	actAfter
	actWake
	actToggleRead
)

const loopSlots = 4

// loopEvs are the sets the operations ask for. Priority never comes on a
// socketpair: a slot asking only for it must never fire.
var loopEvs = [4]poller.Events{poller.Read, poller.Write, poller.Read | poller.Write, poller.Priority}

// timerDelays are AfterFunc's and Reset's delays: due at once, soon, never
// during the test.
var timerDelays = [4]time.Duration{0, -time.Second, time.Millisecond, time.Hour}

// loopSlot is one socketpair: fd is watched, peer sends to it.
type loopSlot struct {
	fd, peer int
	reg      bool          // registered, in the model
	ev       poller.Events // what it is registered for
	action   int
	drain    bool
	pending  int  // bytes sent and not read
	sent     byte // the next byte the peer sends; bytes are a sequence
	read     byte // the next byte the handler must read
	fired    bool // called during the current RunOnce
	born     bool // registered during the current RunOnce's dispatch
}

// loopTimer is one Timer and what the model knows of it.
type loopTimer struct {
	t       *poller.Timer
	delay   time.Duration
	action  int // what its func does: tactNone...
	fires   int // calls of its func so far
	allowed int // schedules not cancelled: fires may never exceed it
}

// loopModel is the simple model FuzzLoop checks a Loop against.
type loopModel struct {
	t          *testing.T
	l          *poller.Loop
	slots      [loopSlots]loopSlot
	timers     []*loopTimer
	closed     bool
	wake       bool // a Wake is pending
	maybeWoken bool // a handler called Wake: the next RunOnce may return early
	running    bool // inside RunOnce
	dispatchN  int  // handlers and timer funcs called during this RunOnce
	timerAct   int  // the action of the timers made next
}

func (m *loopModel) fail(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf(format, args...)
}

// wantErr checks err against the model: ErrClosed once closed.
func (m *loopModel) wantErr(op string, err error, want error) {
	m.t.Helper()
	if m.closed {
		want = poller.ErrClosed
	}
	if !errors.Is(err, want) && !(want == nil && err == nil) {
		m.fail("%s: got %v, want %v", op, err, want)
	}
}

func (m *loopModel) add(i int, ev poller.Events) {
	s := &m.slots[i]
	err := m.l.Add(s.fd, ev, m.handler(i))
	if s.reg && !m.closed {
		m.wantErr(fmt.Sprintf("Add(slot %d) again", i), err, poller.ErrRegistered)
		return
	}
	m.wantErr(fmt.Sprintf("Add(slot %d)", i), err, nil)
	if !m.closed {
		s.reg, s.ev = true, ev
		s.born = m.running
	}
}

func (m *loopModel) modify(i int, ev poller.Events) {
	s := &m.slots[i]
	err := m.l.Modify(s.fd, ev)
	if !s.reg {
		m.wantErr(fmt.Sprintf("Modify(slot %d)", i), err, poller.ErrNotRegistered)
		return
	}
	m.wantErr(fmt.Sprintf("Modify(slot %d)", i), err, nil)
	if !m.closed {
		s.ev = ev
	}
}

func (m *loopModel) remove(i int) {
	s := &m.slots[i]
	err := m.l.Remove(s.fd)
	if !s.reg {
		m.wantErr(fmt.Sprintf("Remove(slot %d)", i), err, poller.ErrNotRegistered)
		return
	}
	m.wantErr(fmt.Sprintf("Remove(slot %d)", i), err, nil)
	s.reg = false
}

func (m *loopModel) close() {
	err := m.l.Close()
	m.wantErr("Close", err, nil)
	m.closed = true
	for i := range m.slots {
		m.slots[i].reg = false
	}
	for _, lt := range m.timers {
		lt.allowed = lt.fires // a closed loop fires nothing more
	}
}

func (m *loopModel) after(d time.Duration) {
	lt := &loopTimer{delay: d, action: m.timerAct}
	i := len(m.timers)
	lt.t = m.l.AfterFunc(d, func() { m.fire(i) })
	if !m.closed {
		lt.allowed = 1
	}
	m.timers = append(m.timers, lt)
}

func (m *loopModel) stop(i int) {
	lt := m.timers[i]
	if lt.t.Stop() {
		if lt.fires >= lt.allowed {
			m.fail("timer %d: Stop reported it pending after all its %d fires", i, lt.fires)
		}
		lt.allowed--
	} else if lt.fires < lt.allowed {
		// A timer due in the same batch as the func calling Stop is
		// still pending until its own func runs.
		m.fail("timer %d: Stop reported it not pending, but it fired %d of %d times", i, lt.fires, lt.allowed)
	}
}

func (m *loopModel) reset(i int, d time.Duration) {
	lt := m.timers[i]
	pending := lt.t.Reset(d)
	if m.closed {
		if pending {
			m.fail("timer %d: Reset on a closed loop reported it pending", i)
		}
		return
	}
	if pending {
		if lt.fires >= lt.allowed {
			m.fail("timer %d: Reset reported it pending after all its %d fires", i, lt.fires)
		}
	} else {
		lt.allowed++
	}
	lt.delay = d
}

func (m *loopModel) fire(i int) {
	lt := m.timers[i]
	if !m.running {
		m.fail("timer %d fired outside RunOnce", i)
	}
	if m.closed {
		m.fail("timer %d fired on a closed loop", i)
	}
	lt.fires++
	if lt.fires > lt.allowed {
		m.fail("timer %d fired %d times, allowed %d", i, lt.fires, lt.allowed)
	}
	m.dispatchN++
	switch lt.action {
	case tactClose:
		m.close()
	case tactStopFirst:
		m.stop(0)
	case tactRearm:
		m.reset(i, 0)
	}
}

func (m *loopModel) send(i int) {
	s := &m.slots[i]
	n, err := unix.Write(s.peer, []byte{s.sent})
	if err != nil || n != 1 {
		m.fail("send to slot %d: %d, %v", i, n, err)
	}
	s.sent++
	s.pending++
}

// drain reads what slot i was sent, checking every byte comes once and in
// order.
func (m *loopModel) drain(i int) {
	s := &m.slots[i]
	var buf [64]byte
	for {
		n, err := unix.Read(s.fd, buf[:])
		if err == unix.EAGAIN {
			break
		}
		if err != nil || n == 0 {
			m.fail("read slot %d: %d, %v", i, n, err)
		}
		for _, b := range buf[:n] {
			if b != s.read {
				m.fail("slot %d read byte %d, want %d", i, b, s.read)
			}
			s.read++
		}
		s.pending -= n
	}
	if s.pending != 0 {
		m.fail("slot %d: %d bytes sent but not readable", i, s.pending)
	}
}

// handler returns slot i's handler, which checks each call against the
// model and then does the slot's action.
func (m *loopModel) handler(i int) poller.Handler {
	return func(fd int, ev poller.Events) {
		s := &m.slots[i]
		switch {
		case !m.running:
			m.fail("slot %d: handler called outside RunOnce", i)
		case m.closed:
			m.fail("slot %d: handler called on a closed loop", i)
		case fd != s.fd:
			m.fail("slot %d: handler called for fd %d, want %d", i, fd, s.fd)
		case !s.reg:
			m.fail("slot %d: handler called, not registered", i)
		case s.born:
			m.fail("slot %d: handler called for an event older than its registration", i)
		case s.fired:
			m.fail("slot %d: handler called twice in one RunOnce", i)
		case ev == 0 || ev&^(s.ev|poller.Hangup|poller.Error|poller.Invalid) != 0:
			m.fail("slot %d: handler got %v, asked for %v", i, ev, s.ev)
		case ev&poller.Read != 0 && s.pending == 0:
			m.fail("slot %d: Read with nothing sent", i)
		}
		s.fired = true
		m.dispatchN++
		if ev&poller.Read != 0 && s.drain {
			m.drain(i)
		}
		next := (i + 1) % loopSlots
		switch s.action {
		case actRemoveSelf:
			m.remove(i)
		case actRemoveNext:
			m.remove(next)
		case actClose:
			m.close()
		case actAddNext:
			m.add(next, poller.Read)
		case actAfter:
			m.after(0)
		case actWake:
			m.l.Wake()
			m.maybeWoken = true
		case actToggleRead:
			m.modify(i, s.ev^poller.Read)
		}
	}
}

// predict returns what the next RunOnce must call, if the model can tell:
// the handlers of the ready slots and the due timer funcs, none of which
// does anything the model cannot foresee the order of.
func (m *loopModel) predict() (want [loopSlots]poller.Events, timers int, exact bool) {
	exact = true
	for i := range m.slots {
		s := &m.slots[i]
		if !s.reg {
			continue
		}
		if s.ev&poller.Read != 0 && s.pending > 0 {
			want[i] |= poller.Read
		}
		if s.ev&poller.Write != 0 {
			want[i] |= poller.Write
		}
		if want[i] != 0 && s.action != actNone {
			exact = false
		}
	}
	for _, lt := range m.timers {
		if lt.fires < lt.allowed {
			if lt.action != tactNone && lt.delay != time.Hour {
				exact = false // it may close the loop, or stop another
			}
			switch lt.delay {
			case time.Millisecond:
				exact = false // due or not, depending on the clock
			case time.Hour:
			default:
				timers += lt.allowed - lt.fires
			}
		}
	}
	return want, timers, exact
}

// run calls RunOnce and checks it against the model.
func (m *loopModel) run(timeout time.Duration) {
	want, wantTimers, exact := m.predict()
	busy := wantTimers > 0 || m.wake
	for _, w := range want {
		busy = busy || w != 0
	}
	if timeout > 0 && busy {
		timeout = 5 * time.Second // must return at once: a bound, not a wait
	}
	closedBefore := m.closed
	m.running, m.dispatchN = true, 0
	for i := range m.slots {
		m.slots[i].fired, m.slots[i].born = false, false
	}
	maybeWoken := m.maybeWoken
	m.wake, m.maybeWoken = false, false
	start := time.Now()
	n, err := m.l.RunOnce(timeout)
	elapsed := time.Since(start)
	m.running = false
	if closedBefore || m.closed {
		if !errors.Is(err, poller.ErrClosed) {
			m.fail("RunOnce on a loop closed before or during it: got %v, want %v", err, poller.ErrClosed)
		}
	} else if err != nil {
		m.fail("RunOnce: %v", err)
	}
	if err == nil && n != m.dispatchN {
		m.fail("RunOnce returned %d, but %d handlers and timer funcs ran", n, m.dispatchN)
	}
	if busy && !closedBefore && elapsed > slack {
		m.fail("RunOnce waited %v with something ready", elapsed)
	}
	if !exact || closedBefore {
		return
	}
	for i := range m.slots {
		if m.slots[i].fired != (want[i] != 0) {
			m.fail("slot %d: fired %v, want %v (%v)", i, m.slots[i].fired, want[i] != 0, want[i])
		}
	}
	if n != m.dispatchN || m.dispatchN != wantTimers+countFired(m.slots[:]) {
		m.fail("RunOnce: %d called, want %d timers and the ready slots", n, wantTimers)
	}
	if !busy && !maybeWoken && timeout > 0 && elapsed < timeout {
		m.fail("RunOnce returned after %v with nothing ready, before its timeout %v", elapsed, timeout)
	}
	if elapsed > timeout+slack && timeout >= 0 {
		m.fail("RunOnce took %v, timeout %v", elapsed, timeout)
	}
}

func countFired(slots []loopSlot) int {
	n := 0
	for _, s := range slots {
		if s.fired {
			n++
		}
	}
	return n
}

// FuzzLoop runs programs of Loop operations (add, modify, remove, sends,
// timers, wake, RunOnce, close), some made by handlers during dispatch, on
// every backend, and checks each RunOnce against a model of what must fire:
// a ready slot's handler exactly once with what it asked for, a due timer's
// func once, nothing for a removed, modified-away or closed registration,
// every byte read once and in order, and, at the end, no fd left open.
func FuzzLoop(f *testing.F) {
	f.Add(uint8(0), []byte{lopAdd, lopSend, lopRun, lopAfter, lopRunZero})
	f.Add(uint8(1), []byte{lopAdd | 2<<4, lopAdd | 1<<4, lopAction | 1<<4 | 1<<6, lopSend | 1<<4, lopRun, lopWake, lopRun2})
	f.Add(uint8(2), []byte{lopAdd, lopAction | 3<<6, lopSend, lopAfter | 2<<4, lopRun, lopAdd, lopRun})
	f.Add(uint8(4), []byte{lopAdd | 1<<6, lopAction2 | 1<<6, lopRun, lopStop, lopReset | 1<<4, lopRun2, lopModify | 1<<6})
	f.Fuzz(func(t *testing.T, config uint8, prog []byte) {
		if len(prog) > 48 {
			prog = prog[:48]
		}
		before := openFDs(t)
		backends := poller.Backends()
		opts := []poller.Option{poller.WithBackend(backends[int(config>>2)%len(backends)])}
		if config&1 != 0 {
			steps := 0
			opts = append(opts, poller.WithStepBudget(100*time.Microsecond),
				poller.WithStepper(gcstep.Func(func(time.Duration) bool { steps++; return steps%3 != 0 })))
		}
		if config&2 != 0 {
			lock := gvl.New()
			lock.Acquire()
			defer lock.Release()
			opts = append(opts, poller.WithGVL(lock))
		}
		l, err := poller.NewLoop(opts...)
		if err != nil {
			t.Fatal(err)
		}
		m := &loopModel{t: t, l: l}
		for i := range m.slots {
			p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, fd := range p {
				unix.CloseOnExec(fd)
				if err := unix.SetNonblock(fd, true); err != nil {
					t.Fatal(err)
				}
			}
			m.slots[i] = loopSlot{fd: p[0], peer: p[1], drain: true}
		}
		defer func() {
			if !m.closed {
				l.Close()
			}
			for _, s := range m.slots {
				unix.Close(s.fd)
				unix.Close(s.peer)
			}
			if after := openFDs(t); after != before {
				t.Errorf("%d fds open before, %d after", before, after)
			}
		}()
		for _, b := range prog {
			op, arg := int(b&15), int(b>>4)
			i, x := arg&3, arg>>2
			switch op {
			case lopAdd:
				m.add(i, loopEvs[x])
			case lopModify:
				m.modify(i, loopEvs[x])
			case lopRemove:
				m.remove(i)
			case lopSend:
				if m.slots[i].pending < 64 {
					m.send(i)
				}
			case lopAction:
				m.slots[i].action = x
			case lopAction2:
				m.slots[i].action = 4 + x
			case lopDrain:
				m.slots[i].drain = x&1 == 0
			case lopAfter:
				if len(m.timers) < 16 {
					m.after(timerDelays[x])
				}
			case lopStop:
				if len(m.timers) > 0 {
					m.stop(arg % len(m.timers))
				}
			case lopReset:
				if len(m.timers) > 0 {
					m.reset(i%len(m.timers), timerDelays[x])
				}
			case lopWake:
				l.Wake()
				m.wake = !m.closed
			case lopRunZero:
				m.run(0)
			case lopTimerAct:
				m.timerAct = x
			case lopRun, lopRun2:
				m.run(200 * time.Microsecond)
			case lopClose:
				m.close()
			}
		}
		if m.closed {
			return
		}
		// Settle: plain handlers that read everything, then every
		// pending byte and every timer due by now must come, exactly once.
		for i := range m.slots {
			m.slots[i].action, m.slots[i].drain = actNone, true
		}
		for _, lt := range m.timers {
			lt.action = tactNone // a timer that rearms itself never settles
		}
		deadline := time.Now().Add(5 * time.Second)
		for !m.settled() {
			if time.Now().After(deadline) {
				t.Fatalf("not settled after 5 s: %+v", m.slots)
			}
			m.run(time.Millisecond)
		}
	})
}

// settled reports whether nothing is left to fire but Write handlers and
// the timers due in an hour.
func (m *loopModel) settled() bool {
	for _, s := range m.slots {
		if s.reg && s.ev&poller.Read != 0 && s.pending > 0 {
			return false
		}
	}
	for _, lt := range m.timers {
		if lt.delay != time.Hour && lt.fires < lt.allowed {
			return false
		}
	}
	return true
}

// TestLoopNoTimerAfterClose: a timer func that closes the loop stops the
// other funcs of its batch, as a handler that closes it stops the other
// handlers. They used to run on the closed loop.
func TestLoopNoTimerAfterClose(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		l, err := poller.NewLoop(poller.WithBackend(b))
		if err != nil {
			t.Fatal(err)
		}
		fired := 0
		l.AfterFunc(0, func() { fired++; l.Close() })
		l.AfterFunc(0, func() { fired++ })
		n, err := l.RunOnce(0)
		if !errors.Is(err, poller.ErrClosed) {
			t.Errorf("RunOnce: got %v, want %v", err, poller.ErrClosed)
		}
		if fired != 1 || n != 1 {
			t.Errorf("%d timer funcs ran (RunOnce says %d) on a loop the first closed, want 1", fired, n)
		}
	})
}
