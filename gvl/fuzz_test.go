package gvl_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gvl"
)

// The operations of FuzzLock, one per byte of its program: the low three
// bits pick the operation, the rest are its argument. The fuzzing goroutine
// (main) holds the lock between operations; waiters queue behind it.
const (
	opAcquire    = iota // a goroutine queues with Acquire
	opAcquireCtx        // a goroutine queues with AcquireContext
	opCancel            // a queued AcquireContext gives up
	opRelease           // main releases and acquires again
	opYield             // main yields
	opBlocking          // main runs a Blocking region
	opTry               // main tries TryAcquire on the held lock
	opChaos             // goroutines race through every call at once
)

// lockModel is what FuzzLock knows must hold.
type lockModel struct {
	t       *testing.T
	l       *gvl.Lock
	holders atomic.Int32 // goroutines inside the lock: never more than one
	held    atomic.Int64 // acquisitions seen by the test

	mu    sync.Mutex
	order []int // waiter ids in the order they got the lock; guarded by mu

	queue   []int                      // ids queued behind main, in FIFO order
	cancels map[int]context.CancelFunc // the queued AcquireContext waiters
	results map[int]chan error         // each waiter's outcome
	nextID  int
	wg      sync.WaitGroup
}

// enter and leave bracket every stretch in which the caller holds the lock.
// enter counts an acquisition; back, after a Yield or Checkpoint that may
// have kept the lock all along, does not.
func (m *lockModel) enter() {
	m.held.Add(1)
	m.back()
}

// back runs on any goroutine: it reports with assert, never require.
func (m *lockModel) back() {
	assert.Equal(m.t, int32(1), m.holders.Add(1), "holders at once")
}

func (m *lockModel) leave() { m.holders.Add(-1) }

// spawn starts a waiter that queues behind main and returns its id once
// it is counted by Waiters.
func (m *lockModel) spawn(withCtx bool) {
	id := m.nextID
	m.nextID++
	res := make(chan error, 1)
	m.results[id] = res
	ctx := context.Background()
	if withCtx {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		m.cancels[id] = cancel
	}
	m.wg.Go(func() {
		var err error
		if withCtx {
			err = m.l.AcquireContext(ctx)
		} else {
			m.l.Acquire()
		}
		if err == nil {
			m.enter()
			m.mu.Lock()
			m.order = append(m.order, id)
			m.mu.Unlock()
			m.leave()
			m.l.Release()
		}
		res <- err
	})
	m.queue = append(m.queue, id)
	waitWaiters(m.t, m.l, len(m.queue))
}

// served checks, once main holds the lock again after letting the queue
// run, that every queued waiter got the lock, in FIFO order, before main.
func (m *lockModel) served() {
	for _, id := range m.queue {
		require.NoError(m.t, recv(m.t, m.results[id]), "waiter %d", id)
		delete(m.cancels, id)
	}
	m.mu.Lock()
	got := m.order
	m.order = nil
	m.mu.Unlock()
	require.True(m.t, slices.Equal(got, m.queue), "waiters got the lock in order %v, want %v (FIFO)", got, m.queue)
	m.queue = m.queue[:0]
	require.Zero(m.t, m.l.Waiters(), "Waiters() with the queue served")
}

// FuzzLock runs programs of lock operations across goroutines and checks
// the invariants: one holder at a time, Waiters exact once the queue is
// still, FIFO handoff past Release, Yield and Blocking, a cancelled wait
// leaves the queue and loses nobody's turn, and racing goroutines never
// barge past the queue nor leave the lock held or waited for.
func FuzzLock(f *testing.F) {
	f.Add(uint8(0), []byte{opAcquire, opAcquireCtx, opAcquire, opRelease})
	f.Add(uint8(1), []byte{opAcquireCtx, opAcquire, opAcquireCtx, opCancel, opYield, opTry})
	f.Add(uint8(2), []byte{opAcquire, opAcquire, opBlocking, opAcquireCtx, opCancel | 1<<3, opChaos | 3<<3})
	f.Fuzz(func(t *testing.T, config uint8, prog []byte) {
		if len(prog) > 24 {
			prog = prog[:24]
		}
		var waiting, acquired, released atomic.Int64
		opts := []gvl.Option{gvl.WithHook(func(e gvl.Event) {
			switch e {
			case gvl.EventWaiting:
				waiting.Add(1)
			case gvl.EventAcquired:
				acquired.Add(1)
			case gvl.EventReleased:
				released.Add(1)
			}
		})}
		switch config % 3 {
		case 1:
			opts = append(opts, gvl.WithTimeslice(0))
		case 2:
			// Timers fire, ShouldYield rises and Checkpoint yields.
			opts = append(opts, gvl.WithTimeslice(50*time.Microsecond))
		}
		m := &lockModel{
			t:       t,
			l:       gvl.New(opts...),
			cancels: map[int]context.CancelFunc{},
			results: map[int]chan error{},
		}
		l := m.l
		l.Acquire()
		m.enter()
		cancelled := 0
		for i, b := range prog {
			op, arg := int(b&7), int(b>>3)
			switch op {
			case opAcquire, opAcquireCtx:
				if len(m.queue) >= 8 {
					continue
				}
				m.spawn(op == opAcquireCtx)
			case opCancel:
				var ids []int
				for _, id := range m.queue {
					if m.cancels[id] != nil {
						ids = append(ids, id)
					}
				}
				if len(ids) == 0 {
					continue
				}
				id := ids[arg%len(ids)]
				m.cancels[id]()
				delete(m.cancels, id)
				// Main holds the lock, so nobody was handed it: the
				// wait must end cancelled and leave the queue.
				require.Equal(t, context.Canceled, recv(t, m.results[id]), "cancelled waiter %d", id)
				cancelled++
				m.queue = slices.DeleteFunc(m.queue, func(x int) bool { return x == id })
				require.Equal(t, len(m.queue), l.Waiters(), "Waiters() after a cancel")
			case opRelease:
				m.leave()
				l.Release()
				l.Acquire()
				m.enter()
				m.served()
			case opYield:
				m.leave()
				l.Yield()
				m.back()
				m.served()
			case opBlocking:
				m.leave()
				l.Blocking(func() {})
				m.enter()
				m.served()
			case opTry:
				require.False(t, l.TryAcquire(), "TryAcquire took a held lock")
				require.Equal(t, len(m.queue), l.Waiters(), "Waiters() after TryAcquire")
			case opChaos:
				m.chaos(arg%4+1, int64(i)<<8|int64(arg))
			}
			require.Equal(t, len(m.queue), l.Waiters(), "Waiters() between operations")
		}
		// Let the queue run, then check that the lock is free and
		// nobody waits or is lost.
		m.leave()
		l.Release()
		for _, cancel := range m.cancels {
			defer cancel()
		}
		for _, id := range m.queue {
			require.NoError(t, recv(t, m.results[id]), "waiter %d", id)
		}
		m.wg.Wait()
		require.Zero(t, l.Waiters(), "Waiters() of the quiescent lock")
		require.False(t, l.Contended(), "Contended() of the quiescent lock")
		require.False(t, l.ShouldYield(), "ShouldYield() of the quiescent lock")
		require.True(t, l.TryAcquire(), "quiescent lock is held")
		l.Release()
		s := l.Stats()
		assert.GreaterOrEqual(t, s.Acquisitions, uint64(m.held.Load()), "Stats().Acquisitions against those seen")
		assert.GreaterOrEqual(t, s.Cancelled, uint64(cancelled), "Stats().Cancelled against the cancels")
		assert.Equal(t, acquired.Load(), released.Load(), "hook: acquired and released events on a free lock")
	})
}

// chaos releases the lock, lets n goroutines race through every call for a
// few rounds, and takes it back once they are done. The goroutines queued
// before it must all be served first, in order: a newcomer can never barge
// past a queued waiter.
func (m *lockModel) chaos(n int, seed int64) {
	l := m.l
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range n {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
		wg.Go(func() {
			<-start
			for range 8 {
				switch rng.IntN(4) {
				case 0:
					l.Acquire()
				case 1:
					if !l.TryAcquire() {
						continue
					}
				case 2:
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(50))*time.Microsecond)
					err := l.AcquireContext(ctx)
					cancel()
					if err != nil {
						continue
					}
				case 3:
					ctx, cancel := context.WithCancel(context.Background())
					if rng.IntN(2) == 0 {
						cancel()
					}
					err := l.AcquireContext(ctx)
					cancel()
					if err != nil {
						continue
					}
				}
				m.enter()
				switch rng.IntN(4) {
				case 1:
					m.leave()
					l.Yield()
					m.back()
				case 2:
					m.leave()
					l.Blocking(func() {})
					m.enter()
				case 3:
					m.leave()
					l.Checkpoint()
					m.back()
				}
				m.leave()
				l.Release()
			}
		})
	}
	queued := slices.Clone(m.queue)
	m.leave()
	close(start)
	l.Release()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	recv(m.t, done)
	l.Acquire()
	m.enter()
	m.mu.Lock()
	got := m.order
	m.order = nil
	m.mu.Unlock()
	require.True(m.t, slices.Equal(got, queued), "queued waiters got the lock in order %v, want %v", got, queued)
	for _, id := range queued {
		require.NoError(m.t, recv(m.t, m.results[id]), "waiter %d", id)
		delete(m.cancels, id)
	}
	m.queue = m.queue[:0]
}
