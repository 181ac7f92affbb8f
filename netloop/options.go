package netloop

import (
	"fmt"
	"runtime"
	"time"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/poller"
)

// Defaults of the options.
const (
	// DefaultWriteLimit is the unwritten output at which a connection
	// stops being read. 256 KiB holds a burst of pipelined replies, and
	// bounds what a peer that never reads costs the server.
	DefaultWriteLimit = 256 << 10
	// DefaultReadLimit is the most unconsumed input a connection may
	// hold (a request that has not arrived whole yet) before it is closed
	// with ErrReadLimit.
	DefaultReadLimit = 16 << 20
	// DefaultReadBufferSize is the size of each loop's read buffer, the
	// most one read(2) takes from a connection. It is the loop's, not the
	// connection's: idle connections hold none.
	DefaultReadBufferSize = 64 << 10
)

// DefaultLoops returns the number of loops a Server runs unless WithLoops
// says otherwise: one per four Ps (runtime.GOMAXPROCS(0) / 4), at least
// one. See WithLoops for why not one per P.
func DefaultLoops() int { return max(1, runtime.GOMAXPROCS(0)/4) }

// An Option configures a Server.
type Option func(*config)

type config struct {
	loops       int
	stepper     gcstep.Stepper
	stepperFor  func(i int) gcstep.Stepper
	loopOpts    []poller.Option
	reusePort   bool
	noDelay     bool
	writeLimit  int
	readLimit   int
	readBufSize int
	idle        time.Duration

	onAcceptError func(error)
}

func newConfig(opts []Option) config {
	c := config{
		loops:       DefaultLoops(),
		noDelay:     true,
		writeLimit:  DefaultWriteLimit,
		readLimit:   DefaultReadLimit,
		readBufSize: DefaultReadBufferSize,
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

func positive(what string, n int) {
	if n <= 0 {
		panic(fmt.Sprintf("netloop: %s %d is not positive", what, n))
	}
}

// WithLoops sets how many loops serve connections; the default is
// DefaultLoops, one per four Ps and at least one, as nbio's pollers. Each
// loop is a thread that sleeps in the kernel between events and wakes on
// its own, so loops the load does not keep busy cost wakeups, and once the
// loops hold every P the Go scheduler hands each waiting loop's P to
// another thread: on two cores shared with its clients, a second loop took
// 1.4x the CPU per request and served 0.9x of one (bench/README.md,
// "netloop's default loops"). Give more, below GOMAXPROCS, to a server
// whose cores are its own and whose one loop is busy. It panics if n is
// not positive.
func WithLoops(n int) Option {
	positive("loop count", n)
	return func(c *config) { c.loops = n }
}

// WithStepper gives the loops s as their idle work (poller.WithStepper):
// one stepper for all of them, since the collector it drives is the
// process's. Pass one gcstep.NewRuntime() to turn idle time into
// collection time; the default is none.
//
// A *gcstep.Runtime is shared through a handle per loop (Runtime.Loop),
// closed when the loop stops. Each loop steps at its own idle moments:
// a loop is idle when it has nothing to do, whatever the others do, and
// its own recent gaps decide whether an inline cycle fits there (never in
// two loops at once). Memory goes back to the operating system only once
// every loop is quiet. Any other Stepper is called as it is by every loop,
// so it must be safe for concurrent use; WithLoopStepper gives each loop
// its own.
func WithStepper(s gcstep.Stepper) Option {
	return func(c *config) { c.stepper, c.stepperFor = s, nil }
}

// WithLoopStepper gives loop i (from 0) the stepper f(i) returns, for
// steppers that need one per loop: gcstep.Chain(rt.Loop(), cache), say.
// Handles made by f are the caller's to close once Serve has returned.
func WithLoopStepper(f func(i int) gcstep.Stepper) Option {
	return func(c *config) { c.stepper, c.stepperFor = nil, f }
}

// WithLoopOptions adds options for every loop's poller.NewLoop, such as
// poller.WithBackend or poller.WithStepBudget. The lock and the stepper are
// the Server's (each loop's own gvl.Lock, WithStepper's stepper).
//
// A Server's loops wait blocked in epoll_wait on their threads, poller's
// default: under bursty redis-benchmark load that served more requests
// with a lower p99 and less CPU than loops parked in Go's netpoller
// (bench/README.md, "Servers"). WithLoopOptions(poller.WithNetpoller(true))
// parks them.
func WithLoopOptions(opts ...poller.Option) Option {
	return func(c *config) { c.loopOpts = append(c.loopOpts, opts...) }
}

// WithReusePort makes Listen open one listening socket per loop with
// SO_REUSEPORT, so that the kernel spreads new connections over the loops.
// Without it (the default) one socket is watched by the first loop, which
// hands connections to the loops in turn. NewServer always does the
// latter.
func WithReusePort(on bool) Option {
	return func(c *config) { c.reusePort = on }
}

// WithNoDelay sets TCP_NODELAY on accepted TCP connections; the default is
// on, as in package net: a request/response server writes whole replies
// and must not wait for Nagle's algorithm.
func WithNoDelay(on bool) Option {
	return func(c *config) { c.noDelay = on }
}

// WithWriteLimit sets the unwritten output at which a connection is no
// longer read (DefaultWriteLimit). It panics if n is not positive.
func WithWriteLimit(n int) Option {
	positive("write limit", n)
	return func(c *config) { c.writeLimit = n }
}

// WithReadLimit sets the most unconsumed input a connection may hold
// (DefaultReadLimit). It panics if n is not positive.
func WithReadLimit(n int) Option {
	positive("read limit", n)
	return func(c *config) { c.readLimit = n }
}

// WithReadBufferSize sets the size of each loop's read buffer
// (DefaultReadBufferSize). It panics if n is not positive.
func WithReadBufferSize(n int) Option {
	positive("read buffer size", n)
	return func(c *config) { c.readBufSize = n }
}

// WithIdleTimeout closes connections that read and write nothing for d,
// with ErrIdleTimeout; Conn.SetIdleTimeout changes it for one connection.
// The default, 0, is no timeout.
func WithIdleTimeout(d time.Duration) Option {
	return func(c *config) { c.idle = max(d, 0) }
}

// WithAcceptErrorFunc sets a function told, on the accepting loop's
// goroutine, about each failure to accept a connection other than "none
// waiting": running out of fds (EMFILE, ENFILE), of memory... After one,
// the loop stops accepting for a while (5 ms, doubling up to 1 s while the
// failures go on) instead of spinning on a connection it cannot take. The
// default is no function; Stats counts the failures either way.
func WithAcceptErrorFunc(f func(err error)) Option {
	return func(c *config) { c.onAcceptError = f }
}
