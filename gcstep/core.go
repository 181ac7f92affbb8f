package gcstep

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// core is what the Runtimes of one process share: the readings, the
// prices, the budget, the handles and the bound. A step reads, decides,
// acts and learns, in that order, with mu held.
type core struct {
	env env
	cfg config

	mu    sync.Mutex // guards everything below but the atomics
	r     reading    // the last reading, reused: a step allocates nothing
	refs  int        // Runtimes open on it
	loops []*Loop
	works []*Work
	dec   []*func(Decision)

	base   uint64        // allocs when the last cycle ended, as far as a look saw
	seen   uint64        // the cycle count at the last look
	ours   uint64        // cycles of ours not yet seen complete
	cpuAt  time.Duration // the process's CPU time when tokens were last earned
	tokens time.Duration // the budget left
	since  time.Duration // tokens earned since the last cycle ended: the pace of cycles (decide)
	cost   ewma          // what a cycle of ours costs: the collector's CPU in it, or its wait (see collect)
	pacer  ewma          // what a cycle of the pacer's costs: the collector's CPU in it
	gcAt   time.Duration // the collector's CPU (reading.gc) at the last look
	// bg is a cycle of ours still marking when its step returned: it is
	// charged and learned from once a look sees it ended.
	bg struct {
		pending       bool
		cycles        uint64        // the count before it; 0: the process's first
		at, gc        time.Duration // when it started, and env.gcCPU then
		garbage, pile uint64
	}
	looks    ring     // what the last looks took, a cycle's wait aside
	wall     ewma     // how long a cycle holds the loop that waits for it
	relCost  ewma     // what a release costs, its faults back aside
	gogc     int      // the program's GOGC, as last read outside a kick
	limit    int64    // the memory limit the bound set; 0: none
	limits   [4]int64 // the last ones it set (bounds)
	stats    Stats
	prevSeen uint64 // allocs at the previous look: callers that report nothing; garbage after a cycle (learn)

	held        bool // the last step waited for a cycle's mark: the loop's delay is the cycle's
	releasing   bool
	refill      bool   // a release ended and no cycle of the pacer's since: the heap grows back into the pages it returned
	releasedAt  uint64 // allocs when the last release ended
	releasedFor int64  // the quiet stretch the last release was for (its start, ns)
	// For churn: the scavenger's CPU and the heap's resident pages at the
	// last look, whether the last cycle seen to end was ours, and the
	// bytes returned because of us (a release, or the scavenger after
	// our cycle) and not yet faulted back.
	scavAt    time.Duration
	heapAt    uint64
	oursLast  bool
	returned  uint64
	quietFrom int64 // the start of the quiet stretch the last snapshot found

	nextLook atomic.Int64 // Lull says no before this (env.now, ns)
	// wallV and wallT are wall's price and when it was learned, for Lull,
	// which reads them without mu.
	wallV, wallT atomic.Int64
	closed       atomic.Bool
	wg           sync.WaitGroup // the release goroutine

	hook    bool   // arm a finalizer after every cycle while the bound is on
	hooked  bool   // one is armed
	onClose func() // with procMu held, when the last Runtime leaves
}

// ewma is a price, 0 until first learned, each new measurement weighing
// a quarter (doc/policy.md).
type ewma struct {
	v    time.Duration
	n    int
	last time.Duration // env.now when it last learned
}

// at is the price as it stands at now: halved for every second since it
// was last learned, so that a price that keeps cycles from running is
// tried again within seconds (doc/policy.md).
func (e *ewma) at(now time.Duration) time.Duration {
	if e.n == 0 {
		return 0
	}
	return e.v >> min((now-e.last)/time.Second, 62)
}

// add adds d to the last price learned: the rest of its cost, known later.
func (e *ewma) add(d time.Duration) {
	if e.n == 1 {
		e.v += d
	} else {
		e.v += d / 4
	}
}

func (e *ewma) learn(x time.Duration, now time.Duration) {
	e.n, e.last = e.n+1, now
	if e.v == 0 {
		e.v = x
	}
	e.v += (x - e.v) / 4
}

// lookEvery is how long Lull says no after a look (a few microseconds,
// BenchmarkStep): a busy loop spends well under 1 % of a CPU on looks.
const lookEvery = time.Millisecond

// newCore makes a core over e; with hook, the bound moves after every
// cycle by itself (see armCycleHook), not only at looks; with start, its
// tokens start with startTokens' budget.
func newCore(e env, cfg config, hook, start bool) *core {
	c := &core{env: e, cfg: cfg, hook: hook}
	c.env.read(&c.r)
	c.base, c.seen, c.releasedAt, c.prevSeen = c.r.allocs, c.r.cycles, c.r.allocs, c.r.allocs
	c.gogc, c.scavAt, c.heapAt, c.gcAt = c.r.gogc, c.r.scavenged, c.r.heap, c.r.gc
	c.cpuAt = c.env.cpu()
	// The start's tokens (startTokens), once a process: a Runtime made
	// after the last one closed starts with none.
	if start {
		c.tokens = time.Duration(c.cfg.budget * float64(startTokens))
	}
	// releasedFor 0: a process that has done nothing since the Runtime
	// was made has no quiet stretch to release (from is 0 there).
	c.bound() // a program with no idle moment at all is bounded too
	return c
}

func (c *core) join(cfg config) *Runtime {
	rt := &Runtime{c: c, self: c.newLoop()}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refs++
	if f := cfg.decisions; f != nil {
		rt.dec = &f
		c.dec = append(c.dec, rt.dec)
	}
	return rt
}

// leave closes a Runtime on c; the last one closes c.
func (c *core) leave() {
	c.mu.Lock()
	c.refs--
	last := c.refs == 0
	if last {
		c.closed.Store(true)
	}
	c.mu.Unlock()
	if !last {
		return
	}
	c.wg.Wait()
	c.mu.Lock()
	c.unbound()
	c.env.read(&c.r) // no look comes after this one: repair from a reading of now
	c.repair()
	c.mu.Unlock()
	if c.onClose != nil {
		c.onClose()
	}
}

func (c *core) newLoop() *Loop {
	l := &Loop{c: c}
	c.mu.Lock()
	c.loops = append(c.loops, l)
	c.mu.Unlock()
	return l
}

// remove takes x out of the core's list s (loops, dec) under mu.
func remove[T comparable](c *core, s *[]T, x T) {
	c.mu.Lock()
	*s = slices.DeleteFunc(*s, func(y T) bool { return y == x })
	c.mu.Unlock()
}

// delayed records that work waited d behind a step. Behind a cycle that
// held the loop (more than one P: see step), that delay is part of the
// cycle's cost: the loop's work (and whoever waits for it: a producer
// blocked on a full pipe, a client) waited while a P could have run it.
func (c *core) delayed(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.StepsDelayedWork++
	c.stats.DelayedWorkTime += d
	if c.held {
		c.held = false
		c.cost.add(d)
		c.pay(d)
	}
}

// step is one look of handle l (nil: a Work's timer) with budget: read,
// learn what happened since the last look, decide, act.
func (c *core) step(l *Loop, budget time.Duration) bool {
	if c.closed.Load() || l != nil && l.closed.Load() {
		return false
	}
	if !c.mu.TryLock() {
		if budget > 0 {
			return false // another goroutine is stepping: it does what there is
		}
		c.mu.Lock()
	}
	defer c.mu.Unlock()
	start, waited := c.env.now(), c.stats.CycleTime
	c.stats.Steps++
	c.held = false
	c.env.read(&c.r)
	c.learn(l, start)

	s := c.snapshot(l, start, budget)
	act, out := decide(s)
	if s.quiet && (out == OutcomeNone || out == OutcomeBudget) {
		// Nothing to release this stretch, or nothing to pay for it with
		// while the program is quiet: no more wakes for it.
		c.releasedFor = c.quietFrom
	}
	switch out {
	case OutcomeBudget:
		c.stats.DeclinedBudget++
	case OutcomeGap:
		c.stats.DeclinedGap++
	}
	switch act {
	case doInline:
		if !c.collect(budget, s) {
			out = OutcomeSweep
		}
	case doRelease:
		c.release(s)
	}
	if len(c.dec) > 0 && out != OutcomeNone {
		d := s.Decision
		d.Outcome = out
		for _, f := range c.dec {
			(*f)(d)
		}
	}
	next := lookEvery
	if out == OutcomeBudget && !s.quiet {
		// No look before the budget could pay for the cycle's own
		// charge, and its pace allow it: it earns at most its share of
		// GOMAXPROCS CPUs. Not its churn: that shrinks as the heap grows
		// back into the pages it would return, and is looked at again.
		ch := charge(s.Cost, s.Pacer, s.Garbage, s.Pile)
		short := max(s.reserve+ch-s.Tokens, ch-s.Since)
		next = max(next, time.Duration(float64(short)/(c.cfg.budget*float64(s.procs))))
	}
	end := c.env.now()
	c.nextLook.Store(int64(end + next))
	c.stats.StepTime += end - start
	// A look is charged what the last eight took, but for a cycle's wait
	// (the cycle's own), at their median: one the OS preempted (another
	// thread ran meanwhile) or the first (it measures the pages) is not.
	c.looks.add(end - start - (c.stats.CycleTime - waited))
	c.pay(c.looks.median())
	return budget <= 0 && out == OutcomeDue
}

// learn brings the books up to the reading: cycles that ended, the
// bound, GOGC.
func (c *core) learn(l *Loop, now time.Duration) {
	r := &c.r
	if r.cycles != c.seen {
		c.earn() // the program's CPU before these cycles ended is not their pace's
		n := r.cycles - c.seen
		mine := min(n, c.ours)
		c.ours -= mine
		c.oursLast = mine == n
		if mine == 0 && !c.bg.pending && !c.releasing {
			// The runtime counts a cycle's CPU when it ends: what it
			// counted since the last look is these cycles' own.
			c.pacer.learn((r.gc-c.gcAt)/time.Duration(n), now)
		}
		c.stats.CyclesOther += n - mine
		c.refill = c.refill && mine == n
		// The garbage since they ended, after the last look: what the
		// heap holds beyond the live heap (and what is not swept yet),
		// at most what was allocated since that look.
		var after uint64
		if r.objects > r.live {
			after = min(r.objects-r.live, r.allocs-c.prevSeen)
		}
		c.sawCycles(after)
	}
	if c.bg.pending && r.cycles > c.bg.cycles {
		c.bg.pending = false
		if c.bg.cycles > 0 { // the process's first is neither charged nor priced (collect)
			if w := c.env.lastEnd() - c.bg.at; w > 0 {
				c.wall.learn(w, now)
			}
			c.cost.learn(r.gc-c.bg.gc, now)
			c.pay(charge(r.gc-c.bg.gc, c.pacer.v, c.bg.garbage, c.bg.pile))
		}
	}
	if l != nil && !l.observed.Load() && r.allocs != c.prevSeen {
		l.lastWork.Store(int64(now)) // a caller that reports nothing: allocation is its activity
	}
	c.gcAt, c.prevSeen = r.gc, r.allocs
	c.churn()
	c.repair()
	c.bound()
}

// sawCycles starts the books at the cycles the reading saw end, after
// bytes ago: garbage, pace.
func (c *core) sawCycles(after uint64) {
	c.seen, c.base, c.since, c.stats.LiveAfterCycle = c.r.cycles, c.r.allocs-after, 0, c.r.live
}

// earn brings the budget up to now: tokens at the budget's share of the
// program's CPU time since the last earning, and never more than
// budgetWindow's. Called with mu held.
func (c *core) earn() {
	cpu := c.env.cpu()
	earned := time.Duration(c.cfg.budget * float64(cpu-c.cpuAt))
	c.cpuAt = cpu
	c.stats.Earned += earned
	c.since += earned
	c.tokens = min(c.tokens+earned, time.Duration(c.cfg.budget*float64(budgetWindow)))
}

// repair puts back the program's GOGC where a save-and-restore of the
// program's put back the 1 % it read during a kick.
func (c *core) repair() {
	if c.r.gogc != kickGOGC {
		c.gogc = c.r.gogc
		return
	}
	if c.gogc != kickGOGC && c.env.setGCPercent(c.gogc) == kickGOGC {
		c.r.gogc = c.gogc
		c.stats.GOGCRepaired++
	}
}

func (c *core) snapshot(l *Loop, now time.Duration, budget time.Duration) snapshot {
	r := &c.r
	s := snapshot{
		Decision: Decision{At: now, Budget: max(budget, 0), Garbage: r.allocs - c.base, Live: r.live,
			Wall: c.wall.at(now), Cost: c.cost.v, Pacer: c.pacer.v},
		marking: c.bg.pending, minGarbage: c.cfg.minGarbage, procs: c.env.procs(),
		refill: c.refill && r.gogc >= 0,
	}
	if !c.unbounded() && r.goal > r.live {
		s.Pile = r.goal - r.live
	}
	if l != nil {
		s.Gap = l.gap()
	}
	if c.cfg.releaseDelay > 0 {
		if from, quiet := c.quiet(now); quiet && !c.releasing && from != c.releasedFor {
			s.quiet = true
			s.armed = r.allocs - c.releasedAt
			c.quietFrom = from
		}
	}
	if !s.quiet && s.Garbage < s.minGarbage {
		return s // a look that cannot act needs no prices, no budget, nor a system call
	}
	c.earn()
	s.Tokens, s.Since = c.tokens, c.since
	fault, ret := c.env.pagePrices()
	// After a cycle the scavenger keeps the heap's pages to a tenth
	// above those in use (see churn): the pages beyond that go, and
	// those the heap grows back into before the pacer's goal come back
	// as faults: each is returned and faulted back.
	inUse := r.heap - r.free
	keep, back := inUse+inUse/10, min(r.heap, r.goal+r.goal/10)
	if back > keep {
		s.Churn = time.Duration((back-keep)/pageSize) * (fault + ret)
	}
	if c.cfg.releaseDelay > 0 {
		// A release is a cycle, priced at the pacer's until one was
		// measured (ours before the pacer's was seen), and charged as
		// one; it returns the pages beyond the live heap, and a burst
		// like the last faults back those up to the pacer's goal.
		// Cycles keep that price in reserve once the process has had a
		// release: a stream that never pauses needs none.
		cost := c.relCost.v
		if c.relCost.n == 0 {
			cost = cmp.Or(c.pacer.v, c.cost.v)
		}
		s.release = charge(cost, s.Pacer, s.Garbage, s.Pile)
		if top := min(r.heap, r.goal); top > r.live {
			s.release += time.Duration((top-r.live)/pageSize) * fault
		}
		if c.stats.Releases > 0 {
			s.reserve = s.release
		}
	}
	return s
}

// collect runs a cycle, the loop waiting for its mark for at most wait,
// and charges it the collector's CPU; one still marking goes on beside
// the loop and is charged once a later look sees it end (learn), no other
// cycle of ours starting before. It reports whether a cycle started.
func (c *core) collect(wait time.Duration, s snapshot) bool {
	t0, g0 := c.env.now(), c.env.gcCPU()
	started, ended := c.env.collect(wait)
	t1 := c.env.now()
	if !started {
		c.stats.DeclinedSweep++
		return false
	}
	c.ours++
	// With one P the loop's wait is the collector's time on its P,
	// counted in its CPU: neither the wait nor the work it delayed is
	// extra (doc/policy.md).
	c.held = wait > 0 && s.procs > 1
	c.stats.CyclesInline++
	c.stats.CycleTime += t1 - t0
	if !ended {
		c.stats.CyclesOutlasted++
	}
	if c.r.cycles == 0 {
		// The process's first cycle is cold (1.3 ms where the next take
		// 0.2) and is the pacer's anyway: not extra, and no price.
		if !ended {
			c.bg.pending, c.bg.cycles = true, 0 // learn leaves it alone
		}
		return true
	}
	if ended {
		// The cycle ended just now: the garbage counts from here, not
		// from the next look, a millisecond of allocation later.
		c.env.read(&c.r)
		if c.r.cycles != c.seen {
			c.ours--
			c.oursLast = true
			c.sawCycles(0)
		}
		// A held loop's wait if longer: its wakes cost the process more
		// than the collector's CPU (doc/policy.md; its work's delay comes
		// with delayed).
		cost := c.r.gc - g0
		if c.held {
			cost = max(cost, t1-t0)
		}
		c.gcAt = c.r.gc
		c.cost.learn(cost, t1)
		c.wall.learn(t1-t0, t1)
		c.pay(charge(cost, c.pacer.v, s.Garbage, s.Pile))
		return true
	}
	c.bg.pending, c.bg.cycles, c.bg.at, c.bg.gc = true, c.r.cycles, t0, g0
	c.bg.garbage, c.bg.pile = s.Garbage, s.Pile
	return true
}

func (c *core) pay(d time.Duration) {
	c.tokens -= d
	c.stats.Charged += d
	c.wallV.Store(int64(c.wall.v))
	c.wallT.Store(int64(c.wall.last))
}

// release starts the release of a quiet stretch on a goroutine of its
// own, decided at s: one cycle (debug.FreeOSMemory), so that what
// sync.Pool holds survives in its victim cache for the next burst; a
// second cycle, which frees it, returned a tenth more of a server's
// memory and cost its next burst more than its faults (doc/policy.md).
func (c *core) release(s snapshot) {
	from, _ := c.quiet(c.env.now())
	c.releasing, c.releasedFor = true, from
	before := c.r.released
	c.wg.Add(1)
	c.env.spawn(func() {
		defer c.wg.Done()
		t0, g0 := c.env.now(), c.env.gcCPU()
		c.env.release()
		t1, g1 := c.env.now(), c.env.gcCPU()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.ours++ // its cycle is ours
		c.env.read(&c.r)
		if c.r.heap < c.heapAt {
			c.returned = c.heapAt - c.r.heap // a new release: the pages out are its
		}
		c.scavAt, c.heapAt = c.r.scavenged, c.r.heap
		c.learn(nil, t1)
		// The collector's CPU in its cycle, or the wall time if
		// longer (it scavenges on its goroutine); not the process's CPU,
		// which counts what open streams do meanwhile.
		cost := max(g1-g0, t1-t0)
		c.relCost.learn(cost, t1)
		c.pay(charge(cost, s.Pacer, s.Garbage, s.Pile))
		c.stats.Releases++
		if c.r.released > before {
			c.stats.ReleasedBytes += c.r.released - before
		}
		c.releasing, c.releasedAt, c.refill = false, c.r.allocs, true
	})
}

// churn charges what returning pages the Runtime made go costs
// (doc/policy.md): the scavenger's CPU after a cycle of ours, and the
// faults that bring back what it or a release of ours returned, at the
// measured price a page. Called with mu held.
func (c *core) churn() {
	r := &c.r
	var d time.Duration
	// The heap's resident pages go down only when pages are returned,
	// and up when they are faulted in: /memory/classes/heap/released
	// also grows when the heap maps new address space, which is not a
	// return.
	if c.oursLast {
		d = r.scavenged - c.scavAt
		if r.heap < c.heapAt {
			c.returned += c.heapAt - r.heap
		}
	}
	if r.heap > c.heapAt {
		if back := min(r.heap-c.heapAt, c.returned); back > 0 {
			c.returned -= back
			price, _ := c.env.pagePrices()
			d += time.Duration(back/pageSize) * price
		}
	}
	c.scavAt, c.heapAt = r.scavenged, r.heap
	if d > 0 {
		c.pay(d)
		c.stats.Churn += d
	}
}

const pageSize = 4 << 10 // the page the OS faults back in

// quiet reports whether every loop and Work has been quiet for the quiet
// period at now, and since when (the latest end of work, ns; -1 while a
// Work has work in flight). Called with mu held.
func (c *core) quiet(now time.Duration) (from int64, quiet bool) {
	for _, l := range c.loops {
		from = max(from, l.lastWork.Load())
	}
	for _, w := range c.works {
		if w.unpaused() > 0 {
			return -1, false
		}
		from = max(from, w.end.Load())
	}
	return from, int64(now)-from >= int64(c.cfg.releaseDelay)
}

// releaseDue is Loop.NextStep: how long until the quiet period ends. The
// look then says whether the tokens pay for a release; a quiet process
// earns none, so it is the stretch's only one.
func (c *core) releaseDue() (time.Duration, bool) {
	if c.cfg.releaseDelay == 0 || c.closed.Load() {
		return 0, false
	}
	if !c.mu.TryLock() {
		return lookEvery, true // a step runs: ask again in a moment
	}
	defer c.mu.Unlock()
	now := c.env.now()
	from, _ := c.quiet(now)
	if c.releasing || from < 0 || from == c.releasedFor {
		return 0, false // with work in flight, the End that leaves none arms its own timer
	}
	return max(time.Duration(from)+c.cfg.releaseDelay-now, 0), true
}
