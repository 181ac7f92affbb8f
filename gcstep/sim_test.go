package gcstep

import (
	"fmt"
	"testing"
	"time"
)

// A trace is a workload for the fake environment: events that each
// allocate size bytes and take work of the loop's CPU, arriving every
// every(i) of wall time, while other goroutines (a writer, clients) use
// other CPU per second of wall.
type trace struct {
	name   string
	events int
	size   uint64
	work   time.Duration
	every  func(i int) time.Duration
	other  float64
	// think is CPU the program spends before the first event, in
	// computation that allocates nothing: a budget saved up.
	think time.Duration
}

var traces = []trace{
	// The urandom demo: 100 MB in 16 KiB reads, one every 60 µs, a
	// writer busy the whole time.
	{name: "stream", events: 6100, size: 16 << 10, work: 10 * us, other: 0.8,
		every: func(int) time.Duration { return 60 * us }},
	// A paced stream: the producer writes 16 KiB every 2 ms.
	{name: "paced", events: 1500, size: 16 << 10, work: 20 * us, other: 0.05,
		every: func(int) time.Duration { return 2 * ms }},
	// Request/response bursts: 2,000 requests 20 µs apart, then 300 ms
	// of quiet, five times.
	{name: "bursts", events: 10000, size: 8 << 10, work: 15 * us, other: 0.5,
		every: func(i int) time.Duration {
			if i%2000 == 0 {
				return 300 * ms
			}
			return 20 * us
		}},
	// A loop that is seldom idle: events back to back, 2 µs apart.
	{name: "seldom idle", events: 20000, size: 4 << 10, work: 25 * us, other: 0.2,
		every: func(int) time.Duration { return 2 * us }},
}

// A simResult is what one run of a trace did.
type simResult struct {
	avg    float64       // the heap's average over the events' time
	peak   uint64        // the highest heap
	cpu    time.Duration // the process's CPU
	wall   time.Duration
	ours   int
	stats  Stats
	gapEnd uint64 // heap at the end of the last gap
}

// simulate runs tr on a fake machine of profile p, with a Runtime if
// stepper, as package poller drives one: a wait until the next event,
// the event, then at the idle moment Lull, Step and Stepped; a wait is
// bounded by NextStep, and a step taken when it falls due.
func simulate(t *testing.T, p profile, tr trace, gogc int, stepper bool, opts ...Option) simResult {
	f := newFake(p)
	f.gogc, f.other = gogc, tr.other
	var rt *Runtime
	if stepper {
		rt = newRuntimeEnv(f.env(), opts...)
		defer rt.Close()
	}
	if tr.think > 0 {
		f.cpu += tr.think
		f.step(f.now + tr.think)
		if rt != nil && rt.Lull() {
			rt.Step(ms) // a look: the budget earns what the thinking paid for
			f.run()
		}
	}
	next := f.now
	start := f.now
	for i := range tr.events {
		next += tr.every(i)
		if f.now < next {
			// Idle until the next event, but wake for a release.
			if rt != nil {
				if d, ok := rt.NextStep(); ok && f.now+d < next {
					f.step(f.now + d)
					rt.Step(ms)
					f.run()
				}
			}
			gap := next - f.now
			f.step(next)
			if rt != nil {
				rt.Waited(gap, true)
			}
		}
		f.step(f.now + tr.work)
		f.cpu += tr.work
		f.alloc(tr.size)
		f.heapSum += float64(f.live+f.allocs-f.base) * float64(tr.every(i+1))
		if rt != nil && rt.Lull() {
			before := f.now
			rt.Step(ms)
			f.run()
			if f.now > before {
				rt.Stepped(f.now-before, f.now > next+tr.every(i+1))
			}
		}
	}
	// One last quiet second, the producers done.
	f.other = 0
	end := f.now + time.Second
	if rt != nil {
		if d, ok := rt.NextStep(); ok && f.now+d < end {
			f.step(f.now + d)
			rt.Step(ms)
			f.run()
		}
	}
	f.step(end)
	res := simResult{avg: f.heapSum / float64(next-start), peak: f.peak, cpu: f.cpu, wall: f.now, ours: f.ours, gapEnd: f.live + f.allocs - f.base}
	if rt != nil {
		res.stats = rt.Stats()
	}
	return res
}

// step moves the fake clock to t, the other goroutines using their CPU.
func (f *fake) step(t time.Duration) {
	if t > f.now {
		f.scavenge(t - f.now)
		f.cpu += time.Duration(f.other * float64(t-f.now))
		f.now = t
	}
}

// TestBudgetHoldsOnEveryMachine runs every trace on every price profile
// and checks what the Runtime cost the process: never more than its
// budget of the process's CPU, plus the price of the action that crossed
// it: a cycle or a release, and the pages it had returned faulted back.
func TestBudgetHoldsOnEveryMachine(t *testing.T) {
	for _, p := range profiles {
		for _, tr := range traces {
			for _, gogc := range []int{100, 400, -1} {
				t.Run(fmt.Sprintf("%s/%s/GOGC=%d", p.name, tr.name, gogc), func(t *testing.T) {
					with := simulate(t, p, tr, gogc, true)
					without := simulate(t, p, tr, gogc, false)
					extra := with.cpu - without.cpu
					action := max(p.cycleCPU, p.release) + time.Duration(with.peak/pageSize)*(p.scavenge+p.fault)
					allowed := time.Duration(DefaultBudget*float64(with.cpu)) + 2*action
					if gogc < 0 {
						// No pacer: every cycle is extra, the bound's too,
						// and the bound's are the price of a bounded heap.
						allowed += time.Duration(with.stats.CyclesOther) * p.cycleCPU * 2
					}
					check(t, extra <= allowed, "extra CPU %v over %v of the process's (%.1f %%): budget %v",
						extra, with.cpu, 100*float64(extra)/float64(with.cpu), allowed)
					check(t, with.stats.Charged <= with.stats.Earned+2*action,
						"charged %v, earned %v", with.stats.Charged, with.stats.Earned)
				})
			}
		}
	}
}

// TestWinWhereCyclesAreCheap checks that the budget buys the memory
// where cycles are cheap: with one P, on every machine, the stream's
// average heap is at most 0.6 times the pacer's at GOGC=100, and 0.3
// times at GOGC=400; the paced stream, whose gaps
// hold a cycle, gets as much on bare metal, the first VM, the 1 µs VM
// and with one P, and 0.8 and 0.4 on the 11 µs VM with both CPUs, whose
// cycles are dearer; the stream with one P on the 11 µs VM 0.65 at
// GOGC=100, whose cycles wait until the budget pays for returning and
// faulting back the pages they would have the scavenger return; after
// bursts the heap is released five times in five where pages are cheap,
// and at least once everywhere.
//
// Not asserted, because it does not hold: the stream with both CPUs
// (its gaps, 50 µs, are shorter than a cycle even on bare metal, 100
// µs, and a cycle that does not fit would delay the next event: the
// policy leaves that garbage to the pacer, OutcomeGap).
func TestWinWhereCyclesAreCheap(t *testing.T) {
	type want struct {
		p     profile
		tr    trace
		gogc  int
		ratio float64
	}
	var wants []want
	for _, g := range []struct {
		gogc  int
		ratio float64
	}{{100, 0.6}, {400, 0.3}} {
		for _, p := range []profile{profiles[5], profiles[7]} {
			wants = append(wants, want{p, traces[0], g.gogc, g.ratio})
		}
		dear := g.ratio
		if g.gogc == 100 {
			dear = 0.65
		}
		wants = append(wants, want{profiles[3], traces[0], g.gogc, dear})
		for _, p := range []profile{profiles[0], profiles[1], profiles[3], profiles[5], profiles[6], profiles[7]} {
			wants = append(wants, want{p, traces[1], g.gogc, g.ratio})
		}
		wants = append(wants, want{profiles[2], traces[1], g.gogc, g.ratio * 4 / 3})
	}
	for _, w := range wants {
		with := simulate(t, w.p, w.tr, w.gogc, true)
		without := simulate(t, w.p, w.tr, w.gogc, false)
		r := with.avg / without.avg
		check(t, r <= w.ratio, "%s, %s, GOGC=%d: average heap %.0f against %.0f (%.2f), want <= %.2f",
			w.p.name, w.tr.name, w.gogc, with.avg, without.avg, r, w.ratio)
	}
	for _, p := range profiles {
		want := uint64(1)
		if p.fault < us {
			want = 5
		}
		with := simulate(t, p, traces[2], 100, true)
		check(t, with.stats.Releases >= want, "%s, bursts: %d releases after 5 bursts, want >= %d", p.name, with.stats.Releases, want)
	}
}

// TestCyclesComeAtAnEvenPace: a program that computed for two seconds
// before its stream has saved up the budget of that CPU; its cycles
// still come only as fast as the stream's own CPU earns them, not in a
// run of small cycles that spends the savings and then leaves the heap
// to grow (the peak is the largest garbage between two cycles). What
// they charge over the stream stays within what the stream earned, and
// the peak within what the same stream reaches without the savings.
func TestCyclesComeAtAnEvenPace(t *testing.T) {
	// The 1 µs VM with one P: cycles cheap enough for many, and dear
	// enough that the budget sets their pace.
	p := profiles[7]
	tr := traces[0]
	fresh := simulate(t, p, tr, 100, true, WithReleaseDelay(0))
	tr.think = 2 * time.Second
	saved := simulate(t, p, tr, 100, true, WithReleaseDelay(0))
	before := time.Duration(DefaultBudget * float64(tr.think))
	spent, earned := saved.stats.Charged, saved.stats.Earned-before
	check(t, spent <= earned+p.cycleCPU, "charged %v over the stream, which earned %v (and %v before it)", spent, earned, before)
	check(t, saved.ours <= fresh.ours*5/4, "%d cycles with savings, %d without", saved.ours, fresh.ours)
	check(t, saved.peak <= fresh.peak*5/4, "peak %d with savings, %d without", saved.peak, fresh.peak)
}

// TestChurnIsPriced: where a page faulted back costs 11 µs, a cycle
// that has the scavenger return pages the heap then grows back into
// costs more than the cycle itself. The Runtime prices that before a
// cycle, in its tokens and its pace, so that its cycles come once the
// heap has grown back into its pages, and charges what happened.
// Without the price the paced stream charged 5-10 ms of faults in 3 s,
// cost the process 5-6 % more CPU and kept 0.88-0.95 of the pacer's
// average heap; with it, 0.03-0.5 ms, under 4 % and 0.10-0.37.
func TestChurnIsPriced(t *testing.T) {
	for _, p := range []profile{profiles[2], profiles[3]} {
		for _, tr := range traces {
			with := simulate(t, p, tr, 400, true)
			without := simulate(t, p, tr, 400, false)
			extra := float64(with.cpu-without.cpu) / float64(with.cpu)
			check(t, extra < 2*DefaultBudget, "%s, %s: the Runtime cost %.1f %% of the process's CPU", p.name, tr.name, 100*extra)
			if tr.name == "paced" {
				check(t, with.stats.Churn < with.stats.Charged/2, "%s, paced: churn %v of %v charged", p.name, with.stats.Churn, with.stats.Charged)
			}
		}
	}
}

// TestReleaseIsPricedWithItsFaults: a release is priced beforehand with
// the faults that bring back the pages it would return (the heap beyond
// the live up to the pacer's goal, as a burst like the last takes them
// again), and charged them when they come back. Where a fault costs 40
// µs the 4 MiB goal's pages cost 40 ms: more than the tokens a Runtime
// starts with, so the quiet stretch after a short burst keeps its pages;
// one after a burst that earned the price returns them.
func TestReleaseIsPricedWithItsFaults(t *testing.T) {
	p := profiles[2]
	p.fault = 40 * us
	f := newFake(p)
	rt := newRuntimeEnv(f.env())
	defer rt.Close()
	w, ft := fakeWork(rt)
	defer w.Close()
	burst := func(cpu time.Duration) {
		w.Begin()
		f.cpu += cpu
		f.alloc(16 << 20)
		f.now += 10 * ms
		w.End()
		f.now += DefaultReleaseDelay
		ft.fire()
		f.run()
	}
	burst(10 * ms)
	equal(t, "releases after a burst that earned 0.3 ms", rt.Stats().Releases, uint64(0))
	burst(2 * time.Second) // earns 60 ms
	equal(t, "releases after a burst that earned 60 ms", rt.Stats().Releases, uint64(1))
	burst(10 * time.Second) // earns what tokens may hold: its faults back and a release
	s := rt.Stats()
	mustEqual(t, "releases", s.Releases, uint64(2))
	faults := time.Duration(s.ReleasedBytes/2/pageSize) * p.fault
	check(t, s.Churn >= faults/2, "charged %v for faults, the first release's pages cost %v", s.Churn, faults)
	check(t, s.Charged > s.Churn, "charged %v in all, %v of it for faults: the budget pays for them", s.Charged, s.Churn)
	check(t, s.ReleaseCost < faults/4, "a release's own price %v with its faults (%v) in it", s.ReleaseCost, faults)
}

// TestReleasePricedAsACycle: a release is a cycle. Before one was
// measured it is priced at one of the pacer's, so where those are dear a
// short burst does not pay for the first; and, as a cycle is, a release
// is charged what it costs less what its collection saves the pacer: the
// garbage it collects over the pile the pacer lets grow, of one of the
// pacer's cycles.
func TestReleasePricedAsACycle(t *testing.T) {
	// 36 ms of tokens after the first burst: the faults back of 4 MiB less
	// the live heap at 10 µs a page, 9.6 ms, and a cycle of the pacer's
	// less a quarter of it fit at 30 ms (two such cycles would not), not
	// at 40.
	for _, pacer := range []time.Duration{250 * us, 30 * ms, 40 * ms} {
		p := profiles[1] // no noise
		p.pacerCPU = pacer
		f := newFake(p)
		rt := newRuntimeEnv(f.env())
		w, ft := fakeWork(rt)
		var pile, garbage uint64
		burst := func(cpu time.Duration) (charged time.Duration) {
			w.Begin()
			f.cpu += cpu
			for n := f.pacer; f.pacer == n; {
				f.alloc(64 << 10) // one of the pacer's cycles
			}
			pile = f.goal() - f.live
			f.alloc(1 << 20)
			garbage = f.allocs - f.base
			f.now += 10 * ms
			w.End()
			f.now += DefaultReleaseDelay
			before := rt.Stats().Charged
			ft.fire()
			f.run()
			return rt.Stats().Charged - before
		}
		charged := burst(time.Second)
		if pacer == 40*ms {
			equal(t, "releases where the pacer's cycles cost 40 ms", rt.Stats().Releases, uint64(0))
			charged = burst(3 * time.Second) // another 90 ms
		}
		mustEqual(t, fmt.Sprintf("pacer %v: releases", pacer), rt.Stats().Releases, uint64(1))
		saved := time.Duration(float64(pacer) * float64(garbage) / float64(pile))
		equal(t, fmt.Sprintf("pacer %v: the release's charge", pacer), charged, max(p.release-saved, 0))
		w.Close()
		rt.Close()
	}
}

// TestPacerPriceIsLearned: where the pacer's cycles cost three times
// ours (its assists, its larger heap), the Runtime measures that price
// and credits it, and the budget buys more cycles than where both cost
// the same. On the contended machine the paced stream's cycles are
// dear enough that the pacer collects beside them; the stream runs three
// times its length, so that the budget binds after the tokens a Runtime
// starts with are spent.
func TestPacerPriceIsLearned(t *testing.T) {
	same := profiles[4]
	dear := same
	dear.pacerCPU = 3 * same.cycleCPU
	tr := traces[1]
	tr.events *= 3
	a := simulate(t, same, tr, 100, true)
	b := simulate(t, dear, tr, 100, true)
	p := b.stats.PacerCycleCost
	check(t, p > dear.pacerCPU*6/10 && p < dear.pacerCPU*14/10, "the pacer's price: learned %v, it costs %v", p, dear.pacerCPU)
	check(t, b.ours > a.ours, "%d cycles where the pacer's cost three times ours, %d where they cost the same", b.ours, a.ours)
}

// TestCyclePriceIsTheCollectorsWithOneP: with one P the loop waits for
// each cycle's mark (left beside it, the mark gets the P only when the
// loop yields it), and the cycle is priced at the collector's CPU, not at
// the wait (the collector has the P meanwhile); with two, at the wait if
// longer.
func TestCyclePriceIsTheCollectorsWithOneP(t *testing.T) {
	for _, procs := range []int{1, 2} {
		p := profile{name: "slow wait", cycleWall: 300 * us, cycleCPU: 100 * us, release: ms, procs: procs}
		s := simulate(t, p, traces[1], 100, true, WithBudget(0.5)).stats
		want := map[int]time.Duration{1: p.cycleCPU, 2: p.cycleWall}[procs]
		check(t, s.CyclesInline > 0 && s.CycleCost == want, "GOMAXPROCS=%d: a cycle priced %v after %d cycles, want %v",
			procs, s.CycleCost, s.CyclesInline, want)
		check(t, procs > 1 || s.CyclesOutlasted == 0, "GOMAXPROCS=1: %d of %d cycles not waited for", s.CyclesOutlasted, s.CyclesInline)
	}
}

// TestDearCyclesStepBack checks that on the contended machine the
// Runtime runs far fewer cycles than where cycles are cheap: it finds
// out they are dear and leaves the garbage to the pacer.
func TestDearCyclesStepBack(t *testing.T) {
	cheap := simulate(t, profiles[0], traces[1], 100, true)
	dear := simulate(t, profiles[4], traces[1], 100, true)
	check(t, dear.ours*3 < cheap.ours, "cycles: %d contended against %d on bare metal", dear.ours, cheap.ours)
}

// A cycle decided while the last cycle's garbage is still being swept
// does not start; the decision says so, and the log's cycles are the
// Stats' own.
func TestDecisionsSayWhatWasDone(t *testing.T) {
	f := newFake(profiles[2])
	e := f.env()
	collect, calls := e.collect, 0
	e.collect = func(wait time.Duration) (bool, bool) {
		calls++
		if calls%2 == 1 {
			return false, false // still sweeping
		}
		return collect(wait)
	}
	n := map[Outcome]uint64{}
	rt := newRuntimeEnv(e, WithDecisions(func(d Decision) { n[d.Outcome]++ }))
	defer rt.Close()
	for range 2000 {
		f.step(f.now + 2*ms)
		rt.Waited(2*ms, true)
		f.step(f.now + 20*us)
		f.cpu += 20 * us
		f.alloc(64 << 10)
		if rt.Lull() {
			rt.Step(ms)
			f.run()
		}
	}
	s := rt.Stats()
	if s.DeclinedSweep == 0 || s.CyclesInline == 0 {
		t.Fatalf("declined %d, ran %d: the test wants both", s.DeclinedSweep, s.CyclesInline)
	}
	if n[OutcomeInline] != s.CyclesInline || n[OutcomeSweep] != s.DeclinedSweep {
		t.Errorf("decisions: %d inline, %d sweep; Stats: %d inline, %d declined for the sweep",
			n[OutcomeInline], n[OutcomeSweep], s.CyclesInline, s.DeclinedSweep)
	}
}

// TestPacerCollectsFirstAfterARelease: after a release the heap's free
// pages are all returned, and the allocator takes the lowest free
// address whether it was returned or not, so a cycle of ours early in
// the next burst leaves the pages it frees resident while the burst
// faults returned ones in (the lab's TCP server with one P: RSS 1.5-2.5
// MiB over the plain server's). Until the pacer's first cycle after a
// release the Runtime looks but decides nothing; after it, it weighs
// cycles again.
func TestPacerCollectsFirstAfterARelease(t *testing.T) {
	p := profiles[7] // 1 µs VM, one P
	p.noise = 0
	f := newFake(p)
	var decided []Outcome
	rt := newRuntimeEnv(f.env(), WithDecisions(func(d Decision) { decided = append(decided, d.Outcome) }))
	defer rt.Close()
	event := func() {
		f.step(f.now + 20*us)
		rt.Waited(20*us, true)
		f.step(f.now + 15*us)
		f.cpu += 15 * us
		f.alloc(64 << 10)
		if rt.Lull() {
			b := f.now
			rt.Step(ms)
			f.run()
			if f.now > b {
				rt.Stepped(f.now-b, false)
			}
		}
	}
	for range 2000 {
		event()
	}
	check(t, rt.Stats().CyclesInline > 0, "no cycle of ours in the first burst: nothing to compare")
	f.step(f.now + 300*ms) // quiet: the release falls due
	rt.Step(ms)
	f.run()
	mustEqual(t, "releases", rt.Stats().Releases, uint64(1))
	inline, pacer, n := rt.Stats().CyclesInline, f.pacer, len(decided)
	for i := 0; f.pacer == pacer && i < 1000; i++ {
		event()
	}
	mustEqual(t, "the pacer's cycles in the next burst", f.pacer > pacer, true)
	equal(t, "cycles of ours before the pacer's first after the release", rt.Stats().CyclesInline, inline)
	equal(t, "decisions before it", len(decided), n)
	for range 200 {
		event()
	}
	check(t, len(decided) > n, "no decision after the pacer's first cycle: the Runtime still waits")
}
