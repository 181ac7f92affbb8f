package lab

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gcstep"
)

// The log keeps decisions in memory the collector does not scan: a
// pointer in a gcstep.Decision would be hidden from it there.
func TestDecisionHoldsNoPointers(t *testing.T) {
	typ := reflect.TypeOf(gcstep.Decision{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		switch f.Type.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
		default:
			t.Errorf("gcstep.Decision.%s is a %s: the decision log may not keep it outside the Go heap", f.Name, f.Type)
		}
	}
}

func TestDecisionLogWritesAndDrops(t *testing.T) {
	l, err := newDecisionLog(2)
	require.NoError(t, err)
	defer l.close()
	l.record(gcstep.Decision{At: 1500 * time.Microsecond, Budget: time.Millisecond, Outcome: gcstep.OutcomeInline,
		Garbage: 300 << 10, Live: 1 << 20, Pile: 4 << 20, Gap: 2 * time.Millisecond, Wall: 400 * time.Microsecond,
		Cost: 250 * time.Microsecond, Pacer: 200 * time.Microsecond, Churn: 40 * time.Microsecond,
		Tokens: 3 * time.Millisecond, Since: 500 * time.Microsecond})
	l.record(gcstep.Decision{At: 2 * time.Millisecond, Outcome: gcstep.OutcomeBudget, Cost: 800 * time.Microsecond,
		Tokens: -120 * time.Microsecond})
	l.record(gcstep.Decision{}) // past the end
	path := filepath.Join(t.TempDir(), "d.tsv")
	require.NoError(t, l.write(path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 4)
	assert.Equal(t, decisionHeader, lines[0])
	assert.Equal(t, "1.500\t1000\tinline\t307200\t1048576\t4194304\t2000\t400\t250\t200\t40\t3000\t500", lines[1])
	assert.Equal(t, "2.000\t0\tbudget\t0\t0\t0\t0\t0\t800\t0\t0\t-120\t0", lines[2])
	assert.Equal(t, "# dropped 1 decisions: the log was full", lines[3])
}

// The log records on the stepper's goroutine with its lock held, into
// memory mapped beforehand: recording, and dropping once full, allocate
// nothing.
func TestDecisionLogRecordAllocatesNothing(t *testing.T) {
	l, err := newDecisionLog(64)
	require.NoError(t, err)
	defer l.close()
	d := gcstep.Decision{At: time.Millisecond, Outcome: gcstep.OutcomeInline, Garbage: 1 << 20}
	assert.Zero(t, testing.AllocsPerRun(200, func() { l.record(d) }), "allocations per decision")
	assert.Equal(t, 64, len(l.d))
	assert.Positive(t, l.dropped)
}

// A child asked for its decisions writes one line for each, and the
// cycles among them are the stepper's own count.
func TestChildWritesItsDecisions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.tsv")
	res := runChild(ChildSpec{Workload: "paced", Stepping: "default", GC: GCSetting{Name: "GOGC=100", GOGC: "100"},
		Quick: true, SampleEvery: 10 * time.Millisecond, Decisions: path})
	require.Empty(t, res.Error)
	require.True(t, res.OK)
	require.NotNil(t, res.Stepper)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Equal(t, decisionHeader, lines[0])
	head := strings.Split(decisionHeader, "\t")
	outcome := slices.Index(head, "outcome")
	var cycles uint64
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		require.Len(t, f, len(head), l)
		if f[outcome] == "inline" {
			cycles++
		}
	}
	assert.Equal(t, res.StepperCycles(), cycles, "cycles among the decisions")
}

// A child's budget reaches its stepper, which earns that share of the
// process's CPU time; a share out of (0, 1] is refused, as the option
// would panic in the child.
func TestChildBudget(t *testing.T) {
	debug.FreeOSMemory()
	res := runChild(ChildSpec{Workload: "paced", Stepping: "default", GC: GCSetting{Name: "GOGC=100", GOGC: "100"},
		Quick: true, SampleEvery: 10 * time.Millisecond, Budget: 0.5})
	require.Empty(t, res.Error)
	require.True(t, res.OK)
	require.NotNil(t, res.Stepper)
	// Earned from the stepper's making to its last look; the CPU time
	// from just after the making to the end of the run.
	cpu := res.CPUUser + res.CPUSys
	share := res.Stepper.Earned.Seconds() / cpu
	assert.True(t, share > 0.25 && share < 0.55, "earned %v of %.3fs CPU: a share of %.3f, want about 0.5",
		res.Stepper.Earned, cpu, share)
	for _, bad := range []float64{-1, 1.5, math.NaN(), math.Inf(1)} {
		res := runChild(ChildSpec{Workload: "paced", Stepping: "default", GC: GCSetting{Name: "GOGC=100", GOGC: "100"},
			Quick: true, SampleEvery: 10 * time.Millisecond, Budget: bad})
		assert.Contains(t, res.Error, "budget", bad)
	}
}

// A child's least garbage reaches its stepper: with more than the
// whole stream's, it runs no cycle of its own.
func TestChildMinGarbage(t *testing.T) {
	cycles := func(n uint64) uint64 {
		return pacedCycles(t, func(s *ChildSpec) { s.MinGarbage = n })
	}
	assert.Positive(t, cycles(0), "cycles of ours at the default")
	assert.Zero(t, cycles(1<<40), "cycles of ours with a TiB as the least garbage")
}

// pacedCycles runs the quick paced child with the default stepper at
// GOGC=100, its spec changed by set, and returns the cycles its stepper
// ran. The children run in this process: what the tests before left
// resident would take their garbage,
// so it is returned first.
func pacedCycles(t *testing.T, set func(*ChildSpec)) uint64 {
	t.Helper()
	debug.FreeOSMemory()
	spec := ChildSpec{Workload: "paced", Stepping: "default", GC: GCSetting{Name: "GOGC=100", GOGC: "100"},
		Quick: true, SampleEvery: 10 * time.Millisecond}
	set(&spec)
	res := runChild(spec)
	require.Empty(t, res.Error)
	require.True(t, res.OK)
	require.NotNil(t, res.Stepper)
	return res.StepperCycles()
}

// A child with a past runs its workload after the warm-up, whose pages
// its RSS still counts; a negative warm-up is refused.
func TestChildWarmUp(t *testing.T) {
	allocs := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	before := allocs()
	res := runChild(ChildSpec{Workload: "paced", Stepping: "off", GC: GCSetting{Name: "GOGC=100", GOGC: "100"},
		Quick: true, SampleEvery: 10 * time.Millisecond, WarmupMiB: 8})
	require.Empty(t, res.Error)
	assert.True(t, res.OK)
	// The quick paced stream reads 8 MiB into fresh buffers; the warm-up
	// allocates 8 more.
	assert.GreaterOrEqual(t, allocs()-before, uint64(16<<20))
	res = runChild(ChildSpec{Workload: "paced", Stepping: "off", GC: GCSetting{Name: "GOGC=100", GOGC: "100"},
		Quick: true, SampleEvery: 10 * time.Millisecond, WarmupMiB: -1})
	assert.Contains(t, res.Error, "warmup_mib -1")
}
