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
	// cycles come in streaks that pass within milliseconds. On a
	// machine where they are slow all the time, every cycle that the
	// relaxed estimate let run overruns its budget; each such cycle
	// doubles the half-life, up to maxHalfLife, and a cycle that keeps
	// within its estimate brings it back.
	factorHalfLife = 50 * time.Millisecond
	maxHalfLife    = time.Second
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
	halfLife time.Duration       // how fast factor relaxes: factorHalfLife, doubled by each disproved relaxation
}

func newCostModel() costModel {
	c := costModel{factor: 1, halfLife: factorHalfLife}
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
// evidence of a slow machine weighs no more than its age allows, unless
// the cycle proved the relaxed estimate wrong.
func (c *costModel) learn(live uint64, d, now time.Duration) {
	m := model(live)
	if m <= 0 || d <= 0 {
		return
	}
	ratio := min(max(float64(d)/float64(m), 1.0/16), 16)
	// What the estimate said when the cycle started: over it, and only
	// because the factor had relaxed, means relaxing was wrong here.
	// The ratios already there relax with it, unless this cycle
	// disproved the relaxation: then they stand as measured.
	start := now - d
	predicted := c.estimate(live, start)
	switch {
	case d > predicted && c.factor > 1 && predicted < time.Duration(c.factor*float64(m)):
		c.halfLife = min(2*c.halfLife, maxHalfLife)
	case d <= predicted:
		c.halfLife = factorHalfLife
		fallthrough
	default:
		for i, r := range c.ratios {
			c.ratios[i] = c.relax(r, now-c.factorAt)
		}
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
	return time.Duration(c.relax(c.factor, now-c.factorAt) * float64(model(live)))
}

// relax moves a pessimistic cost ratio (> 1) towards 1 with the model's
// half-life over age.
func (c *costModel) relax(f float64, age time.Duration) float64 {
	if f > 1 && age > 0 {
		f = 1 + (f-1)*math.Exp2(-float64(age)/float64(c.halfLife))
	}
	return f
}
