package gcstep

import (
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	// base has garbage enough, a budget that pays and has earned the
	// cycle since the last, a gap that fits.
	base := snapshot{garbage: 1 << 20, live: 1 << 20, pile: 4 << 20, budget: ms, gap: ms,
		wall: 300 * us, cost: 500 * us, release: 2 * ms, tokens: 10 * ms, since: ms, minGarbage: 256 << 10, procs: 2}
	tests := []struct {
		name string
		edit func(*snapshot)
		act  action
		out  Outcome
	}{
		{"garbage, budget and a gap that fits: inline", func(s *snapshot) {}, doInline, OutcomeInline},
		{"too little garbage", func(s *snapshot) { s.garbage = 100 << 10 }, doNothing, OutcomeNone},
		{"budget spent", func(s *snapshot) { s.tokens = 100 * us }, doNothing, OutcomeBudget},
		{"the release's reserve is not for cycles", func(s *snapshot) { s.tokens, s.reserve = 2*ms, 1800*us }, doNothing, OutcomeBudget},
		{"saved up, but not earned since the last cycle", func(s *snapshot) { s.since = 300 * us }, doNothing, OutcomeBudget},
		{"earned since the last cycle, but spent", func(s *snapshot) { s.tokens, s.since = 300*us, 10*ms }, doNothing, OutcomeBudget},
		{"the pace is the charge and its churn", func(s *snapshot) { s.churn = 700 * us }, doNothing, OutcomeBudget},
		{"earned the charge and its churn since the last cycle", func(s *snapshot) { s.since, s.churn = 2*ms, 700*us }, doInline, OutcomeInline},
		{"no cycle priced yet: the first learns its price", func(s *snapshot) { s.cost, s.since, s.churn = 0, 0, 700*us }, doInline, OutcomeInline},
		{"no cycle priced yet: its churn is not counted either", func(s *snapshot) { s.cost, s.tokens, s.churn = 0, 500*us, 700*us }, doInline, OutcomeInline},
		{"no cycle priced yet, but the release's reserve not left", func(s *snapshot) { s.cost, s.tokens, s.reserve = 0, 1500*us, 1800*us }, doNothing, OutcomeBudget},
		{"a release does not wait for the pace", func(s *snapshot) { s.quiet, s.armed, s.since = true, 1<<20, 0 }, doRelease, OutcomeRelease},
		{"budget below zero", func(s *snapshot) { s.tokens = -ms }, doNothing, OutcomeBudget},
		{"the budget pays the cycle, not its churn", func(s *snapshot) { s.tokens, s.churn = ms, 700*us }, doNothing, OutcomeBudget},
		{"the budget pays the cycle and its churn", func(s *snapshot) { s.tokens, s.churn = ms, 200*us }, doInline, OutcomeInline},
		{"a release owes no churn", func(s *snapshot) { s.quiet, s.armed, s.tokens, s.churn = true, 1<<20, 3*ms, 5*ms }, doRelease, OutcomeRelease},
		{"a pile near the pacer's is nearly free", func(s *snapshot) { s.tokens, s.since, s.garbage = 100*us, 100*us, 3900<<10 }, doInline, OutcomeInline},
		{"no pacer: the whole cycle is charged", func(s *snapshot) { s.pile = 0; s.tokens = 400 * us }, doNothing, OutcomeBudget},
		{"a gap shorter than the cycle: the pacer's", func(s *snapshot) { s.gap = 100 * us }, doNothing, OutcomeGap},
		{"a gap shorter than the cycle, over budget too", func(s *snapshot) { s.gap, s.tokens = 100*us, 0 }, doNothing, OutcomeGap},
		{"a cycle of ours still marks", func(s *snapshot) { s.marking = true }, doNothing, OutcomeNone},
		{"one P: inline, whatever the gap", func(s *snapshot) { s.gap, s.procs = 100*us, 1 }, doInline, OutcomeInline},
		{"no gap known: inline", func(s *snapshot) { s.gap = 0 }, doInline, OutcomeInline},
		{"a look without a budget: due", func(s *snapshot) { s.budget = 0 }, doNothing, OutcomeDue},
		{"quiet and armed: release", func(s *snapshot) { s.quiet, s.armed = true, 1<<20 }, doRelease, OutcomeRelease},
		{"quiet, armed, no budget left", func(s *snapshot) { s.quiet, s.armed, s.tokens = true, 1<<20, ms }, doNothing, OutcomeBudget},
		{"quiet, armed, a look without a budget", func(s *snapshot) { s.quiet, s.armed, s.budget = true, 1<<20, 0 }, doNothing, OutcomeDue},
		{"quiet, nothing allocated since the last release", func(s *snapshot) { s.quiet, s.armed = true, 1<<10 }, doNothing, OutcomeNone},
		{"first release, price unknown", func(s *snapshot) { s.quiet, s.armed, s.release, s.tokens = true, 1<<20, 0, 0 }, doRelease, OutcomeRelease},
	}
	for _, tt := range tests {
		s := base
		tt.edit(&s)
		act, out := decide(s)
		if act != tt.act || out != tt.out {
			t.Errorf("%s: got %v/%v, want %v/%v", tt.name, act, out, tt.act, tt.out)
		}
	}
}

func TestCharge(t *testing.T) {
	tests := []struct {
		cost, pacer   time.Duration
		garbage, pile uint64
		want          time.Duration
	}{
		{ms, 0, 1 << 20, 4 << 20, 750 * us},      // no pacer cycle seen: it costs what ours does
		{ms, ms, 1 << 20, 4 << 20, 750 * us},     // the same, measured
		{ms, 2 * ms, 1 << 20, 4 << 20, 500 * us}, // the pacer's dearer: it saves more
		{ms, 8 * ms, 1 << 20, 4 << 20, 0},        // dearer than ours by the pile's share: free
		{ms, ms, 1 << 20, 0, ms},                 // GOGC=off: all extra
		{ms, ms, 4 << 20, 4 << 20, 0},
		{ms, ms, 8 << 20, 4 << 20, 0},
		{ms, ms, 0, 4 << 20, ms},
	}
	for _, tt := range tests {
		if got := charge(tt.cost, tt.pacer, tt.garbage, tt.pile); got != tt.want {
			t.Errorf("charge(%v, %v, %d, %d): got %v, want %v", tt.cost, tt.pacer, tt.garbage, tt.pile, got, tt.want)
		}
	}
}
