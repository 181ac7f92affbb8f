package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var tiny = sizes{cycles: 2, wakes: 2, fault: 2 << 20, syscall: 10}

func TestMeasureAllReportsEveryCost(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	costs, err := measureAll(3, tiny)
	require.NoError(t, err)
	assert.Equal(t, prev, runtime.GOMAXPROCS(0), "GOMAXPROCS restored")
	names := map[string]int{}
	for _, c := range costs {
		names[c.Name]++
		assert.Positive(t, c.Median, c.Name)
		assert.LessOrEqual(t, c.Min, c.Median, c.Name)
		assert.LessOrEqual(t, c.Median, c.Max, c.Name)
	}
	want := len(procsToTry(runtime.NumCPU()))
	assert.Equal(t, want, names["gc-cycle"])
	assert.Equal(t, want-1, names["wake"])
	assert.Equal(t, 1, names["fault-4k"])
	assert.Equal(t, 1, names["syscall"])
}

func TestRepeatTakesTheMedian(t *testing.T) {
	vals := []int{5, 1, 9, 3, 7}
	i := 0
	c := repeat("x", 2, len(vals), func() (d time.Duration) {
		d = time.Duration(vals[i])
		i++
		return d
	})
	assert.Equal(t, cost{Name: "x", Procs: 2, Median: 5, Min: 1, Max: 9}, c)
}

func TestProcsToTry(t *testing.T) {
	assert.Equal(t, []int{1}, procsToTry(1))
	assert.Equal(t, []int{1, 8}, procsToTry(8))
}

func TestRunRejectsBadFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"-rounds", "0"}, &out, &errOut))
	assert.Equal(t, "machine: -rounds must be at least 1\n", errOut.String())
	errOut.Reset()
	assert.Equal(t, 2, run([]string{"-nope"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "-nope")
	assert.Empty(t, out.String())
}

func TestTableAndJSON(t *testing.T) {
	costs := []cost{{Name: "gc-cycle", Procs: 2, Median: 263000, Min: 208000, Max: 382000}, {Name: "syscall", Median: 900, Min: 800, Max: 1000}}
	var buf bytes.Buffer
	printTable(&buf, costs)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 5)
	assert.Equal(t, []string{"gc-cycle", "2", "263.00", "µs", "208.00", "µs", "382.00", "µs"}, strings.Fields(lines[3]))
	assert.Equal(t, []string{"syscall", "-", "900", "ns", "800", "ns", "1.00", "µs"}, strings.Fields(lines[4]))

	b, err := json.Marshal(costs[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"gc-cycle","gomaxprocs":2,"median_ns":263000,"min_ns":208000,"max_ns":382000}`, string(b))
}
