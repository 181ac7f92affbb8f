package lab

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"runtime/metrics"
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
		Garbage: 300 << 10, Cost: 250 * time.Microsecond, Ours: 0.25, Pacer: 0.5})
	l.record(gcstep.Decision{At: 2 * time.Millisecond, Busy: true, Outcome: gcstep.OutcomeWait, Wait: 800 * time.Microsecond})
	l.record(gcstep.Decision{}) // past the end
	path := filepath.Join(t.TempDir(), "d.tsv")
	require.NoError(t, l.write(path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 4)
	assert.Equal(t, decisionHeader, lines[0])
	cols := len(strings.Split(decisionHeader, "\t"))
	assert.Equal(t, "1.500\tfalse\t1000\tinline\t307200\t0\t0\t0\t0\t250\t0.2500\t0.5000\t0", lines[1])
	assert.Len(t, strings.Split(lines[2], "\t"), cols)
	assert.Contains(t, lines[2], "\twait\t")
	assert.True(t, strings.HasSuffix(lines[2], "\t800"), lines[2])
	assert.Equal(t, "# dropped 1 decisions: the log was full", lines[3])
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
	var cycles uint64
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		require.Len(t, f, len(strings.Split(decisionHeader, "\t")), l)
		if f[3] == "inline" || f[3] == "background" {
			cycles++
		}
	}
	assert.Equal(t, res.Stepper.CyclesInline+res.Stepper.CyclesBackground, cycles, "cycles among the decisions")
}

// A child's exchange rate reaches its stepper: memory priced dear makes
// it collect smaller piles, so more often, than memory priced cheap; a
// rate that is not positive is refused.
func TestChildExchangeRate(t *testing.T) {
	cycles := func(x float64) uint64 {
		return pacedCycles(t, func(s *ChildSpec) { s.ExchangeRate = x })
	}
	cheap, dear := cycles(0.05), cycles(50)
	assert.Greater(t, dear, 2*cheap, "cycles of ours with memory at 50 against 0.05")
	res := runChild(ChildSpec{Workload: "paced", Stepping: "default", GC: GCSetting{Name: "GOGC=100", GOGC: "100"},
		Quick: true, SampleEvery: 10 * time.Millisecond, ExchangeRate: -1})
	assert.Contains(t, res.Error, "exchange_rate -1")
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
// resident would take their garbage (doc/policy.md, "A resident pile"),
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
	return res.Stepper.CyclesInline + res.Stepper.CyclesBackground
}

// A mark slack that is not positive is refused, as the option would
// panic in the child.
func TestChildMarkSlackRefused(t *testing.T) {
	res := runChild(ChildSpec{Workload: "paced", Stepping: "default", GC: GCSetting{Name: "GOGC=100", GOGC: "100"},
		Quick: true, SampleEvery: 10 * time.Millisecond, MarkSlack: -1})
	assert.Contains(t, res.Error, "mark_slack -1")
}

// A mark allowance that is not a share, or is negative, is refused, as
// the option would panic in the child; "inf" is a share.
func TestChildMarkAllowanceRefused(t *testing.T) {
	for _, bad := range []string{"-1", "half", "NaN"} {
		res := runChild(ChildSpec{Workload: "paced", Stepping: "default", GC: GCSetting{Name: "GOGC=100", GOGC: "100"},
			Quick: true, SampleEvery: 10 * time.Millisecond, MarkAllowance: bad})
		assert.Contains(t, res.Error, "mark_allowance", bad)
	}
	res := runChild(ChildSpec{Workload: "paced", Stepping: "default", GC: GCSetting{Name: "GOGC=100", GOGC: "100"},
		Quick: true, SampleEvery: 10 * time.Millisecond, MarkAllowance: "inf"})
	assert.Empty(t, res.Error)
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
