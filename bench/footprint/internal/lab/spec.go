package lab

import (
	"fmt"
	"runtime"
	"time"

	"github.com/idlemux/idlemux/gcstep"
)

// A GCSetting is how the Go runtime's own collector is configured for a
// run, through the child's environment.
type GCSetting struct {
	Name     string `json:"name"`     // "GOGC=100", "GOGC=off,GOMEMLIMIT=…"
	GOGC     string `json:"gogc"`     // the GOGC value
	MemLimit string `json:"memlimit"` // the GOMEMLIMIT value, or ""
}

// GCSettings returns the runtime configurations for a workload. GOGC=off
// needs a memory limit to be usable at all; it is set per workload, a
// little above what the workload keeps live, so that the limit, not the
// machine, bounds the heap.
func GCSettings(w Workload, quick bool) []GCSetting {
	off := GCSetting{
		Name:     "GOGC=off+" + w.MemLimit,
		GOGC:     "off",
		MemLimit: w.MemLimit,
	}
	if quick {
		return []GCSetting{{Name: "GOGC=100", GOGC: "100"}, off}
	}
	return []GCSetting{
		{Name: "GOGC=50", GOGC: "50"},
		{Name: "GOGC=100", GOGC: "100"},
		{Name: "GOGC=400", GOGC: "400"},
		off,
	}
}

// Steppings are the idle-stepping policies, in table order.
var Steppings = []string{"off", "naive", "runtime"}

// stepper returns the gcstep.Stepper for a stepping policy, nil for "off",
// and a function that releases it. The policies that make a gcstep.Runtime
// pass it opts too.
//
//   - off: no stepper; the loop is a plain multiplexer.
//   - naive: runtime.GC() at every idle moment, the obvious first try; it
//     reports no more work, so the loop blocks after each cycle.
//   - runtime: gcstep.NewRuntime with its defaults, the lab's policy.
//   - default: gcstep.NewRuntime() with no options at all, on every
//     workload: what a user who copies the README's snippet gets. The
//     frontier (bench/footprint -frontier) measures this one.
//
// runtime and default are the same stepper (gcstep has no option per
// workload); both names stay, so that -stepping lists and child specs
// written for either run.
func stepper(name string, opts ...gcstep.Option) (gcstep.Stepper, func(), error) {
	switch name {
	case "off":
		return nil, func() {}, nil
	case "naive":
		return gcstep.Func(func(time.Duration) bool {
			runtime.GC()
			return false
		}), func() {}, nil
	case "runtime", "default":
		rt := gcstep.NewRuntime(opts...)
		return rt, rt.Close, nil
	}
	return nil, nil, fmt.Errorf("unknown stepping policy %q", name)
}

// A ChildSpec tells a child process which run to make. The parent passes it
// as JSON in the environment variable ChildEnv.
type ChildSpec struct {
	Workload string    `json:"workload"`
	Stepping string    `json:"stepping"`
	GC       GCSetting `json:"gc"`
	Quick    bool      `json:"quick"`
	// Floor asks for the workload's floor variant (Workload.Floor).
	Floor bool `json:"floor,omitempty"`
	// Out is where the child writes its RunResult as JSON.
	Out string `json:"out"`
	// Profile, if set, is where the child writes a heap profile taken
	// at its peak RSS; such runs are not timed.
	Profile string `json:"profile,omitempty"`
	// SampleEvery is the RSS and heap sampling period.
	SampleEvery time.Duration `json:"sample_every"`
	// Decisions, if set, is where the child writes every decision of
	// its stepper (gcstep.WithDecisions), one tab-separated line each,
	// for a run made by hand (bench/README.md, "The frontier", says how).
	// Only the runtime and default policies make any.
	Decisions string `json:"decisions,omitempty"`
	// Budget, if set, is passed to the runtime and default policies as
	// gcstep.WithBudget: the share of the program's CPU time idle
	// collection may cost, in (0, 1]; 0 keeps the default.
	Budget float64 `json:"budget,omitempty"`
	// MinGarbage, if set, is passed to the runtime and default policies
	// as gcstep.WithMinGarbage, in bytes; 0 keeps the default.
	MinGarbage uint64 `json:"min_garbage,omitempty"`
	// WarmupMiB, if set, makes the child a program with a past: before
	// the workload (and before its stepper is made) it allocates that
	// many MiB in 64 KiB buffers it writes, 2 MiB of them live at a
	// time, as a program that loaded its data or served a burst before
	// its loop settled would. The pages the heap grew to stay resident.
	WarmupMiB int `json:"warmup_mib,omitempty"`
}

// ChildEnv is the environment variable that makes the process a child.
const ChildEnv = "IDLEMUX_FOOTPRINT_CHILD"
