package poller

import (
	"fmt"
	"time"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
)

// DefaultStepBudget bounds one idle step when WithStepBudget is not given.
//
// One millisecond: long enough for a useful slice of collection work, and
// short enough that a due timer or a call's timeout, which a step may
// delay by about one budget, is late by no more than the usual scheduling
// noise.
const DefaultStepBudget = time.Millisecond

// An Option configures a Mux made by New or a Loop made by NewLoop. A nil
// Option is ignored, in every package of this module.
type Option func(*config)

type config struct {
	lock    *gvl.Lock
	stepper gcstep.Stepper
	budget  time.Duration
	backend Backend
	// onThread: a Loop's blocking waits block its thread (WithNetpoller).
	onThread bool
}

func newConfig(opts []Option) config {
	c := config{budget: DefaultStepBudget, backend: BackendDefault, onThread: true}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.backend == BackendDefault {
		c.backend = defaultBackend
	}
	return c
}

// WithGVL makes waits cooperate with l: the caller holds l while calling,
// a wait that may block releases it (through l.Blocking) and reacquires it
// before returning, and no idle step is taken while another goroutine waits
// for l. Without a lock nobody is ever waiting and nothing is released.
func WithGVL(l *gvl.Lock) Option {
	return func(c *config) { c.lock = l }
}

// WithStepper sets the idle work: s.Step is called when a wait would
// otherwise block, as described in the package comment. Without a stepper
// (or with nil) there is no idle work and the package is a plain
// multiplexer.
func WithStepper(s gcstep.Stepper) Option {
	return func(c *config) { c.stepper = s }
}

// WithStepBudget sets the bound passed to each Step call; it defaults to
// DefaultStepBudget. A wait steps only while at least one budget of its
// timeout (or of the time to the next timer) is left, so a step makes a call
// overrun its timeout, or a timer fire late, by at most about one budget.
// It panics if d is not positive.
func WithStepBudget(d time.Duration) Option {
	if d <= 0 {
		panic(fmt.Sprintf("poller: step budget %v is not positive", d))
	}
	return func(c *config) { c.budget = d }
}

// WithBackend chooses the system call a Mux or Loop waits with. The default
// is epoll on Linux and poll elsewhere. New and NewLoop panic for a backend
// the platform lacks (an error wrapping ErrBackend); Backends lists those
// it has.
func WithBackend(b Backend) Option {
	return func(c *config) { c.backend = b }
}

// WithNetpoller(true) makes a Loop's blocking waits park the loop
// goroutine in Go's netpoller, where the backend allows it (epoll, on
// Linux; see Loop), instead of blocking its thread in the backend's wait
// (epoll_wait, ppoll, select), the default. Parking suits a loop that
// consumes a stream written by goroutines of the same program: the writer
// fills the pipe until it blocks and its own thread then runs the loop, so
// the loop is woken a third as often and keeps up when another process
// takes a core (the urandom demo with a core busy: 0.93-1.09x the wall
// time of goroutine readers, against 1.35-1.43x blocking). It costs a
// request/response loop: each wait makes four system calls instead of
// one, and each wakeup goes through the netpoller (BenchmarkReqResp over
// a socketpair: 2.8x the p99 and 1.3x the CPU per request), hence the
// default. It is not for a loop goroutine locked to its thread
// (runtime.LockOSThread): the runtime must hand a parked locked goroutine
// back to its own thread, one more wakeup per wait. A Mux ignores it: its
// waits park only when it shares a lock (see Mux).
func WithNetpoller(use bool) Option {
	return func(c *config) { c.onThread = !use }
}

// A Backend names the kernel interface a Mux or Loop waits with.
type Backend uint8

const (
	// BackendDefault is epoll on Linux and poll elsewhere.
	BackendDefault Backend = iota
	// BackendEpoll waits with epoll(7): cost independent of how many fds
	// are registered. Linux only.
	BackendEpoll
	// BackendPoll waits with ppoll(2) and a nil signal mask on Linux (no
	// rt_sigprocmask per call), poll(2) on darwin and freebsd.
	BackendPoll
	// BackendSelect waits with select(2): fds must be below FD_SETSIZE.
	BackendSelect
)

// String returns "epoll", "poll", "select" or "default"; benchmark names
// use it.
func (b Backend) String() string {
	switch b {
	case BackendDefault:
		return "default"
	case BackendEpoll:
		return "epoll"
	case BackendPoll:
		return "poll"
	case BackendSelect:
		return "select"
	}
	return fmt.Sprintf("Backend(%d)", uint8(b))
}

// Backends returns the backends available on this platform, the default
// first.
func Backends() []Backend {
	return append([]Backend(nil), platformBackends...)
}

func (b Backend) available() bool {
	for _, p := range platformBackends {
		if p == b {
			return true
		}
	}
	return false
}
