package gcstep

import (
	"math"
	"slices"
	"time"
)

// The policy prices every action it may take at an idle moment and takes
// the cheapest, or none (doc/policy.md, "One decision, priced"). What it
// weighs:
//
//   - memory, as the share of the process's footprint it holds, for how
//     long: the exchange rate x (WithExchangeRate) is the CPU worth
//     spending to hold the whole footprint lower for a second;
//   - CPU: a cycle's collector CPU, learned from the cycles it ran or
//     started;
//   - delay: how long the loop's next event waits behind an inline cycle
//     (or the start of a background one), from the loop's own record of
//     its gaps, priced one for one with CPU (nothing with WithStreams);
//   - page faults: what the next burst pays to fault released memory
//     back in, measured on this machine once (probeFault).
//
// Garbage is inventory: it piles up as the program allocates, holding it
// costs memory, and clearing it costs a cycle, whatever its size. What a
// pile costs is the memory it makes the process keep: a cycle frees the
// garbage, but the runtime keeps the pages for the next allocations, so
// the footprint stays where the highest pile took it, not at its average
// (which is half as high). The cheapest policy clears the garbage when
// holding it since the last cycle, priced at that (x/M times the pile,
// twice the integral of the garbage over time), has cost as much as the
// cycle: the classic rule of inventory (at the economic order quantity,
// holding and ordering cost the same), which needs no forecast of the
// allocation rate and catches both a fast burst (a lot of garbage for a
// short time) and a program that allocated and went idle (a little
// garbage for a long time, which GOGC=off would keep for ever). Each
// action has its price: inline, background (which cannot collect what is
// allocated while it marks), and the runtime's own pacer at its heap
// goal, which costs the step nothing; the cheaper of ours runs once
// holding has cost its price, unless leaving the garbage to the pacer
// costs less by the second.

// prices is what the policy has learned of this machine and program.
// Guarded by Runtime.mu.
type prices struct {
	inlineCPU ratio  // collector CPU of an inline cycle, per model(live)
	bgCPU     ratio  // collector CPU of a background cycle, per model(live)
	kick      recent // wall time the loop spends starting a background cycle, ns; 0 until three starts were timed
	bgMark    recent // how long a started cycle marks, from its start to its end, ns; 0 until three were timed
	release   ewma   // wall time of a release (two cycles and the scavenge), ns

	held    float64       // byte-seconds of garbage held since the last cycle
	heldAt  time.Duration // when held was last brought up to date
	heldOf  uint64        // the garbage then, bytes
	recent  float64       // the allocation rate between the last two looks, bytes a second
	cleanAt time.Duration // when the last cycle was seen to end

	fault time.Duration // faulting one released page back in; 0 until probed
}

// pageSize is the size of the pages a release returns and a burst faults
// back in.
const pageSize = 4096

func newPrices() prices {
	return prices{inlineCPU: newRatio(cpuPrior), bgCPU: newRatio(cpuPrior)}
}

// cpuPrior is what a cycle is believed to cost before one was measured,
// as a multiple of the model: on the low side, so that a cycle runs and
// is measured. A prior on the high side would never be corrected on a
// machine where cycles are cheap, since the policy would never run one.
const cpuPrior = 0.5

// hold brings the garbage held up to now, when there are garbage bytes:
// the area under the garbage's curve, taken as straight between looks.
func (p *prices) hold(garbage uint64, now time.Duration) {
	if dt := now - p.heldAt; dt > 0 {
		p.held += (float64(p.heldOf) + float64(garbage)) / 2 * dt.Seconds()
		p.recent = 0
		if garbage > p.heldOf {
			p.recent = float64(garbage-p.heldOf) / dt.Seconds()
		}
	}
	p.heldAt, p.heldOf = now, garbage
}

// cleared starts the count afresh: a cycle was seen to have ended, with
// garbage bytes made since it did, out of allocated bytes made since the
// last look. When between the two looks it ended is not known: the
// program is taken to have allocated evenly over that time, so that it
// ended as far back as its garbage takes to make.
func (p *prices) cleared(garbage, allocated uint64, now time.Duration) {
	since := p.heldAt
	switch {
	case since <= 0 || since > now:
		since = now
	case allocated > 0 && garbage < allocated:
		since = now - time.Duration(float64(now-since)*float64(garbage)/float64(allocated))
	}
	p.held = float64(garbage) / 2 * (now - since).Seconds()
	p.heldAt, p.heldOf, p.cleanAt = now, garbage, since
}

// rate is the allocation rate since the last cycle, bytes a second.
func (p *prices) rate(garbage uint64, now time.Duration) float64 {
	if d := now - p.cleanAt; d > 0 {
		return float64(garbage) / d.Seconds()
	}
	return 0
}

// recent is the median of the last few measurements of a price, seeded
// with its prior. A cycle's cost has a tail that a measurement or two
// should not set: a cold first cycle faults the collector's metadata in,
// a sleeping vCPU takes milliseconds to wake for the stop-the-world, a
// neighbour takes the other CPU for a while. A price set by one such
// measurement (a moving average moved a quarter of the way to it) made
// a cycle of ours look dearer than the pacer's, and once the pacer's
// pile is resident no cycle of ours runs again to correct it (see
// decide). The median moves once most of the recent measurements agree.
type recent struct {
	s    [recentWindow]float64
	next int
}

// recentWindow is how many measurements a price is the median of.
const recentWindow = 5

func newRecent(prior float64) recent {
	var r recent
	for i := range r.s {
		r.s[i] = prior
	}
	return r
}

func (r *recent) add(v float64) {
	r.s[r.next] = v
	r.next = (r.next + 1) % recentWindow
}

func (r *recent) median() float64 {
	sorted := r.s
	slices.Sort(sorted[:])
	return sorted[recentWindow/2]
}

// get is the price as a duration, for a recent of nanoseconds.
func (r *recent) get() time.Duration { return time.Duration(r.median()) }

// A ratio is a learned multiple of the cost model.
type ratio struct{ recent }

func newRatio(prior float64) ratio { return ratio{newRecent(prior)} }

func (r *ratio) learn(measured, modelled time.Duration) {
	if measured <= 0 || modelled <= 0 {
		return
	}
	r.add(min(max(float64(measured)/float64(modelled), 1.0/16), 16))
}

func (r *ratio) of(live uint64) time.Duration {
	return time.Duration(r.median() * float64(model(live)))
}

// An ewma is a moving average of durations, 0 until the first sample.
type ewma struct{ v float64 }

func (e *ewma) add(d time.Duration) {
	if e.v == 0 {
		e.v = float64(d)
		return
	}
	e.v += (float64(d) - e.v) / 4
}

func (e ewma) get() time.Duration { return time.Duration(e.v) }

// action is what an idle moment does about garbage.
type action int

const (
	none       action = iota // nothing: not due, or the pacer's cycle is cheaper
	inline                   // a whole cycle in the step
	background               // a cycle started for the runtime to run concurrently
	trim                     // a release in the middle of activity (see trimPays)
)

// A plan is the decision at one idle moment.
type plan struct {
	act    action
	cost   float64       // act's price, in seconds of CPU: CPU and delay, and memory for a background cycle
	fixed  float64       // the part of cost that does not grow with the pile: CPU and delay
	float  float64       // for a background cycle, what its marking costs a second (see floating)
	charge time.Duration // what act is expected to take from the CPU cap
	wait   time.Duration // how much longer holding the garbage takes to cost as much
	why    *uint64       // the Stats counter of an idle moment that declined, if any
	// backstop says the pile of a program with no heap goal reached
	// offBound: act runs now, past the CPU cap if need be.
	backstop bool
	// ours and pacer are what clearing the garbage costs a second, with
	// our cycles at their economic pile and with the pacer's at its
	// trigger, where the two were compared (for Decision).
	ours, pacer float64
}

// decide is the policy for a cycle: at an idle moment of loop l with
// budget, it prices an inline and a background cycle at the heap as
// read in rt.r, takes the cheaper, and says whether holding the garbage
// has cost that much yet, or when it will, or whether the pacer's cycle
// comes first. rt.mu must be held.
func (rt *Runtime) decide(l *Loop, budget, now time.Duration, busy bool) plan {
	live := rt.r.live
	garbage := rt.r.allocs - rt.baseAllocs
	x, m := rt.cfg.exchange, float64(rt.footprint())
	r := rt.p.rate(garbage, now) // the allocation rate since the last cycle
	best := plan{why: &rt.stats.DeclinedBudget}
	if budget <= 0 {
		budget = l.lastBudget()
	}
	wall := rt.cost.estimate(live, now)
	onePs := rt.env.procs() == 1
	// With one P there is no other CPU for a started cycle to mark on:
	// it marks on the loop's P as an inline one does, but beside the
	// program's allocations, so it collects less for as much of the
	// loop's time (doc/policy.md, "One P"). So there a cycle always
	// starts inline, even one that does not fit the budget: the step
	// waits for it no longer than the budget, and the rest of it runs
	// concurrently, as a started one would have.
	if !busy && (budget <= 0 || float64(wall) <= planFactor*float64(budget) || onePs) {
		// Charged its wall time, with one P its CPU (see inline).
		cpu := rt.p.inlineCPU.of(live)
		held := wall
		if onePs {
			// With one P, the cycle's wall time beyond its CPU is the
			// program's other goroutines running, which would have
			// kept the loop's next event waiting as long without it:
			// the delay the cycle adds is its own CPU's.
			held = min(wall, cpu)
		}
		c := (cpu + rt.delayCost(l, held)).Seconds()
		best = plan{act: inline, cost: c, fixed: c, charge: held}
	}
	if rt.cfg.background && (!onePs || busy) {
		cpu := rt.p.bgCPU.of(live)
		// While it marks, what the program allocates is not collected:
		// as much garbage again is held that much longer. How long a
		// started cycle marks is learned from the cycles started before
		// (bgMark); until three were timed, as long as an inline cycle.
		mark := rt.bgMark(wall).Seconds()
		fixed := (cpu + rt.delayCost(l, rt.p.kick.get())).Seconds()
		c := fixed + x/m*float64(garbage)*mark
		if best.act == none || c < best.cost {
			best = plan{act: background, cost: c, fixed: fixed, float: floating(x, m, r, mark), charge: cpu}
		}
	}
	if best.act == none {
		return best
	}
	fast := max(r, rt.p.recent)
	// Holding the garbage until now has cost this much, at the pile's
	// footprint: twice the integral, the pile's height for as long as
	// it took to grow, when it grows steadily. It runs on at
	// 2·garbage·x/M a second, growing with the allocation rate.
	pile := 2 * x / m // the price of a byte of the pile for a second
	// What the marking misses grows with the pile (as much again, held
	// a mark longer) and so costs the same by the second at any height:
	// it decides between actions, not when one falls due.
	short := best.fixed - pile*rt.p.held
	if short > 0 {
		// At the faster of the rate since the last cycle and the rate
		// since the last look: a wait that underestimates lets the
		// pile grow past its price, and the highest pile is what the
		// footprint keeps.
		best.wait = timeToHold(short, pile*float64(garbage), pile*fast)
	}
	if noGoal(rt.r.goal) && garbage >= offBound(live) {
		// Nothing else collects, and the pile is as high as GOGC=100
		// would let it grow: run now, whatever the holding rule and
		// the cap say, so that a loop seldom idle, which earns little
		// of the cap, does not let the heap grow without bound.
		best.wait, best.backstop = 0, true
		return best
	}
	if rt.r.goal > live && !noGoal(rt.r.goal) {
		// The pacer's own cycle, at its trigger (pacerShare of the way
		// from the live heap to the goal, at the earliest): like a
		// background cycle, but no step pays for it. Left to it, the
		// garbage piles up to that runway R every time, and a second
		// costs c·r/R + x·R/M; with ours, each at its best garbage g,
		// c·r/g + x·g/M. Ours must be cheaper and come first. No
		// margin in the pacer's favour: leaving the garbage to it is
		// the one choice that is not taken back (its pile stays
		// resident, below), where a cycle of ours priced wrong is
		// corrected by the next measurement (doc/policy.md, "The
		// pacer").
		runway := pacerShare * float64(rt.r.goal-live)
		resident := float64(garbage+rt.cushion(garbage)) >= runway
		if resident {
			// The pile is back since the last trim, whichever price
			// is the lower now: a look declined for the pacer sees it
			// as well as one that prices ours.
			rt.endTrimHold(now)
		}
		if r <= 0 || float64(garbage) >= runway {
			return plan{why: &rt.stats.DeclinedPacer, wait: recheck, cost: best.cost}
		}
		pacer := perSecond(rt.p.bgCPU.of(live).Seconds(), r, runway, m, x)
		if mark := rt.p.bgMark.get(); mark > 0 {
			// The pacer's cycles are started ones too, and mark as
			// ours do (once ours were timed).
			pacer += floating(x, m, r, mark.Seconds())
		}
		g := eoq(best.fixed, r, m, x)
		ours := perSecond(best.fixed, r, g, m, x) + best.float
		// A loop seldom idle earns too little of the CPU cap for
		// cycles of ours to come before the pacer's trigger at this
		// allocation rate: those it runs only spend the bucket, and
		// once it is dry the pacer's pile comes and stays resident
		// after all. While the bucket holds half its store or more,
		// the cycles are paid for now, and a loop near the line (the
		// urandom child with both CPUs) keeps them (doc/policy.md,
		// "What the cap can pay for").
		if g >= runway || pacer <= ours || rt.capPile(best.charge, now) >= runway && rt.tokens < rt.capacity()/2 {
			return plan{why: &rt.stats.DeclinedPacer, wait: recheck, cost: best.cost, ours: ours, pacer: pacer}
		}
		best.ours, best.pacer = ours, pacer
		// Garbage that fits in pages the heap holds already costs no
		// footprint: the process keeps them either way. Where they
		// reach as far as the pacer's trigger (its pile is resident:
		// it collected before, or the program freed as much), the
		// pacer's cycle comes before the heap needs a page more, and
		// a cycle of ours would lower nothing. The pile the pages
		// hold is the one to beat: once the live heap grows, or the
		// scavenger or a release returns pages, ours run again; a
		// trim returns them now, where that pays.
		if resident {
			if rt.p.recent <= 0 {
				rt.trim.stuck = 0 // a lull: the quiet stretch's release is for it
			} else if rt.trim.stuck == 0 {
				rt.trim.stuck = now
			}
			if rt.trim.stuck > 0 && !rt.releasing && rt.trimPays(now, garbage, g, float64(rt.r.goal-live)) {
				return plan{act: trim, cost: best.cost, charge: rt.releaseEstimate(now), ours: ours, pacer: pacer}
			}
			return plan{why: &rt.stats.DeclinedCushion, wait: recheck, cost: best.cost, ours: ours, pacer: pacer}
		}
	}
	return best
}

// capPile is the least pile of garbage the CPU cap pays a cycle for,
// at charge a cycle, if the program goes on as it did lately (over
// earnWindow): once the bucket's store is spent, cycles come no more
// often than the bucket earns their charge, and the program allocates
// its usual rate meanwhile. Zero until the cap's earnings were watched
// for a hundredth of earnWindow. rt.mu must be held.
func (rt *Runtime) capPile(charge, now time.Duration) float64 {
	rt.refill(now)
	if rt.earnedOver < float64(earnWindow)/100 || charge <= 0 {
		return 0
	}
	if rt.earned <= 0 {
		return math.Inf(1)
	}
	// Bytes allocated per cap-second earned, times the charge.
	return rt.allocated / rt.earned * float64(charge)
}

// earnWindow is how far back capPile looks at what the cap earned and
// the program allocated: long against a loop's busy stretches, so that
// one of them does not read as a loop that stopped idling, and short
// against a program's phases (doc/policy.md, "What the cap can pay
// for").
const earnWindow = time.Second

// endTrimHold records how long the last trim held the footprint down,
// until end, if it still did: the pacer's pile is back, or the program
// went quiet and the quiet stretch's release holds the pages from there.
// rt.mu must be held.
func (rt *Runtime) endTrimHold(end time.Duration) {
	if rt.trim.at > 0 && !rt.trim.back {
		rt.trim.held.add(max(end-rt.trim.at, 1))
		rt.trim.back = true
	}
}

// bgMark is how long a started cycle marks, as learned from the last
// ones started (Runtime.settleBackground), or guess until three were
// timed. With more than one P a started cycle marks beside the program
// on a share of a P (a quarter of GOMAXPROCS is the collector's), and on
// this VM's streams it marked two to three times as long as an inline
// cycle, whose loop sleeps while its P marks too (doc/policy.md, "A
// cycle").
func (rt *Runtime) bgMark(guess time.Duration) time.Duration {
	if mark := rt.p.bgMark.get(); mark > 0 {
		return mark
	}
	return guess
}

// floating is what the marking of started cycles costs a second, at the
// exchange rate x and footprint m: what the program allocates while one
// marks (r·mark bytes, at r bytes a second) is held until the next
// cycle, as long as the cycles are apart, whatever the pile's height.
func floating(x, m, r, mark float64) float64 {
	return x / m * r * mark
}

// noGoal reports whether a heap goal read from the runtime is none at
// all: GOGC=off without a memory limit reads as the goal of a memory
// limit of 2^63-1 bytes, less the runtime's headroom (about 2^62.96).
func noGoal(goal uint64) bool {
	return goal >= 1<<62
}

// offBound is the most garbage a program at GOGC=off without a memory
// limit piles up over a live heap of live before a cycle of the stepper
// runs whatever its prices and its CPU cap say: what offStandIn lets the
// heap grow by, the live heap and at least the runtime's 4 MiB minimum
// heap. A loop idle most of the time collects long before it (the
// paced stream: 1.2× its floor); a loop seldom idle earns little of the
// cap, and without this bound its pile grew as far as the cap let it
// (the footprint lab's chunk child, idle about 10 % of the time, peaked
// at 43-118 MiB over a 6 MiB floor; 11-12 MiB with it).
func offBound(live uint64) uint64 {
	return max(live, minHeap)
}

// minHeap is the runtime's least heap goal at GOGC=100 (runtime/mgcpacer.go,
// heapMinimum).
const minHeap = 4 << 20

// pacerShare is the part of the way from the live heap to the heap goal
// where the runtime's pacer starts its own cycle at the earliest (its
// trigger lies between 70 % and 95 % of it).
const pacerShare = 0.7

// timeToHold is how long holding takes to cost short more seconds of CPU,
// when it costs now a second now and grows by grow a second, each second.
func timeToHold(short, now, grow float64) time.Duration {
	var t float64
	switch {
	case grow > 0:
		t = (-now + math.Sqrt(now*now+2*grow*short)) / grow
	case now > 0:
		t = short / now
	default:
		return recheck
	}
	return time.Duration(t * float64(time.Second))
}

// eoq is the garbage, in bytes, at which clearing it with a cycle that
// costs c seconds of CPU is cheapest at allocation rate r (bytes a
// second), footprint m and exchange rate x: sqrt(c·r·m/x), where holding
// its pile since the last cycle has cost c.
func eoq(c, r, m, x float64) float64 {
	return math.Sqrt(c * r * m / x)
}

// perSecond is what clearing the garbage at every g bytes costs a second:
// the cycles' CPU and the footprint of the pile, at exchange rate x.
func perSecond(c, r, g, m, x float64) float64 {
	if g <= 0 {
		return math.Inf(1)
	}
	return c*r/g + x*g/m
}

// delayCost is what a step that holds loop l for d costs its work: how
// long the loop's next event is expected to wait behind it, from the
// loop's recent gaps; nothing for a loop that consumes streams.
func (rt *Runtime) delayCost(l *Loop, d time.Duration) time.Duration {
	if rt.cfg.streams || d <= 0 {
		return 0
	}
	return l.expectedDelay(d)
}

// cushion is how much more garbage the heap can take, on top of the
// garbage it holds, before it needs pages it does not hold yet: its free
// pages not returned to the OS, and, once a cycle has marked, the garbage
// it left that is not yet swept. Space free inside spans in use is left
// out, since only objects of those spans' size class can take it.
func (rt *Runtime) cushion(garbage uint64) uint64 {
	c := rt.r.free
	if rt.r.cycles > 0 && rt.r.objects > rt.r.live+garbage {
		c += rt.r.objects - rt.r.live - garbage
	}
	return c
}

// footprint is the memory the process uses, as the runtime sees it:
// everything it has mapped, less what it has returned to the OS and the
// free heap it keeps for the next allocations. The free heap is left out
// so that garbage piled up once, now free, does not make the next
// garbage look cheap. At least a MiB, so that a tiny heap does not make
// every byte priceless.
func (rt *Runtime) footprint() uint64 {
	f := uint64(0)
	if used := rt.r.released + rt.r.free; rt.r.total > used {
		f = rt.r.total - used
	}
	return max(f, 1<<20)
}

// releasePays reports whether returning the free memory to the operating
// system now is worth its price: the footprint it frees, for the rest of
// the quiet stretch, against the release's own time and the faults the
// next burst pays to take the pages back. rt.mu must be held.
func (rt *Runtime) releasePays(now time.Duration) bool {
	freed := float64(rt.r.free)
	if rt.r.objects > rt.r.live {
		freed += float64(rt.r.objects - rt.r.live)
	}
	if freed < float64(rt.cfg.minGarbage) {
		return false
	}
	quiet := rt.expectedQuiet(now)
	value := rt.cfg.exchange * freed / float64(rt.footprint()) * quiet.Seconds()
	cost := rt.releaseEstimate(now) + time.Duration(freed/pageSize)*rt.faultPrice()
	return value > cost.Seconds()
}

// trimPays reports whether returning the heap's free memory to the
// operating system in the middle of activity is worth its price, at a
// look where the pages held reach as far as the pacer's trigger and the
// stepper's cycles, clearing the garbage at g bytes, are the cheaper
// (doc/policy.md, "A trim"). Never with releases off (WithReleaseDelay(0)).
//
// A trim collects once and returns what is free; the stepper's cycles
// then keep the heap g above the live heap. It must free a whole pile of
// the pacer's (pile: from the live heap to its goal) beyond that: where
// the pacer's cycles and ours take turns, its next pile takes that much
// again.
//
// It frees the pages beyond g for as long as the footprint stays down: as
// long as the trims before held before the pacer's pile came back, or,
// before one came back, as long again as the program has gone on
// allocating with the pile resident (a lull is left to the release of the
// quiet stretch: a trim at the start of the burst after it would fault
// the pages back at once). It costs a release and the faults that bring
// the pages back, priced for all of them: for g at least, and for the
// whole pile if the pacer's comes back. rt.mu must be held.
func (rt *Runtime) trimPays(now time.Duration, garbage uint64, g, pile float64) bool {
	if rt.cfg.releaseDelay == 0 {
		return false // releases are off (WithReleaseDelay)
	}
	freed := float64(rt.cushion(garbage) + garbage)
	if g <= 0 || freed-g < max(pile, float64(rt.cfg.minGarbage)) {
		return false // pages the pacer's next pile would take again
	}
	held := rt.trim.held.get()
	if held <= 0 {
		held = now - rt.trim.stuck
	}
	value := rt.cfg.exchange * (freed - g) / float64(rt.footprint()) * held.Seconds()
	cost := rt.releaseEstimate(now) + time.Duration(freed/pageSize)*rt.faultPrice()
	return value > cost.Seconds()
}

// faultPrice is what faulting one released page back in costs here,
// measured once with the environment's probe.
func (rt *Runtime) faultPrice() time.Duration {
	if rt.p.fault == 0 {
		rt.p.fault = max(rt.env.faultProbe(), time.Nanosecond)
	}
	return rt.p.fault
}
