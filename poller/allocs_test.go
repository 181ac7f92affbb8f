package poller_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

// A wait makes no garbage: a library that is there to collect garbage in
// idle time must not make it at every idle moment. Each case waits on a
// pipe that stays readable, so that every wait returns at once; the
// parked waits (a Mux or Loop sharing a lock, on Linux) still arm their
// epoll instance and park in the netpoller.
func TestWaitsDoNotAllocate(t *testing.T) {
	type waitCase struct {
		name string
		wait func() error
	}
	var cases []waitCase
	for _, be := range poller.Backends() {
		for _, locked := range []bool{false, true} {
			for _, step := range []bool{false, true} {
				name := fmt.Sprintf("%v/lock=%v/step=%v", be, locked, step)
				m, lock := allocsMux(t, be, locked, step)
				fds := allocsReadable(t)
				pfd := []unix.PollFd{{Fd: int32(fds[0]), Events: unix.POLLIN}}
				for _, timeout := range []time.Duration{-1, 0} {
					held := func(f func() error) func() error {
						if lock == nil {
							return f
						}
						return func() error {
							lock.Acquire()
							defer lock.Release()
							return f()
						}
					}
					cases = append(cases,
						waitCase{fmt.Sprintf("Mux/%s/WaitFD/timeout=%v", name, timeout), held(func() error {
							ev, err := m.WaitFD(fds[0], poller.Read, timeout)
							return expect(ev&poller.Read != 0, err)
						})},
						waitCase{fmt.Sprintf("Mux/%s/Poll/timeout=%v", name, timeout), held(func() error {
							n, err := m.Poll(pfd, timeout)
							return expect(n == 1, err)
						})},
						waitCase{fmt.Sprintf("Mux/%s/Select/timeout=%v", name, timeout), held(func() error {
							r, _, _, err := m.Select(fds[:1], nil, nil, timeout)
							return expect(len(r) == 1, err)
						})},
						waitCase{fmt.Sprintf("Mux/%s/Select/many/timeout=%v", name, timeout), held(func() error {
							r, w, _, err := m.Select(fds, fds, nil, timeout)
							return expect(len(r) == len(fds) && len(w) == 0, err)
						})},
					)
				}
			}
		}
		for _, netpoller := range []bool{false, true} {
			for _, step := range []bool{false, true} {
				name := fmt.Sprintf("Loop/%v/netpoller=%v/step=%v", be, netpoller, step)
				l, lock := allocsLoop(t, be, netpoller, step)
				fds := allocsReadable(t)
				calls := 0
				require.NoError(t, l.Add(fds[0], poller.Read, func(int, poller.Events) { calls++ }))
				cases = append(cases,
					waitCase{name + "/ready", func() error {
						lock.Acquire()
						defer lock.Release()
						before := calls
						_, err := l.RunOnce(time.Second)
						return expect(calls == before+1, err)
					}},
					waitCase{name + "/wake", func() error {
						lock.Acquire()
						defer lock.Release()
						l.Wake()
						_, err := l.RunOnce(time.Second)
						return err
					}},
				)
			}
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			allocs := testing.AllocsPerRun(100, func() {
				if e := c.wait(); e != nil && err == nil {
					err = e
				}
			})
			require.NoError(t, err)
			assert.Zero(t, allocs, "allocations per wait")
		})
	}
}

// expect returns err, or an error if ok is false.
func expect(ok bool, err error) error {
	if err == nil && !ok {
		err = fmt.Errorf("the readable fd was not reported")
	}
	return err
}

// allocsStepper returns the runtime stepper, closed at the test's end, or
// nil.
func allocsStepper(t *testing.T, step bool) gcstep.Stepper {
	if !step {
		return nil
	}
	rt := gcstep.NewRuntime()
	t.Cleanup(rt.Close)
	return rt
}

// allocsMux returns a Mux on be, sharing a new lock if locked (returned
// too), with the runtime stepper if step.
func allocsMux(t *testing.T, be poller.Backend, locked, step bool) (*poller.Mux, *gvl.Lock) {
	opts := []poller.Option{poller.WithBackend(be)}
	var lock *gvl.Lock
	if locked {
		lock = gvl.New()
		opts = append(opts, poller.WithGVL(lock))
	}
	if st := allocsStepper(t, step); st != nil {
		opts = append(opts, poller.WithStepper(st))
	}
	return poller.New(opts...), lock
}

// allocsLoop returns a Loop on be holding a new lock, its waits parked in
// the netpoller if netpoller, with the runtime stepper if step.
func allocsLoop(t *testing.T, be poller.Backend, netpoller, step bool) (*poller.Loop, *gvl.Lock) {
	lock := gvl.New()
	opts := []poller.Option{poller.WithBackend(be), poller.WithGVL(lock), poller.WithNetpoller(netpoller)}
	if st := allocsStepper(t, step); st != nil {
		opts = append(opts, poller.WithStepper(st))
	}
	l, err := poller.NewLoop(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l, lock
}

// allocsReadable returns the read ends of three pipes that stay readable
// (a byte is written to each and never read).
func allocsReadable(t *testing.T) []int {
	var fds []int
	for range 3 {
		p := newPipe(t)
		p.write(p.w, "x")
		fds = append(fds, p.r)
	}
	return fds
}
