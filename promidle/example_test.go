package promidle_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/promidle"
)

// A program registers the collector once, beside its own metrics, and
// serves the registry (promhttp.HandlerFor) at /metrics.
func ExampleNewCollector() {
	rt := gcstep.NewRuntime()
	defer rt.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(promidle.NewCollector(rt, ""))

	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range families {
		fmt.Println(mf.GetType(), mf.GetName())
	}
	// Output:
	// COUNTER gcstep_budget_charged_seconds_total
	// COUNTER gcstep_budget_earned_seconds_total
	// GAUGE gcstep_cycle_cost_seconds
	// GAUGE gcstep_cycle_wall_seconds
	// COUNTER gcstep_cycles_total
	// COUNTER gcstep_declined_total
	// GAUGE gcstep_live_heap_bytes
	// GAUGE gcstep_pacer_cycle_cost_seconds
	// GAUGE gcstep_release_cost_seconds
	// COUNTER gcstep_released_bytes_total
	// COUNTER gcstep_releases_total
	// COUNTER gcstep_step_seconds_total
	// COUNTER gcstep_steps_total
}
