package main

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// loopReader returns the reader of the off mode (idle false) or the idle
// mode (idle true). Both run the same poller.Loop holding the same
// gvl.Lock, which the loop releases while blocked in the kernel, as Ruby's
// do_select releases the GVL; they differ only in the stepper, so the
// difference between their rows is what idle stepping does. Nobody else
// takes the lock here, so the loop never finds it contended: every idle
// moment is offered to the stepper.
//
// With reuse, every read goes into the same buffer: the floor mode, the
// off loop without its garbage, the footprint no collector can beat.
//
// With onThread, the loop's blocking waits block its thread in epoll_wait
// instead of parking in Go's netpoller (poller.WithNetpoller): the thread
// mode, the off loop as it waited before parking.
func loopReader(idle, reuse, onThread bool) readFunc {
	return func(p *pipe, j job, d *digest) (ls loopStats, err error) {
		chunk := j.chunk
		lock := gvl.New()
		opts := []poller.Option{poller.WithGVL(lock), poller.WithNetpoller(!onThread)}
		if idle {
			// No options but -budget's: what a newcomer who copies
			// the README's snippet gets.
			var budget gcstep.Option // nil: skipped
			if j.budget > 0 {
				budget = gcstep.WithBudget(j.budget)
			}
			rt := gcstep.NewRuntime(budget)
			defer func() {
				st := rt.Stats()
				ls.stepper = &st
				rt.Close()
			}()
			opts = append(opts, poller.WithStepper(rt))
		}
		loop, err := poller.NewLoop(opts...)
		if err != nil {
			return ls, fmt.Errorf("making the loop: %w", err)
		}
		defer func() {
			st := loop.Stats()
			ls.steps, ls.loop = st.Steps, &st
			if cerr := loop.Close(); err == nil && cerr != nil && !errors.Is(cerr, poller.ErrClosed) {
				err = fmt.Errorf("closing the loop: %w", cerr)
			}
		}()

		r := &loopReads{chunk: chunk, d: d, reuse: reuse}
		for _, fd := range p.dups {
			if err := loop.Add(fd, poller.Read, r.handle); err != nil {
				return ls, fmt.Errorf("watching fd %d: %w", fd, err)
			}
		}
		lock.Acquire()
		defer lock.Release()
		for !r.eof && r.err == nil {
			if _, err := loop.RunOnce(-1); err != nil {
				return ls, fmt.Errorf("running the loop: %w", err)
			}
		}
		return ls, r.err
	}
}

// loopReads is the state the handlers share. It lives on the loop
// goroutine: handlers run there one at a time.
type loopReads struct {
	chunk int
	d     *digest
	reuse bool   // keep one buffer for every read: no garbage
	fresh []byte // a new buffer no read has filled yet, or nil
	eof   bool   // a read returned end of file: the writer is done
	err   error  // the first read error
}

// handle is every dup's handler: the Ruby script's r.read(16384), into a
// fresh buffer. All the dups share one pipe, so when data arrives they are
// all reported ready and the first one read takes it; EAGAIN on the others
// means "not ready after all", not an error.
//
// A buffer that a read left empty (EAGAIN) is kept for the next read rather
// than dropped: Ruby's read makes one string per read that returns data,
// and so does the goroutines mode, so the garbage per byte read is the same
// in every mode. Dropping it would make nine buffers of garbage for every
// chunk read with ten dups.
func (r *loopReads) handle(fd int, _ poller.Events) {
	if r.eof || r.err != nil {
		return
	}
	if r.fresh == nil {
		r.fresh = make([]byte, r.chunk)
	}
	n, err := unix.Read(fd, r.fresh)
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		// Level-triggered: if there is data after all, the next wait says so.
	case err != nil:
		r.err = fmt.Errorf("reading fd %d: %w", fd, os.NewSyscallError("read", err))
	case n == 0:
		r.eof = true
	default:
		r.d.add(r.fresh[:n])
		if !r.reuse {
			r.fresh = nil // handed over: the next read gets a new one
		}
	}
}
