package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/bench/footprint/internal/lab"
	"github.com/idlemux/idlemux/gcstep"
)

// TestQuickFrontier runs a tiny frontier, one workload at two GOGC points
// under one condition, and checks only what cannot flake: every run
// finished and lost no byte, the tables and a chart were written, the
// ratios are finite. It runs with the quick lab:
//
//	IDLEMUX_FOOTPRINT_LAB=1 go test -count=1 -run TestQuickFrontier ./bench/footprint
func TestQuickFrontier(t *testing.T) {
	if os.Getenv(labEnv) == "" {
		t.Skipf("the quick frontier starts a dozen processes; set %s=1 to run it", labEnv)
	}
	if testing.Short() {
		t.Skip("skipped under -short")
	}
	dir := t.TempDir()
	c, err := newFrontierConfig(dir, true, 1, "paced", "100,25", "1P", 10*time.Millisecond, 0, "test")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, progress bytes.Buffer
	rep, err := runFrontier(ctx, c, &stdout, &progress)
	require.NoError(t, err, progress.String())

	// floor, two GOGC points, the memory limit, the stepper at 100 and off
	require.Len(t, rep.Results, 6, progress.String())
	for _, r := range rep.Results {
		assert.True(t, r.OK, "%s: %s %s", r.Point, r.Check, r.Error)
		assert.Positive(t, r.PeakRSS, r.Point)
		assert.Positive(t, r.AvgRSS, r.Point)
		assert.Positive(t, r.Wall, r.Point)
		assert.Positive(t, r.Own, r.Point)
	}
	require.Len(t, rep.Verdicts, 2, "the stepper at GOGC=100 and off")
	require.Len(t, rep.AvgVerdicts, 2, "the stepper at GOGC=100 and off")
	for _, v := range append(rep.Verdicts, rep.AvgVerdicts...) {
		assert.NotEmpty(t, v.Best, "a pacer point to judge against")
		assert.False(t, math.IsInf(v.Ratio, 0) || math.IsNaN(v.Ratio), "ratio %v", v.Ratio)
	}
	assert.Contains(t, stdout.String(), "of it, runtime's own")
	assert.Contains(t, stdout.String(), fmt.Sprintf(verdictHead, "peak RSS"))
	assert.Contains(t, stdout.String(), fmt.Sprintf(verdictHead, "time-averaged RSS"))

	b, err := os.ReadFile(filepath.Join(dir, "frontier.json"))
	require.NoError(t, err)
	var got frontierReport
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Len(t, got.Results, len(rep.Results))
	txt, err := os.ReadFile(filepath.Join(dir, "frontier.txt"))
	require.NoError(t, err)
	assert.Equal(t, stdout.String(), string(txt))
	png, err := os.ReadFile(filepath.Join(dir, "frontier-paced.png"))
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "a PNG")
}

func TestJudge(t *testing.T) {
	const mib = 1 << 20
	pacer := func(gogc string, over int64, cpu float64) frontierSummary {
		return frontierSummary{Workload: "w", Condition: "c", Kind: kindPacer, GOGC: gogc, Point: "GOGC=" + gogc, OverPeak: over, CPU: cpu}
	}
	sum := []frontierSummary{
		pacer("400", 1*mib, 2), // the least memory, but not judged: 400 is not in the rule
		pacer("100", 8*mib, 1.0),
		pacer("50", 6*mib, 0.95),
		pacer("25", 4*mib, 0.90), // 0.90 < 1.0/1.1: too cheap to count
		{Workload: "w", Condition: "c", Kind: kindStepper, GOGC: "100", Point: "stepper GOGC=100", OverPeak: 3 * mib, CPU: 1.0},
	}
	vs := judge(sum, memPeak)
	require.Len(t, vs, 1)
	v := vs[0]
	assert.Equal(t, "GOGC=50", v.Best, "the lowest among the judged points using ≥ 1/1.1 of the stepper's CPU")
	assert.InDelta(t, 0.5, v.Ratio, 1e-9)
	assert.True(t, v.OnOrBelow)
	assert.True(t, v.QuarterBelow)
	assert.False(t, v.Cheaper)

	// A stepper dearer than every judged point by more than 10 % is
	// judged against the lowest of them, marked cheaper.
	sum[4].CPU, sum[4].OverPeak = 2, 5*mib
	v = judge(sum, memPeak)[0]
	assert.True(t, v.Cheaper)
	assert.Equal(t, "GOGC=25", v.Best)
	assert.InDelta(t, 1.25, v.Ratio, 1e-9)
	assert.False(t, v.OnOrBelow)

	// By the time-averaged RSS, a stepper that empties the gaps can be
	// below the frontier where its peak is above it.
	sum[4].CPU, sum[4].OverPeak, sum[4].OverAvg = 1.0, 7*mib, mib
	sum[1].OverAvg, sum[2].OverAvg, sum[3].OverAvg = 5*mib, 4*mib, 2*mib
	v = judge(sum, memPeak)[0]
	assert.Equal(t, "GOGC=50", v.Best)
	assert.False(t, v.QuarterBelow, "peak: 7 MiB against 6")
	v = judge(sum, memAvg)[0]
	assert.Equal(t, memAvg, v.Memory)
	assert.Equal(t, "GOGC=50", v.Best, "GOGC=25 is too cheap to count here too")
	assert.InDelta(t, 0.25, v.Ratio, 1e-9)
	assert.True(t, v.QuarterBelow)

	// A best at the floor does not make the ratio infinite.
	sum[4].CPU = 1.0
	sum[2].OverPeak = -mib
	v = judge(sum, memPeak)[0]
	assert.False(t, math.IsInf(v.Ratio, 0))
}

func TestTimeAveraged(t *testing.T) {
	s := []lab.Sample{{T: 0, RSS: 10}, {T: 1, RSS: 30}, {T: 3, RSS: 0}}
	assert.EqualValues(t, (10*1+30*2)/3, timeAveraged(s))
	assert.EqualValues(t, 7, timeAveraged([]lab.Sample{{RSS: 7}}))
	assert.Zero(t, timeAveraged(nil))
}

func TestNewFrontierConfig(t *testing.T) {
	c, err := newFrontierConfig("d", false, 0, "", "", "", time.Millisecond, 0, "")
	require.NoError(t, err)
	assert.Equal(t, 3, c.runs)
	assert.Len(t, c.workloads, 5)
	assert.Equal(t, defaultFrontierGOGC, c.gogcs)
	assert.Equal(t, conditions, c.conditions)
	for _, bad := range [][3]string{{"bigheap", "", ""}, {"", "100,100", ""}, {"", "off", ""}, {"", "", "nope"}} {
		_, err := newFrontierConfig("d", false, 1, bad[0], bad[1], bad[2], time.Millisecond, 0, "")
		assert.Error(t, err, "%q", bad)
	}
	_, err = newFrontierConfig("d", false, 1, "", "", "", time.Millisecond, -1, "")
	assert.ErrorContains(t, err, "-warmup -1")
}

// A run's stepper counts reach its frontier row: cycles, and trims.
func TestFrontierRunOfCountsTheStepper(t *testing.T) {
	r := lab.RunResult{Workload: "paced", OK: true, Wall: 1, Blocked: 0.5,
		Stepper: &gcstep.Stats{CyclesInline: 2, CyclesBackground: 3, Trims: 1}}
	fr := frontierRunOf(r, condition{Name: "both"}, point{Kind: kindStepper, GOGC: "100"}, 0)
	assert.EqualValues(t, 5, fr.Stepped)
	assert.EqualValues(t, 1, fr.Trims)
	assert.InDelta(t, 0.5, fr.IdleShare, 1e-9)
	assert.Zero(t, frontierRunOf(lab.RunResult{Workload: "paced"}, condition{Name: "both"}, point{Kind: kindPacer, GOGC: "100"}, 0).Trims)
}
