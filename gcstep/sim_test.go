package gcstep

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A profile is what a machine charges for the things the policy prices.
// The same trace run on two profiles shows, deterministically, what the
// policy decides on each (doc/policy.md, "Machines we do not have").
type profile struct {
	name string
	// inline is the wall time of an inline cycle of an empty heap,
	// and cpuPerWall the collector CPU it uses per unit of that wall
	// (more than one where it wakes the other CPU's threads).
	inline     time.Duration
	cpuPerWall float64
	// A started cycle holds the loop for kick, completes mark after it
	// starts, and costs bg of collector CPU.
	kick, mark, bg time.Duration
	// pacerHold is how long the runtime's own cycle holds the loop: its
	// stop-the-world phases on two Ps, the whole cycle on one.
	pacerHold time.Duration
	fault     time.Duration // faulting a released page back in
	procs     int           // GOMAXPROCS
}

// The profiles, and where each number comes from.
var (
	// This project's VM with both CPUs (bench/README.md, "What this
	// machine charges"; go run ./bench/machine): an empty-heap cycle
	// 0.26-0.30 ms, waking a sleeping CPU 0.15-0.2 ms, a page fault
	// 10-15 µs. The demo's inline cycles took 1-4 ms of wall time with
	// two Ps, about 2 ms of CPU with the spinning threads; the pacer's
	// own cycles of the paced stream measured 0.54 ms of collector CPU
	// each, and stall the loop about a wakeup.
	vm2P = profile{name: "this VM, 2 Ps", inline: 1500 * time.Microsecond, cpuPerWall: 1.3,
		kick: 200 * time.Microsecond, mark: 500 * time.Microsecond, bg: 540 * time.Microsecond,
		pacerHold: 200 * time.Microsecond, fault: 10 * time.Microsecond, procs: 2}
	// The same VM with GOMAXPROCS=1: an empty-heap cycle 0.04-0.08 ms;
	// the demo's inline cycles take 0.28 ms of wall time, of which the
	// collector's CPU is 0.07-0.12 ms (Stats.CycleCPU): the rest is the
	// writer goroutine running on the one P, which here runs on the
	// producer's own clock. The paced stream's pacer cycles 0.16 ms
	// each, which the loop waits for.
	vm1P = profile{name: "this VM, 1 P", inline: 120 * time.Microsecond, cpuPerWall: 1,
		kick: 20 * time.Microsecond, mark: 300 * time.Microsecond, bg: 160 * time.Microsecond,
		pacerHold: 160 * time.Microsecond, fault: 10 * time.Microsecond, procs: 1}
	// Bare metal with both CPUs: the machine this project started on
	// measured a 2-P cycle at 0.12-0.13 ms with the same runtime (its
	// wakeups then cost microseconds, not 0.15 ms); a published
	// measurement of a minor fault on a desktop CPU gives about 1 µs.
	bare2P = profile{name: "bare metal, 2 Ps", inline: 130 * time.Microsecond, cpuPerWall: 1.3,
		kick: 10 * time.Microsecond, mark: 150 * time.Microsecond, bg: 170 * time.Microsecond,
		pacerHold: 20 * time.Microsecond, fault: time.Microsecond, procs: 2}
)

// An event of a trace: data arrives at, and handling it allocates alloc.
type event struct {
	at    time.Duration
	alloc uint64
}

// demoTrace is the urandom demo's stream: 100 MB read in 16 KiB chunks,
// each into a fresh buffer, as /dev/urandom produces them (about 230 MB/s
// on this project's machines: a chunk every 70 µs, give or take 20 µs).
func demoTrace() []event {
	const n = 100_000_000 / (16 << 10)
	tr := make([]event, n)
	var t time.Duration
	seed := uint32(1)
	for i := range tr {
		seed = seed*1664525 + 1013904223 // a fixed sequence: the same trace every run
		t += 50*time.Microsecond + time.Duration(seed>>16%40)*time.Microsecond
		tr[i] = event{at: t, alloc: 16 << 10}
	}
	return tr
}

// pacedTrace is a stream paced by its producer: 16 KiB chunks, a 100 µs
// pause after every 64 KiB, 40 MB in all.
func pacedTrace() []event {
	const n = 40_000_000 / (16 << 10)
	tr := make([]event, n)
	var t time.Duration
	for i := range tr {
		t += 15 * time.Microsecond
		if i%4 == 0 {
			t += 100 * time.Microsecond
		}
		tr[i] = event{at: t, alloc: 16 << 10}
	}
	return tr
}

// simResult is what a simulated run measured.
type simResult struct {
	peak   uint64        // the heap's peak, plus simFloor
	wall   time.Duration // when the last event was handled
	ours   int           // cycles the stepper ran or started
	pacers int           // cycles the pacer ran
}

// simFloor is the footprint of the demo that is not heap: the binary,
// stacks and the runtime's own memory (the floor mode's 3.2-3.5 MiB,
// less its one buffer).
const simFloor = 3 << 20

// simulate runs tr through a loop on profile p at GOGC gogc (0: off),
// with the Runtime stepping at the loop's idle moments or without a
// stepper. The producer is ahead of the loop by at most a pipe's buffer
// (64 KiB): a loop held longer than that stalls it, and the rest of the
// stream arrives that much later. Handling an event takes 10 µs.
func simulate(p profile, gogc int, step bool, tr []event, opts ...Option) simResult {
	w := newWorld()
	w.r.live, w.liveAfter = 256<<10, 256<<10 // the loop's own state
	w.r.objects = w.r.live
	w.gcCost = p.inline
	w.cpuPerWall = p.cpuPerWall
	w.kickCost, w.bgDelay, w.bgCost = p.kick, p.mark, p.bg
	w.fault = p.fault
	w.procs = p.procs
	if gogc > 0 {
		w.setPacer(gogc)
	}
	var rt *Runtime
	var l *Loop
	if step {
		rt = newRuntime(w.env(), append([]Option{WithReleaseDelay(0)}, opts...)...)
		l = rt.Loop()
	}
	const handle = 10 * time.Microsecond
	const buffer = 4 // chunks the pipe holds
	var stall time.Duration
	var read [buffer]time.Duration // when the loop read each of the last chunks
	for i, e := range tr {
		if i >= buffer && read[i%buffer] > e.at+stall {
			// The pipe was full until the loop read the chunk written
			// buffer chunks before: the producer waited for it, and
			// the rest of the stream comes that much later.
			stall = read[i%buffer] - e.at
		}
		at := e.at + stall
		if w.t < at {
			gap := at - w.t
			w.t = at
			if l != nil {
				l.Waited(gap, true)
			}
		}
		read[i%buffer] = w.t
		before := w.pacerCycles
		w.alloc(e.alloc)
		if w.pacerCycles != before {
			w.t += p.pacerHold
		}
		w.t += handle
		if l != nil && l.Lull() {
			start := w.t
			l.Step(ms)
			next := i+1 < len(tr) && tr[i+1].at+stall <= w.t
			l.Stepped(w.t-start, next)
		}
	}
	res := simResult{peak: w.peak + simFloor, wall: w.t, pacers: w.pacerCycles}
	if rt != nil {
		s := rt.Stats()
		res.ours = int(s.CyclesInline + s.CyclesBackground)
		rt.Close()
	}
	return res
}

// simTable runs tr on each profile and GOGC, without and with the
// stepper, and returns the rows of a table of what the policy decided.
func simTable(tr []event, gogcs []int) (map[string]map[int][2]simResult, string) {
	out := map[string]map[int][2]simResult{}
	var b strings.Builder
	fmt.Fprintf(&b, "%-18s %5s %9s %9s %6s %6s %6s %7s\n", "profile", "GOGC", "off peak", "step peak", "×off", "wall×", "ours", "pacer")
	for _, p := range []profile{vm2P, vm1P, bare2P} {
		out[p.name] = map[int][2]simResult{}
		for _, g := range gogcs {
			off, on := simulate(p, g, false, tr), simulate(p, g, true, tr)
			out[p.name][g] = [2]simResult{off, on}
			gs := fmt.Sprint(g)
			if g == 0 {
				gs = "off"
			}
			fmt.Fprintf(&b, "%-18s %5s %8.1fM %8.1fM %6.2f %6.3f %6d %7d\n", p.name, gs,
				float64(off.peak)/mib, float64(on.peak)/mib, float64(on.peak)/float64(off.peak),
				float64(on.wall)/float64(off.wall), on.ours, on.pacers)
		}
	}
	return out, b.String()
}

// The urandom demo on three machines. On bare metal with both CPUs, and on
// this VM with one P, the stepper's cycles are cheap enough to hold the
// peak at 0.6 of the plain loop's at GOGC=100 and 0.3 at 400, at no more
// than 5 % more wall time. On this VM with both CPUs a cycle costs ten
// times as much: every start of a background cycle holds the loop for a
// wakeup, and the inline cycles that the estimate's relaxation lets
// through to be measured again overrun the budget; the policy must do
// no harm there (peak and wall no worse than the plain loop's, the
// issue's bound for both CPUs): at GOGC=100 it leaves most cycles to the
// pacer (ours are not clearly cheaper), at 400 and off its cycles fit
// the stream's gaps and hold 0.24 of the peak.
func TestSimulatedDemoByMachine(t *testing.T) {
	res, table := simTable(demoTrace(), []int{100, 400, 0})
	t.Logf("the urandom demo's trace:\n%s", table)
	for _, p := range []profile{bare2P, vm1P} {
		for g, want := range map[int]float64{100: 0.6, 400: 0.3} {
			r := res[p.name][g]
			ratio := float64(r[1].peak) / float64(r[0].peak)
			assert.LessOrEqual(t, ratio, want, "%s GOGC=%d: peak ×off", p.name, g)
			assert.LessOrEqual(t, float64(r[1].wall)/float64(r[0].wall), 1.05, "%s GOGC=%d: wall ×off", p.name, g)
		}
	}
	for g := range map[int]bool{100: true, 400: true} {
		r := res[vm2P.name][g]
		assert.LessOrEqual(t, float64(r[1].peak)/float64(r[0].peak), 1.02, "%s GOGC=%d: peak ×off", vm2P.name, g)
		assert.LessOrEqual(t, float64(r[1].wall)/float64(r[0].wall), 1.05, "%s GOGC=%d: wall ×off", vm2P.name, g)
	}
	// GOGC=off: the stepper is the only collector; on every machine
	// the heap stays bounded.
	for _, p := range []profile{vm2P, vm1P, bare2P} {
		r := res[p.name][0]
		assert.LessOrEqual(t, r[1].peak, uint64(2*simFloor), "%s GOGC=off: peak", p.name)
	}
}

// A stream paced by its producer (the loop idle most of the time), on
// every machine: under GOGC=off the stepper keeps the heap bounded, and
// at GOGC=100 it collects.
func TestSimulatedPacedStreamCollects(t *testing.T) {
	res, table := simTable(pacedTrace(), []int{100, 0})
	t.Logf("a producer-paced stream:\n%s", table)
	for _, p := range []profile{vm2P, vm1P, bare2P} {
		off := res[p.name][0]
		assert.LessOrEqual(t, off[1].peak, uint64(2*simFloor), "%s GOGC=off: peak", p.name)
		assert.Positive(t, res[p.name][100][1].ours, "%s GOGC=100: no cycle of ours", p.name)
	}
}

// reqResult is what a simulated request/response run measured, over the
// bursts after the first (which grows the heap from nothing).
type reqResult struct {
	cpu    time.Duration // handling, collector CPU and page faults
	p99    time.Duration // a request's time from arrival to reply
	after  uint64        // resident heap 300 ms after a burst ends, median
	faults int           // pages faulted back in
}

// simReqResp runs bursts of requests through a loop on profile p at
// GOGC=100, as BenchmarkReqResp does: 300 requests a burst, one every
// 130 µs, each handled in 100 µs and allocating 16 KiB, then 400 ms of
// silence, during which the loop sleeps until the stepper's NextStep.
// step is "off" (no stepper), "on" (gcstep's defaults) or "keep" (no
// release, WithReleaseDelay(0)). The heap keeps its pages (world.pages),
// so memory returned in a silence is faulted back in by the next burst
// at the profile's price.
func simReqResp(p profile, step string) reqResult {
	const (
		bursts, perBurst = 6, 300
		every, handle    = 130 * time.Microsecond, 100 * time.Microsecond
		alloc            = 16 << 10
		silence, after   = 400 * time.Millisecond, 300 * time.Millisecond
	)
	w := newWorld()
	w.pages = true
	w.r.live, w.liveAfter = 256<<10, 256<<10
	w.r.objects = w.r.live
	w.gcCost, w.cpuPerWall = p.inline, p.cpuPerWall
	w.kickCost, w.bgDelay, w.bgCost = p.kick, p.mark, p.bg
	w.fault, w.procs = p.fault, p.procs
	w.setPacer(100)
	var l *Loop
	var rt *Runtime
	switch step {
	case "on":
		rt = newRuntime(w.env())
	case "keep":
		rt = newRuntime(w.env(), WithReleaseDelay(0))
	}
	if rt != nil {
		l = rt.Loop()
		defer rt.Close()
	}
	var res reqResult
	var lat []time.Duration
	var afters []uint64
	var work time.Duration // handling and faults
	for b := range bursts {
		if b == 1 {
			res.faults, work = w.faults, 0
			w.gcCPU, w.pacerCycles = 0, 0
		}
		burst := w.t
		for i := range perBurst {
			at := burst + time.Duration(i)*every
			if w.t < at {
				gap := at - w.t
				w.t = at
				if l != nil {
					l.Waited(gap, true)
				}
			}
			t0, pacers := w.t, w.pacerCycles
			w.alloc(alloc)
			if w.pacerCycles != pacers {
				w.t += p.pacerHold
			}
			w.t += handle
			work += w.t - t0
			if b > 0 {
				lat = append(lat, w.t-at)
			}
			if l != nil && l.Lull() {
				s := w.t
				l.Step(ms)
				next := i+1 < perBurst && burst+time.Duration(i+1)*every <= w.t
				l.Stepped(w.t-s, next)
			}
		}
		end, wake := w.t, w.t+silence
		sampled := false
		for l != nil {
			d, ok := l.NextStep()
			if !ok || w.t+d >= wake {
				break
			}
			if !sampled && w.t+d >= end+after {
				afters, sampled = append(afters, w.r.objects+w.r.free), true
			}
			w.t += d
			l.Waited(d, false)
			l.Step(ms)
			w.run()
		}
		if !sampled {
			afters = append(afters, w.r.objects+w.r.free)
		}
		if l != nil && wake > w.t {
			l.Waited(wake-w.t, true) // the wait the next burst's first request ends
		}
		w.t = wake
	}
	res.faults = w.faults - res.faults
	res.cpu = work + w.gcCPU + time.Duration(w.pacerCycles)*p.bg
	slices.Sort(lat)
	res.p99 = lat[len(lat)*99/100]
	afters = afters[1:]
	slices.Sort(afters)
	res.after = afters[len(afters)/2]
	return res
}

// Request/response bursts with silences between them, on each machine:
// what the release after a burst saves and what the next burst pays to
// fault the memory back in. On every machine the release holds the
// memory 300 ms after a burst well under 0.6 of what the plain loop
// keeps. On bare metal the faults that bring it back cost under 1 % of
// the bursts' CPU (release against keep) and nothing in p99; on this VM
// a fault costs ten times as much. What the stepper's cycles inside the
// bursts cost (keep against off, 5-8 % here) is the exchange rate's
// price for the smaller pile, and over the 5 %: the table is
// logged for the note, not bounded.
func TestSimulatedRequestResponse(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "%-18s %-5s %9s %9s %8s %7s\n", "profile", "step", "CPU", "p99", "after", "faults")
	res := map[string]map[string]reqResult{}
	for _, p := range []profile{vm2P, vm1P, bare2P} {
		res[p.name] = map[string]reqResult{}
		for _, step := range []string{"off", "on", "keep"} {
			r := simReqResp(p, step)
			res[p.name][step] = r
			fmt.Fprintf(&b, "%-18s %-5s %9v %9v %7.1fM %7d\n", p.name, step, r.cpu.Round(time.Microsecond),
				r.p99.Round(time.Microsecond), float64(r.after)/mib, r.faults)
		}
	}
	t.Logf("request/response bursts:\n%s", b.String())
	for _, p := range []profile{vm2P, vm1P, bare2P} {
		off, on := res[p.name]["off"], res[p.name]["on"]
		assert.Less(t, float64(on.after)/float64(off.after), 0.6, "%s: memory after a burst ×off", p.name)
	}
	off, on, keep := res[bare2P.name]["off"], res[bare2P.name]["on"], res[bare2P.name]["keep"]
	assert.Positive(t, on.faults, "bare metal: no release")
	assert.LessOrEqual(t, float64(on.cpu)/float64(keep.cpu), 1.01, "bare metal: CPU with the release ×without")
	assert.LessOrEqual(t, float64(on.p99)/float64(off.p99), 1.1, "bare metal: p99 ×off")
}
