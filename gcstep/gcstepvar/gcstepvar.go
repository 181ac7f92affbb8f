// Package gcstepvar renders a gcstep.Runtime's Stats for expvar
// (/debug/vars). It is a package of its own because expvar brings in
// net/http, which a program of gcstep's alone does not need.
package gcstepvar

import (
	"expvar"
	"time"

	"github.com/idlemux/idlemux/gcstep"
)

// New returns an expvar.Var that renders rt's Stats, read afresh each
// time, as one JSON object: each field under its name in snake_case,
// counts and bytes as integers, durations as seconds (a float64) under
// their name with "_seconds" appended ("releases", "released_bytes",
// "cycle_cost_seconds").
//
// New does not publish it: expvar's names are process-wide and a second
// Publish of one panics, so the program publishes it once, under a name
// of its choice, and serves /debug/vars as expvar does:
//
//	expvar.Publish("gcstep", gcstepvar.New(rt))
func New(rt *gcstep.Runtime) expvar.Var {
	return expvar.Func(func() any { return varStats(rt.Stats()) })
}

// statsVar is Stats as New renders it. The fields are listed rather than
// found by reflection, which would cost a walk of the struct at every
// read of /debug/vars; a test fails when Stats gains a field missing here.
type statsVar struct {
	Steps            uint64  `json:"steps"`
	CyclesInline     uint64  `json:"cycles_inline"`
	CyclesOutlasted  uint64  `json:"cycles_outlasted"`
	CyclesOther      uint64  `json:"cycles_other"`
	DeclinedBudget   uint64  `json:"declined_budget"`
	DeclinedGap      uint64  `json:"declined_gap"`
	DeclinedSweep    uint64  `json:"declined_sweep"`
	Releases         uint64  `json:"releases"`
	ReleasedBytes    uint64  `json:"released_bytes"`
	StepTime         float64 `json:"step_time_seconds"`
	CycleTime        float64 `json:"cycle_time_seconds"`
	StepsDelayedWork uint64  `json:"steps_delayed_work"`
	DelayedWorkTime  float64 `json:"delayed_work_time_seconds"`
	Earned           float64 `json:"earned_seconds"`
	Charged          float64 `json:"charged_seconds"`
	Churn            float64 `json:"churn_seconds"`
	CycleCost        float64 `json:"cycle_cost_seconds"`
	CycleWall        float64 `json:"cycle_wall_seconds"`
	PacerCycleCost   float64 `json:"pacer_cycle_cost_seconds"`
	ReleaseCost      float64 `json:"release_cost_seconds"`
	Bounds           uint64  `json:"bounds"`
	LiveAfterCycle   uint64  `json:"live_after_cycle"`
	GOGCRepaired     uint64  `json:"gogc_repaired"`
}

func varStats(s gcstep.Stats) statsVar {
	sec := time.Duration.Seconds
	return statsVar{
		Steps:            s.Steps,
		CyclesInline:     s.CyclesInline,
		CyclesOutlasted:  s.CyclesOutlasted,
		CyclesOther:      s.CyclesOther,
		DeclinedBudget:   s.DeclinedBudget,
		DeclinedGap:      s.DeclinedGap,
		DeclinedSweep:    s.DeclinedSweep,
		Releases:         s.Releases,
		ReleasedBytes:    s.ReleasedBytes,
		StepTime:         sec(s.StepTime),
		CycleTime:        sec(s.CycleTime),
		StepsDelayedWork: s.StepsDelayedWork,
		DelayedWorkTime:  sec(s.DelayedWorkTime),
		Earned:           sec(s.Earned),
		Charged:          sec(s.Charged),
		Churn:            sec(s.Churn),
		CycleCost:        sec(s.CycleCost),
		CycleWall:        sec(s.CycleWall),
		PacerCycleCost:   sec(s.PacerCycleCost),
		ReleaseCost:      sec(s.ReleaseCost),
		Bounds:           s.Bounds,
		LiveAfterCycle:   s.LiveAfterCycle,
		GOGCRepaired:     s.GOGCRepaired,
	}
}
