package gcstep

import (
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	// base has garbage enough, a budget that pays and has earned the
	// cycle since the last, a gap that fits.
	base := snapshot{Decision: Decision{Garbage: 1 << 20, Live: 1 << 20, Pile: 4 << 20, Budget: ms, Gap: ms,
		Wall: 300 * us, Cost: 500 * us, Tokens: 10 * ms, Since: ms}, release: 2 * ms, minGarbage: 256 << 10, procs: 2}
	tests := []struct {
		name string
		edit func(*snapshot)
		act  action
		out  Outcome
	}{
		{"garbage, budget and a gap that fits: inline", func(s *snapshot) {}, doInline, OutcomeInline},
		{"too little garbage", func(s *snapshot) { s.Garbage = 100 << 10 }, doNothing, OutcomeNone},
		{"budget spent", func(s *snapshot) { s.Tokens = 100 * us }, doNothing, OutcomeBudget},
		{"the release's reserve is not for cycles", func(s *snapshot) { s.Tokens, s.reserve = 2*ms, 1800*us }, doNothing, OutcomeBudget},
		{"saved up, but not earned since the last cycle", func(s *snapshot) { s.Since = 300 * us }, doNothing, OutcomeBudget},
		{"earned since the last cycle, but spent", func(s *snapshot) { s.Tokens, s.Since = 300*us, 10*ms }, doNothing, OutcomeBudget},
		{"the pace is the charge and its churn", func(s *snapshot) { s.Churn = 700 * us }, doNothing, OutcomeBudget},
		{"earned the charge and its churn since the last cycle", func(s *snapshot) { s.Since, s.Churn = 2*ms, 700*us }, doInline, OutcomeInline},
		{"no cycle priced yet: the first learns its price", func(s *snapshot) { s.Cost, s.Since, s.Churn = 0, 0, 700*us }, doInline, OutcomeInline},
		{"no cycle priced yet: its churn is not counted either", func(s *snapshot) { s.Cost, s.Tokens, s.Churn = 0, 500*us, 700*us }, doInline, OutcomeInline},
		{"no cycle priced yet, but the release's reserve not left", func(s *snapshot) { s.Cost, s.Tokens, s.reserve = 0, 1500*us, 1800*us }, doNothing, OutcomeBudget},
		{"a release does not wait for the pace", func(s *snapshot) { s.quiet, s.armed, s.Since = true, 1<<20, 0 }, doRelease, OutcomeRelease},
		{"budget below zero", func(s *snapshot) { s.Tokens = -ms }, doNothing, OutcomeBudget},
		{"the budget pays the cycle, not its churn", func(s *snapshot) { s.Tokens, s.Churn = ms, 700*us }, doNothing, OutcomeBudget},
		{"the budget pays the cycle and its churn", func(s *snapshot) { s.Tokens, s.Churn = ms, 200*us }, doInline, OutcomeInline},
		{"a release owes no churn", func(s *snapshot) { s.quiet, s.armed, s.Tokens, s.Churn = true, 1<<20, 3*ms, 5*ms }, doRelease, OutcomeRelease},
		{"a pile near the pacer's is nearly free", func(s *snapshot) { s.Tokens, s.Since, s.Garbage = 100*us, 100*us, 3900<<10 }, doInline, OutcomeInline},
		{"no pacer: the whole cycle is charged", func(s *snapshot) { s.Pile = 0; s.Tokens = 400 * us }, doNothing, OutcomeBudget},
		{"a gap shorter than the cycle: the pacer's", func(s *snapshot) { s.Gap = 100 * us }, doNothing, OutcomeGap},
		{"a gap shorter than the cycle, over budget too", func(s *snapshot) { s.Gap, s.Tokens = 100*us, 0 }, doNothing, OutcomeGap},
		{"a cycle of ours still marks", func(s *snapshot) { s.marking = true }, doNothing, OutcomeNone},
		{"the heap grows back into a release's pages: the pacer's", func(s *snapshot) { s.refill = true }, doNothing, OutcomeNone},
		{"growing back, and quiet again: release", func(s *snapshot) { s.refill, s.quiet, s.armed = true, true, 1<<20 }, doRelease, OutcomeRelease},
		{"one P: inline, whatever the gap", func(s *snapshot) { s.Gap, s.procs = 100*us, 1 }, doInline, OutcomeInline},
		{"no gap known: inline", func(s *snapshot) { s.Gap = 0 }, doInline, OutcomeInline},
		{"a look without a budget: due", func(s *snapshot) { s.Budget = 0 }, doNothing, OutcomeDue},
		{"quiet and armed: release", func(s *snapshot) { s.quiet, s.armed = true, 1<<20 }, doRelease, OutcomeRelease},
		{"quiet, armed, no budget left", func(s *snapshot) { s.quiet, s.armed, s.Tokens = true, 1<<20, ms }, doNothing, OutcomeBudget},
		{"quiet, armed, a look without a budget", func(s *snapshot) { s.quiet, s.armed, s.Budget = true, 1<<20, 0 }, doNothing, OutcomeDue},
		{"quiet, nothing allocated since the last release", func(s *snapshot) { s.quiet, s.armed = true, 1<<10 }, doNothing, OutcomeNone},
		{"first release, price unknown", func(s *snapshot) { s.quiet, s.armed, s.release, s.Tokens = true, 1<<20, 0, 0 }, doRelease, OutcomeRelease},
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
