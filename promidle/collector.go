package promidle

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idlemux/idlemux/gcstep"
)

// DefaultNamespace is the prefix of the metrics' names when NewCollector
// is given none.
const DefaultNamespace = "gcstep"

// NewCollector returns a Collector of rt's Stats, read once per scrape:
//
//	gcstep_cycles_total{kind="inline|outlasted|other"}
//	gcstep_declined_total{reason="budget|gap|sweep"}
//	gcstep_steps_total
//	gcstep_step_seconds_total
//	gcstep_releases_total
//	gcstep_released_bytes_total
//	gcstep_budget_earned_seconds_total
//	gcstep_budget_charged_seconds_total
//	gcstep_cycle_cost_seconds, gcstep_cycle_wall_seconds,
//	gcstep_release_cost_seconds, gcstep_live_heap_bytes (gauges)
//
// A namespace other than "" takes the place of "gcstep" in the names. The
// counters count from when the process's first Runtime was made (see
// gcstep.Stats), so a Runtime made and closed again starts them over, as
// a restart does.
func NewCollector(rt *gcstep.Runtime, namespace string) prometheus.Collector {
	if rt == nil {
		panic("promidle: NewCollector of a nil Runtime")
	}
	if namespace == "" {
		namespace = DefaultNamespace
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(namespace+"_"+name, help, labels, nil)
	}
	return &collector{
		rt:     rt,
		cycles: desc("cycles_total", "GC cycles: run by the stepper at an idle moment (inline), run by it and still marking when its budget ran out (outlasted), or run by the pacer or the program (other).", "kind"),
		declined: desc("declined_total", "Cycles and releases the stepper declined: they would have cost more than its budget had left (budget), "+
			"outlasted the expected idle gap (gap), or started while the last cycle's garbage was still being swept (sweep).", "reason"),
		steps:         desc("steps_total", "Idle steps taken, including those that did nothing."),
		stepTime:      desc("step_seconds_total", "Wall time spent inside idle steps."),
		releases:      desc("releases_total", "Releases of memory to the operating system completed."),
		releasedBytes: desc("released_bytes_total", "Bytes returned to the operating system by the releases."),
		earned:        desc("budget_earned_seconds_total", "CPU budget earned as a share of the program's own CPU time."),
		charged:       desc("budget_charged_seconds_total", "CPU budget spent: what the looks, cycles and releases were measured to cost, with the page faults and scavenging they caused."),
		cycleCost:     desc("cycle_cost_seconds", "Learned price of a GC cycle of the stepper's: the collector's CPU in it."),
		pacerCost:     desc("pacer_cycle_cost_seconds", "Learned price of a GC cycle of the runtime's pacer: the collector's CPU in it, assists included."),
		cycleWall:     desc("cycle_wall_seconds", "Learned time a GC cycle holds the caller."),
		releaseCost:   desc("release_cost_seconds", "Learned price of returning memory to the operating system."),
		liveHeap:      desc("live_heap_bytes", "Live heap found by the last GC cycle."),
	}
}

// collector is the Collector NewCollector returns.
type collector struct {
	rt *gcstep.Runtime

	cycles, declined                         *prometheus.Desc // labelled
	steps, stepTime, releases, releasedBytes *prometheus.Desc // counters
	earned, charged                          *prometheus.Desc // counters
	cycleCost, cycleWall, pacerCost          *prometheus.Desc // gauges
	releaseCost, liveHeap                    *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.cycles, c.declined, c.steps, c.stepTime, c.releases, c.releasedBytes,
		c.earned, c.charged, c.cycleCost, c.cycleWall, c.pacerCost, c.releaseCost, c.liveHeap,
	} {
		ch <- d
	}
}

// Collect implements prometheus.Collector with one read of the Stats, so
// that the metrics of a scrape agree with each other.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.rt.Stats()
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	sec := time.Duration.Seconds

	counter(c.cycles, float64(s.CyclesInline), "inline")
	counter(c.cycles, float64(s.CyclesOutlasted), "outlasted")
	counter(c.cycles, float64(s.CyclesOther), "other")
	counter(c.declined, float64(s.DeclinedBudget), "budget")
	counter(c.declined, float64(s.DeclinedGap), "gap")
	counter(c.declined, float64(s.DeclinedSweep), "sweep")
	counter(c.steps, float64(s.Steps))
	counter(c.stepTime, sec(s.StepTime))
	counter(c.releases, float64(s.Releases))
	counter(c.releasedBytes, float64(s.ReleasedBytes))
	counter(c.earned, sec(s.Earned))
	counter(c.charged, sec(s.Charged))
	gauge(c.cycleCost, sec(s.CycleCost))
	gauge(c.cycleWall, sec(s.CycleWall))
	gauge(c.pacerCost, sec(s.PacerCycleCost))
	gauge(c.releaseCost, sec(s.ReleaseCost))
	gauge(c.liveHeap, float64(s.LiveAfterCycle))
}
