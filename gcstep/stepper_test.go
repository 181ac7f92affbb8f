package gcstep

import (
	"testing"
	"time"
)

// recorder is a Stepper that records the budgets it was offered, spends
// part of each on a fake clock, and answers more as told.
type recorder struct {
	clock   *time.Time
	spend   time.Duration
	more    bool
	budgets []time.Duration
}

func (r *recorder) Step(budget time.Duration) bool {
	r.budgets = append(r.budgets, budget)
	if budget > 0 {
		*r.clock = r.clock.Add(min(r.spend, budget))
	}
	return r.more
}

func fakeChain(clock *time.Time, steppers ...Stepper) Stepper {
	c := Chain(steppers...).(chain)
	c.now = func() time.Time { return *clock }
	return c
}

func TestChainSharesTheBudget(t *testing.T) {
	clock := time.Unix(0, 0)
	a := &recorder{clock: &clock, spend: 3 * ms}
	b := &recorder{clock: &clock, spend: 5 * ms}
	c := &recorder{clock: &clock, spend: 5 * ms, more: true}
	d := &recorder{clock: &clock}
	more := fakeChain(&clock, a, nil, b, c, d).Step(10 * ms)
	equal(t, "more", more, true)
	equal(t, "budget of the first", a.budgets[0], 10*ms)
	equal(t, "budget of the second", b.budgets[0], 7*ms)
	equal(t, "budget of the third", c.budgets[0], 2*ms)
	equal(t, "budget of the fourth, after the budget ran out", d.budgets[0], 0)
	equal(t, "time spent", clock.Sub(time.Unix(0, 0)), 10*ms)
}

func TestChainMore(t *testing.T) {
	clock := time.Unix(0, 0)
	tests := []struct {
		name  string
		mores []bool
		want  bool
	}{
		{"none", nil, false},
		{"one without work", []bool{false}, false},
		{"one with work", []bool{true}, true},
		{"last has work", []bool{false, false, true}, true},
		{"first has work", []bool{true, false, false}, true},
		{"none has work", []bool{false, false, false}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var steppers []Stepper
			var recs []*recorder
			for _, m := range tt.mores {
				r := &recorder{clock: &clock, more: m}
				steppers = append(steppers, r)
				recs = append(recs, r)
			}
			equal(t, "more", fakeChain(&clock, steppers...).Step(ms), tt.want)
			for i, r := range recs {
				equal(t, "steps offered", len(r.budgets), 1)
				_ = i
			}
		})
	}
}

func TestChainZeroBudgetStillAsks(t *testing.T) {
	clock := time.Unix(0, 0)
	a := &recorder{clock: &clock, spend: ms}
	b := &recorder{clock: &clock, spend: ms, more: true}
	for _, budget := range []time.Duration{0, -ms} {
		a.budgets, b.budgets = nil, nil
		equal(t, "more", fakeChain(&clock, a, b).Step(budget), true)
		equal(t, "budget offered to the first", a.budgets[0], 0)
		equal(t, "budget offered to the second", b.budgets[0], 0)
	}
	equal(t, "time spent on zero budgets", clock.Sub(time.Unix(0, 0)), 0)
}

func TestChainOfRealClock(t *testing.T) {
	var got []time.Duration
	f := Func(func(budget time.Duration) bool {
		got = append(got, budget)
		return false
	})
	equal(t, "more", Chain(f, f).Step(time.Hour), false)
	equal(t, "steps", len(got), 2)
	for _, b := range got {
		check(t, b > 0 && b <= time.Hour, "budget %v, want in (0, 1h]", b)
	}
}

func TestFunc(t *testing.T) {
	var got time.Duration
	f := Func(func(budget time.Duration) bool { got = budget; return true })
	equal(t, "more", f.Step(7*ms), true)
	equal(t, "budget", got, 7*ms)
}

// idleRecorder is a Stepper that observes idle time.
type idleRecorder struct{ idle time.Duration }

func (r *idleRecorder) Step(time.Duration) bool { return false }
func (r *idleRecorder) Idled(d time.Duration)   { r.idle += d }

func TestChainPassesIdleTimeOn(t *testing.T) {
	clock := time.Unix(0, 0)
	a, b := &idleRecorder{}, &idleRecorder{}
	c := Chain(a, &recorder{clock: &clock}, nil, b)
	o, ok := c.(IdleObserver)
	mustEqual(t, "Chain is an IdleObserver", ok, true)
	o.Idled(3 * ms)
	o.Idled(2 * ms)
	equal(t, "idle time of the first", a.idle, 5*ms)
	equal(t, "idle time of the last", b.idle, 5*ms)
}
