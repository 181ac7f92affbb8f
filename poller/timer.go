package poller

import (
	"fmt"
	"time"
)

// A Timer calls a function once on the loop goroutine, made by
// Loop.AfterFunc. Its function runs with the lock held (if there is one),
// after the handlers of the same RunOnce. A due timer is late by at most
// about one step budget: the loop steps only while a budget is left before
// the next timer.
type Timer struct {
	l    *Loop
	when time.Time
	seq  uint64 // when it was scheduled, in l.timerSeq; guarded by l.mu
	f    func()
	i    int // index in l.timers, -1 when not scheduled; guarded by l.mu
}

// AfterFunc arranges for f to be called on the loop goroutine once d has
// passed (at the next RunOnce if d <= 0), and returns a Timer that can
// cancel the call. On a closed loop the Timer never fires.
func (l *Loop) AfterFunc(d time.Duration, f func()) *Timer {
	if f == nil {
		panic("poller: AfterFunc with a nil func")
	}
	t := &Timer{l: l, f: f, i: -1}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return t
	}
	l.scheduleLocked(t, d)
	return t
}

// scheduleLocked puts t in the heap, due in d, and wakes a waiting loop if
// t is now the first timer. l.mu must be held.
func (l *Loop) scheduleLocked(t *Timer, d time.Duration) {
	t.when = time.Now().Add(d)
	l.timerSeq++
	t.seq = l.timerSeq
	l.timers.push(t)
	if t.i == 0 && l.waiting.Load() {
		l.Wake()
	}
}

// Stop cancels t and reports whether it did: false if t already fired or
// was stopped.
func (t *Timer) Stop() bool {
	l := t.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.i < 0 {
		return false
	}
	l.timers.remove(t.i)
	return true
}

// Reset makes t fire after d from now, whether it fired, was stopped or is
// still pending, and reports whether it was pending. On a closed loop it
// does nothing and returns false.
func (t *Timer) Reset(d time.Duration) bool {
	l := t.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	pending := t.i >= 0
	if pending {
		l.timers.remove(t.i)
	}
	l.scheduleLocked(t, d)
	return pending
}

// fireTimers calls the functions of the timers due now and returns how many
// it called. Timers scheduled by those functions wait for the next RunOnce,
// so a timer that rearms itself with d <= 0 cannot keep the loop here.
//
// It takes one timer off the heap at a time, just before calling it: a
// timer func may Stop or Reset another timer of the same batch, and if one
// panics, the timers not yet called stay in the heap, due, for the next
// RunOnce.
func (l *Loop) fireTimers() int {
	now := time.Now()
	l.mu.Lock()
	last := l.timerSeq
	l.mu.Unlock()
	n := 0
	for {
		l.mu.Lock()
		if l.closed || len(l.timers) == 0 {
			// A func that closed the loop cleared the heap: like a
			// handler, a timer func never runs on a closed loop.
			l.mu.Unlock()
			return n
		}
		t := l.timers[0]
		if t.when.After(now) || t.seq > last {
			// Not due, or scheduled during this call (a negative d
			// can put it first): the rest waits for the next RunOnce.
			l.mu.Unlock()
			return n
		}
		l.timers.remove(0)
		l.mu.Unlock()
		n++
		l.c.timers.Add(1)
		l.mayStep = true
		t.f()
	}
}

// timerHeap is a binary min-heap on when, then seq (timers due at the same
// instant fire in the order they were scheduled); each Timer knows its
// index.
type timerHeap []*Timer

func (h timerHeap) less(i, j int) bool {
	a, b := h[i], h[j]
	if a.when.Equal(b.when) {
		return a.seq < b.seq
	}
	return a.when.Before(b.when)
}

// clamp returns the shorter of timeout (negative: none) and the time to
// the first timer (zero if it is due).
func (h timerHeap) clamp(timeout time.Duration) time.Duration {
	if len(h) == 0 {
		return timeout
	}
	d := max(time.Until(h[0].when), 0)
	if timeout < 0 || d < timeout {
		return d
	}
	return timeout
}

func (h *timerHeap) push(t *Timer) {
	if t.i >= 0 {
		panic(fmt.Sprintf("poller: timer scheduled twice (index %d)", t.i))
	}
	t.i = len(*h)
	*h = append(*h, t)
	h.up(t.i)
}

func (h *timerHeap) remove(i int) {
	s := *h
	last := len(s) - 1
	t := s[i]
	if i != last {
		s[i] = s[last]
		s[i].i = i
	}
	s[last] = nil
	*h = s[:last]
	t.i = -1
	if i != last {
		h.down(i)
		h.up(i)
	}
}

func (h *timerHeap) clear() {
	for _, t := range *h {
		t.i = -1
	}
	*h = nil
}

func (h timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h timerHeap) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h.less(c+1, c) {
			c++
		}
		if !h.less(c, i) {
			return
		}
		h.swap(i, c)
		i = c
	}
}

func (h timerHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i = i
	h[j].i = j
}
