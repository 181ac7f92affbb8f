package gcstep

import (
	"runtime"
	"slices"
)

// The bound under GOGC=off: see Runtime and doc/policy.md.

// unbounded reports whether the program has no heap goal of its own:
// GOGC=off and no memory limit but the bound's. Called with mu held.
func (c *core) unbounded() bool {
	return c.r.gogc < 0 && (c.r.limit == noLimit || c.bounds(c.r.limit))
}

// bounds reports whether limit is one the bound set while it is on: the
// last, or an earlier one a program that saved the limit put back.
func (c *core) bounds(limit int64) bool {
	return c.limit != 0 && limit != 0 && slices.Contains(c.limits[:], limit)
}

// bound sets or moves the limit where the program is unbounded, and
// drops it where the program has a goal of its own again. Called with mu
// held, after a reading.
func (c *core) bound() {
	if c.closed.Load() || !c.unbounded() {
		if c.bounds(c.r.limit) && c.r.gogc >= 0 {
			c.unbound() // GOGC is the program's again
		} else if c.limit != 0 && !c.bounds(c.r.limit) {
			c.limit = 0 // the program set its own limit: it stays
		}
		return
	}
	want := boundFor(&c.r)
	if c.limit == 0 || c.r.limit != c.limit || want > c.limit+c.limit/8 || want < c.limit-c.limit/8 {
		if got := c.env.setMemoryLimit(want); got != c.r.limit {
			c.env.setMemoryLimit(got) // the program set its own meanwhile
			c.limit = 0
			return
		}
		c.limit, c.r.limit = want, want
		c.limits[c.stats.Bounds%uint64(len(c.limits))] = want
		c.stats.Bounds++
	}
	if c.hook && !c.hooked {
		c.hooked = true
		armCycleHook(c)
	}
}

// unbound takes the limit back if it is still the bound's. Called with
// mu held.
func (c *core) unbound() {
	if c.limit == 0 {
		return
	}
	if got := c.env.setMemoryLimit(noLimit); !c.bounds(got) {
		c.env.setMemoryLimit(got) // the program's: it stays
	}
	c.limit = 0
}

// boundFor is the memory limit at which the runtime's heap goal is
// GOGC=100's: the live heap plus as much again and the stacks and
// globals it scans, at least 4 MiB (runtime/mgcpacer.go,
// gcPercentHeapGoal and defaultHeapMinimum). The runtime takes its goal
// under a limit as the limit less what it maps besides heap objects and
// free heap pages, less a headroom of 3 % and at least 1 MiB
// (memoryLimitHeapGoal), so the bound adds those back.
func boundFor(r *reading) int64 {
	goal := max(r.live+r.live+r.scanned, heapMinimum)
	var other uint64
	if r.mapped > r.objects+r.free {
		other = r.mapped - r.objects - r.free
	}
	headroom := max(goal*3/97, 1<<20)
	return int64(goal + other + headroom)
}

// heapMinimum is the runtime's smallest heap goal at GOGC=100.
const heapMinimum = 4 << 20

// A cycleHook is an object whose finalizer runs once after each cycle
// and moves the bound, then arms the next; it stops once the bound is
// off or the core is closed.
type cycleHook struct{ c *core }

func armCycleHook(c *core) {
	h := &cycleHook{c: c}
	runtime.SetFinalizer(h, func(h *cycleHook) {
		c := h.c
		c.mu.Lock()
		defer c.mu.Unlock()
		c.hooked = false
		if c.closed.Load() {
			return
		}
		c.env.read(&c.r)
		c.learn(nil, c.env.now()) // arms the next hook while the bound is on
	})
}
