package gcstep

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decisionLog keeps the decisions WithDecisions hands it.
type decisionLog struct{ d []Decision }

func (r *decisionLog) option() Option {
	return WithDecisions(func(d Decision) { r.d = append(r.d, d) })
}

// count is how many decisions came to o at a step with a budget.
func (r *decisionLog) count(o Outcome) (n uint64) {
	for _, d := range r.d {
		if d.Outcome == o && d.Budget > 0 {
			n++
		}
	}
	return n
}

// A paced stream's decisions say what the stepper did and why, and agree
// with its counters: a wait before each cycle, a cycle once holding the
// garbage has cost its price.
func TestDecisionsSayWhatAndWhy(t *testing.T) {
	var rec decisionLog
	w, rt := newTest(t, WithReleaseDelay(0), WithCPUCap(1), WithBackground(false),
		WithExchangeRate(DefaultExchangeRate), rec.option())
	w.gcCost = 400 * time.Microsecond // an economic pile above WithMinGarbage's, so that cycles wait
	l := rt.Loop()
	serve(w, l, 5000, 100*time.Microsecond, 16*kib)
	s := rt.Stats()
	require.Positive(t, s.CyclesInline)
	assert.Equal(t, s.CyclesInline, rec.count(OutcomeInline), "inline decisions against Stats.CyclesInline")
	assert.Positive(t, rec.count(OutcomeWait), "waits")
	var last time.Duration
	for i, d := range rec.d {
		require.GreaterOrEqual(t, d.At, last, "decision %d out of order", i)
		last = d.At
		assert.GreaterOrEqual(t, d.Garbage, uint64(minG), "decision %d below the threshold: %+v", i, d)
		assert.Positive(t, d.Footprint, "decision %d: footprint", i)
		switch d.Outcome {
		case OutcomeInline:
			assert.Positive(t, d.Cost, "decision %d: a cycle with no price: %+v", i, d)
			assert.Zero(t, d.Wait, "decision %d", i)
		case OutcomeWait:
			assert.Positive(t, d.Wait, "decision %d: a wait of nothing: %+v", i, d)
		}
	}
}

// Declines name their reason, one for one with the counters.
func TestDecisionsNameTheDecline(t *testing.T) {
	// Over the pacer's resident pile: a decline for the cushion with
	// releases off; a trim with them on and faults at this VM's price.
	for _, c := range []struct {
		name    string
		opts    []Option
		outcome Outcome
		count   func(Stats) uint64
		check   func(t *testing.T, d Decision)
	}{
		{"cushion", []Option{WithReleaseDelay(0)}, OutcomeCushion, func(s Stats) uint64 { return s.DeclinedCushion },
			func(t *testing.T, d Decision) {
				assert.GreaterOrEqual(t, float64(d.Garbage+d.Cushion), pacerShare*float64(d.Goal-d.Live), "%+v", d)
			}},
		{"trim", nil, OutcomeTrim, func(s Stats) uint64 { return s.Trims },
			func(t *testing.T, d Decision) {
				assert.Less(t, d.Ours, d.Pacer, "a trim where the pacer is the cheaper: %+v", d)
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var rec decisionLog
			w, rt := residentPile(t, 4, append(c.opts, rec.option())...)
			w.fault = 10 * time.Microsecond
			serve(w, rt.Loop(), 2000, 100*time.Microsecond, 16*kib)
			n := c.count(rt.Stats())
			require.Positive(t, n)
			assert.Equal(t, n, rec.count(c.outcome))
			for _, d := range rec.d {
				if d.Outcome == c.outcome {
					c.check(t, d)
				}
			}
		})
	}
	t.Run("pacer", func(t *testing.T) {
		var rec decisionLog
		w, rt := newTest(t, WithReleaseDelay(0), WithExchangeRate(DefaultExchangeRate), rec.option())
		w.setPacer(100)
		// A request/response burst: 20 µs between requests, each
		// 256 KiB. At that rate a cycle of ours pays only past the
		// pacer's goal.
		serve(w, rt.Loop(), 300, 20*time.Microsecond, 256*kib)
		s := rt.Stats()
		require.Positive(t, s.DeclinedPacer)
		assert.Equal(t, s.DeclinedPacer, rec.count(OutcomePacer))
		priced := 0
		for _, d := range rec.d {
			if d.Outcome == OutcomePacer && d.Pacer > 0 {
				priced++
				assert.GreaterOrEqual(t, d.Ours, d.Pacer, "a decline for a dearer pacer: %+v", d)
			}
		}
		t.Logf("%d of %d declines for the pacer priced it; the others came past its trigger", priced, s.DeclinedPacer)
	})
	t.Run("cap", func(t *testing.T) {
		var rec decisionLog
		w, rt := newTest(t, WithReleaseDelay(0), WithCPUCap(0.01), WithBackground(false), rec.option())
		w.gcCost = 5 * ms
		serve(w, rt.Loop(), 3000, 100*time.Microsecond, 16*kib)
		s := rt.Stats()
		require.Positive(t, s.DeclinedCap)
		assert.Equal(t, s.DeclinedCap, rec.count(OutcomeCap))
	})
}

func TestOutcomeString(t *testing.T) {
	assert.Equal(t, "inline", OutcomeInline.String())
	assert.Equal(t, "not-started", OutcomeNotStarted.String())
	assert.Equal(t, "Outcome(200)", Outcome(200).String())
	for o := OutcomeWait; o <= OutcomeNotStarted; o++ {
		assert.NotEmpty(t, outcomeNames[o], "outcome %d has no name", o)
	}
}

// Handing out decisions allocates nothing: a program can record them into
// a buffer made beforehand without making the garbage it watches.
func TestDecisionsAllocateNothing(t *testing.T) {
	buf := make([]Decision, 0, 1<<16)
	w, rt := newTest(t, WithReleaseDelay(0), WithCPUCap(1), WithExchangeRate(DefaultExchangeRate),
		WithDecisions(func(d Decision) {
			if len(buf) < cap(buf) {
				buf = append(buf, d)
			}
		}))
	w.gcCost = 200 * time.Microsecond
	w.setPacer(100)
	l := rt.Loop()
	serve(w, l, 100, 100*time.Microsecond, 16*kib) // the first decisions, warm
	allocs := testing.AllocsPerRun(100, func() { serve(w, l, 50, 100*time.Microsecond, 16*kib) })
	assert.Zero(t, allocs, "allocations per 50 requests")
	assert.NotEmpty(t, buf, "decisions recorded")
}
