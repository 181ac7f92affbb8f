package promidle_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/promidle"
)

// newRuntime returns a Runtime that has taken a few steps over some
// garbage, closed when the test ends.
func newRuntime(t *testing.T) *gcstep.Runtime {
	t.Helper()
	rt := gcstep.NewRuntime()
	t.Cleanup(rt.Close)
	for range 3 {
		for range 64 {
			garbage = append(garbage, make([]byte, 32<<10))
		}
		garbage = nil
		for rt.Step(time.Millisecond) {
		}
	}
	return rt
}

var garbage [][]byte

// The names, types and help pass promlint, and a pedantic registry finds
// every metric collected described, and consistent.
func TestLint(t *testing.T) {
	rt := newRuntime(t)
	for _, ns := range []string{"", "myapp"} {
		reg := prometheus.NewPedanticRegistry()
		if err := reg.Register(promidle.NewCollector(rt, ns)); err != nil {
			t.Fatalf("namespace %q: Register: %v", ns, err)
		}
		problems, err := testutil.GatherAndLint(reg)
		if err != nil {
			t.Fatalf("namespace %q: GatherAndLint: %v", ns, err)
		}
		for _, p := range problems {
			t.Errorf("namespace %q: %s: %s", ns, p.Metric, p.Text)
		}
	}
}

func TestCount(t *testing.T) {
	c := promidle.NewCollector(newRuntime(t), "")
	for _, tt := range []struct {
		names []string
		want  int
	}{
		{nil, 17},
		{[]string{"gcstep_cycles_total"}, 3},
		{[]string{"gcstep_declined_total"}, 3},
		{[]string{"gcstep_releases_total", "gcstep_live_heap_bytes"}, 2},
	} {
		if got := testutil.CollectAndCount(c, tt.names...); got != tt.want {
			t.Errorf("metrics named %v: got %d, want %d", tt.names, got, tt.want)
		}
	}
}

// A namespace takes the place of "gcstep" in every name.
func TestNamespace(t *testing.T) {
	rt := newRuntime(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(promidle.NewCollector(rt, ""), promidle.NewCollector(rt, "myapp_gc"))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var gcstep, myapp int
	for _, mf := range families {
		switch name := mf.GetName(); {
		case strings.HasPrefix(name, "gcstep_"):
			gcstep++
		case strings.HasPrefix(name, "myapp_gc_"):
			myapp++
			if strings.Contains(name, "gcstep") {
				t.Errorf("%s: still says gcstep", name)
			}
		default:
			t.Errorf("%s: got neither prefix", name)
		}
	}
	if gcstep != 13 || myapp != 13 {
		t.Errorf("families: got %d gcstep_ and %d myapp_gc_, want 13 each", gcstep, myapp)
	}
}

// The values are the Stats': those that change only as the Runtime steps
// are compared exactly (the budget earned grows with the process's CPU
// time, and the pacer's cycles as it runs them).
func TestValues(t *testing.T) {
	rt := newRuntime(t)
	c := promidle.NewCollector(rt, "")
	s := rt.Stats()
	want := fmt.Sprintf(`
# HELP gcstep_declined_total Cycles and releases the stepper declined: they would have cost more than its budget had left (budget), outlasted the expected idle gap (gap), or started while the last cycle's garbage was still being swept (sweep).
# TYPE gcstep_declined_total counter
gcstep_declined_total{reason="budget"} %d
gcstep_declined_total{reason="gap"} %d
gcstep_declined_total{reason="sweep"} %d
# HELP gcstep_releases_total Releases of memory to the operating system completed.
# TYPE gcstep_releases_total counter
gcstep_releases_total %d
# HELP gcstep_released_bytes_total Bytes returned to the operating system by the releases.
# TYPE gcstep_released_bytes_total counter
gcstep_released_bytes_total %d
# HELP gcstep_steps_total Idle steps taken, including those that did nothing.
# TYPE gcstep_steps_total counter
gcstep_steps_total %d
`, s.DeclinedBudget, s.DeclinedGap, s.DeclinedSweep, s.Releases, s.ReleasedBytes, s.Steps)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"gcstep_declined_total", "gcstep_releases_total", "gcstep_released_bytes_total", "gcstep_steps_total"); err != nil {
		t.Error(err)
	}
	if s.Steps < 3 {
		t.Errorf("Steps: got %d, want 3 or more", s.Steps)
	}

	// Each scrape reads the Stats afresh.
	rt.Step(time.Millisecond)
	want = fmt.Sprintf(`
# HELP gcstep_steps_total Idle steps taken, including those that did nothing.
# TYPE gcstep_steps_total counter
gcstep_steps_total %d
`, s.Steps+1)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "gcstep_steps_total"); err != nil {
		t.Errorf("after a Step: %v", err)
	}
}

func TestNilRuntime(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "promidle: ") {
			t.Errorf("recovered %v, want a panic that starts with promidle: ", r)
		}
	}()
	promidle.NewCollector(nil, "")
}
