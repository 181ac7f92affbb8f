package machine

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var tiny = Sizes{Cycles: 2, Wakes: 2, Fault: 2 << 20, Syscall: 10}

func TestMeasureAllReportsEveryCost(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	costs, err := MeasureAll(3, tiny)
	require.NoError(t, err)
	assert.Equal(t, prev, runtime.GOMAXPROCS(0), "GOMAXPROCS restored")
	names := map[string]int{}
	for _, c := range costs {
		names[c.Name]++
		assert.Positive(t, c.Median, c.Name)
		assert.LessOrEqual(t, c.Min, c.Median, c.Name)
		assert.LessOrEqual(t, c.Median, c.Max, c.Name)
	}
	want := len(ProcsToTry(runtime.NumCPU()))
	assert.Equal(t, want, names[NameCycle])
	assert.Equal(t, want-1, names[NameWake])
	assert.Equal(t, 1, names[NameFault])
	assert.Equal(t, 1, names[NameSyscall])
}

func TestRepeatTakesTheMedian(t *testing.T) {
	vals := []int{5, 1, 9, 3, 7}
	i := 0
	c := Repeat("x", 2, len(vals), func() (d time.Duration) {
		d = time.Duration(vals[i])
		i++
		return d
	})
	assert.Equal(t, Cost{Name: "x", Procs: 2, Median: 5, Min: 1, Max: 9}, c)
}

func TestProcsToTry(t *testing.T) {
	assert.Equal(t, []int{1}, ProcsToTry(1))
	assert.Equal(t, []int{1, 8}, ProcsToTry(8))
}

func TestProbe(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	p := Probe()
	assert.Equal(t, prev, runtime.GOMAXPROCS(0), "GOMAXPROCS restored")
	assert.Equal(t, runtime.NumCPU(), p.Procs)
	assert.Positive(t, p.CycleOne)
	assert.Positive(t, p.CycleAll)
	if p.Procs > 1 {
		assert.Positive(t, p.Wake, "a wakeup is measured with more than one CPU")
	} else {
		assert.Zero(t, p.Wake)
	}
}
