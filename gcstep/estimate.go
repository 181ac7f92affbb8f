package gcstep

import (
	"math"
	"slices"
	"time"
)

// The cost model of an inline cycle before any is measured, and how the
// measured cycles correct it; doc/policy.md has the measurements.
const (
	modelFixed   = 250 * time.Microsecond
	modelPerByte = float64(time.Millisecond) / (1 << 20)
	// planFactor is the part of the budget an inline cycle may plan to
	// use: estimates are noisy.
	planFactor = 0.9
	// factorHalfLife is how fast a pessimistic cost factor relaxes
	// back to the model when no inline cycle runs to measure it: slow
	// cycles come in streaks that pass within milliseconds.
	factorHalfLife = 50 * time.Millisecond
	// costWindow is how many recent inline cycles the factor is taken
	// from, and costRank which of them in ascending order: the median,
	// because cycle times have a scheduler-made tail a mean would follow.
	costWindow = 9
	costRank   = costWindow / 2
)

// costModel estimates an inline cycle: a model linear in the live heap,
// times a factor learnt from the last costWindow cycles.
type costModel struct {
	ratios   [costWindow]float64 // measured / modelled, oldest overwritten first
	next     int                 // the slot the next measurement overwrites
	factor   float64             // median of ratios
	factorAt time.Duration       // when the last ratio was measured
}

func newCostModel() costModel {
	c := costModel{factor: 1}
	for i := range c.ratios {
		c.ratios[i] = 1
	}
	return c
}

func model(live uint64) time.Duration {
	return modelFixed + time.Duration(modelPerByte*float64(live))
}

// learn adds an inline cycle of live bytes that took d, measured at now.
// The ratios already there first relax as the factor does, so old
// evidence of a slow machine weighs no more than its age allows.
func (c *costModel) learn(live uint64, d, now time.Duration) {
	m := model(live)
	if m <= 0 || d <= 0 {
		return
	}
	ratio := min(max(float64(d)/float64(m), 1.0/16), 16)
	for i, r := range c.ratios {
		c.ratios[i] = relax(r, now-c.factorAt)
	}
	c.ratios[c.next] = ratio
	c.next = (c.next + 1) % costWindow
	sorted := c.ratios
	slices.Sort(sorted[:])
	c.factor = sorted[costRank]
	c.factorAt = now
}

// estimate is the predicted cost of an inline cycle with the given live
// heap at now.
func (c *costModel) estimate(live uint64, now time.Duration) time.Duration {
	return time.Duration(relax(c.factor, now-c.factorAt) * float64(model(live)))
}

// relax moves a pessimistic cost ratio (> 1) towards 1 with the half-life
// factorHalfLife over age.
func relax(f float64, age time.Duration) float64 {
	if f > 1 && age > 0 {
		f = 1 + (f-1)*math.Exp2(-float64(age)/float64(factorHalfLife))
	}
	return f
}
