package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
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
		// Whether a pacer point costs no more than the stepper is up to
		// the machine: either one was chosen and the ratio is finite,
		// or none was cheaper, and then there is no ratio.
		if v.Best == "" {
			assert.Equal(t, noneCheaper, v.None, "%s: two pacer points ran", v.Memory)
			assert.Nil(t, v.Ratio)
			continue
		}
		require.NotNil(t, v.Ratio, v.Memory)
		assert.False(t, math.IsInf(*v.Ratio, 0) || math.IsNaN(*v.Ratio), "ratio %v", *v.Ratio)
	}
	assert.Contains(t, stdout.String(), "of it, runtime's own")
	assert.Contains(t, stdout.String(), verdictHead("peak RSS"))
	assert.Contains(t, stdout.String(), verdictHead("time-averaged RSS"))

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

// judgeCase is one workload under one condition: its pacer points and
// its stepper, memory over the floor in MiB.
type judgeCase struct {
	name    string
	pacers  []judgePoint
	stepper judgePoint
	memory  string
	best    string  // "" for none
	none    string  // why none
	ratio   float64 // when best is set
	on      bool
	quarter bool
}

type judgePoint struct {
	gogc      string
	cpu       float64
	peak, avg float64 // MiB over the floor
}

func (c judgeCase) summary() []frontierSummary {
	const mib = 1 << 20
	s := func(kind string, p judgePoint) frontierSummary {
		name := "GOGC=" + p.gogc
		if kind == kindStepper {
			name = "stepper " + name
		}
		return frontierSummary{Workload: "w", Condition: "c", Kind: kind, GOGC: p.gogc, Point: name,
			OverPeak: int64(p.peak * mib), OverAvg: int64(p.avg * mib), CPU: p.cpu}
	}
	var sum []frontierSummary
	for _, p := range c.pacers {
		sum = append(sum, s(kindPacer, p))
	}
	// Neither the memory-limit point nor another condition's points are
	// on this frontier, however cheap and small.
	sum = append(sum, frontierSummary{Workload: "w", Condition: "c", Kind: kindLimit, GOGC: "off", Point: "GOGC=off GOMEMLIMIT=1KiB", CPU: 0.1})
	other := s(kindPacer, judgePoint{"100", 0.1, 0, 0})
	other.Condition = "1P"
	return append(sum, other, s(kindStepper, c.stepper))
}

// frontierPoints is a frontier as it usually runs: the lower the GOGC,
// the more CPU and the less memory.
var frontierPoints = []judgePoint{
	{"400", 0.80, 16, 8},
	{"200", 0.90, 12, 6},
	{"100", 1.00, 8, 4},
	{"50", 1.20, 6, 3},
	{"25", 1.70, 4, 2},
	{"10", 2.50, 2, 1},
}

func TestJudge(t *testing.T) {
	tests := []judgeCase{
		{
			// The old rule judged this stepper against GOGC=10, at 2.5
			// times its CPU, and failed it; GOGC=400 it did not judge.
			name:    "cheap stepper against dearer low GOGC",
			pacers:  []judgePoint{{"400", 0.80, 16, 8}, {"100", 1.00, 8, 4}, {"25", 1.70, 4, 2}, {"10", 2.50, 2, 1}},
			stepper: judgePoint{"100", 1.00, 3, 1},
			memory:  memPeak, best: "GOGC=100", ratio: 3.0 / 8, on: true, quarter: true,
		},
		{
			name:    "cheap stepper by average",
			pacers:  []judgePoint{{"400", 0.80, 16, 8}, {"100", 1.00, 8, 4}, {"25", 1.70, 4, 2}, {"10", 2.50, 2, 1}},
			stepper: judgePoint{"100", 1.00, 3, 1},
			memory:  memAvg, best: "GOGC=100", ratio: 1.0 / 4, on: true, quarter: true,
		},
		{
			name:    "stepper dearer than every point: the lowest of all",
			pacers:  frontierPoints,
			stepper: judgePoint{"off", 3.00, 1, 0.5},
			memory:  memPeak, best: "GOGC=10", ratio: 0.5, on: true, quarter: true,
		},
		{
			name:    "stepper dearer than every point, above it",
			pacers:  frontierPoints,
			stepper: judgePoint{"off", 3.00, 3, 0.5},
			memory:  memPeak, best: "GOGC=10", ratio: 1.5,
		},
		{
			name:    "stepper cheaper than every point by over 10 %",
			pacers:  frontierPoints,
			stepper: judgePoint{"100", 0.70, 1, 0.5},
			memory:  memPeak, none: noneCheaper,
		},
		{
			name:    "stepper cheaper than every point by over 10 %, by average",
			pacers:  frontierPoints,
			stepper: judgePoint{"100", 0.70, 1, 0.5},
			memory:  memAvg, none: noneCheaper,
		},
		{
			name:    "a point at 1.10 times the stepper's CPU costs no more",
			pacers:  []judgePoint{{"400", 1.50, 9, 5}, {"100", 2.20, 3, 2}, {"50", 2.21, 2, 1}},
			stepper: judgePoint{"100", 2.00, 2.25, 1},
			memory:  memPeak, best: "GOGC=100", ratio: 0.75, on: true, quarter: true,
		},
		{
			name:    "a point just over 1.10 times the stepper's CPU costs more",
			pacers:  []judgePoint{{"50", 2.21, 2, 1}},
			stepper: judgePoint{"100", 2.00, 2.25, 1},
			memory:  memPeak, none: noneCheaper,
		},
		{
			// Within 10 %, a point dearer than the stepper counts; the old
			// rule also took it, but not GOGC=400 beside it.
			name:    "a dearer point within 10 % and a cheap one",
			pacers:  []judgePoint{{"400", 0.50, 1.5, 5}, {"100", 1.05, 2, 1}},
			stepper: judgePoint{"100", 1.00, 1.5, 1},
			memory:  memPeak, best: "GOGC=400", ratio: 1, on: true,
		},
		{
			// By peak and by average, different points can be the frontier.
			name:    "by average, another point",
			pacers:  []judgePoint{{"400", 0.50, 1.5, 5}, {"100", 1.05, 2, 1}},
			stepper: judgePoint{"100", 1.00, 1.5, 1},
			memory:  memAvg, best: "GOGC=100", ratio: 1, on: true,
		},
		{
			name:    "a frontier point at the floor counts as 0.1 MiB",
			pacers:  []judgePoint{{"100", 1.00, -1, 0}},
			stepper: judgePoint{"100", 1.00, 50.0 / 1024, 0}, // 50 KiB
			memory:  memPeak, best: "GOGC=100", ratio: 0.5, on: true, quarter: true,
		},
		{
			name:    "no pacer point ran",
			stepper: judgePoint{"100", 1.00, 1, 1},
			memory:  memPeak, none: noneRan,
		},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			vs := judge(c.summary(), c.memory)
			require.Len(t, vs, 1)
			v := vs[0]
			assert.Equal(t, c.memory, v.Memory)
			assert.Equal(t, c.stepper.gogc, v.StepperGOGC)
			assert.Equal(t, c.best, v.Best)
			assert.Equal(t, c.none, v.None)
			if c.best == "" {
				assert.Nil(t, v.Ratio, "no ratio without a frontier point")
			} else if assert.NotNil(t, v.Ratio) {
				assert.InDelta(t, c.ratio, *v.Ratio, 1e-9)
			}
			assert.Equal(t, c.on, v.OnOrBelow, "on or below")
			assert.Equal(t, c.quarter, v.QuarterBelow, "25 % below")
		})
	}
}

// The summary names the chosen point by each measure, and marks a stepper
// with nothing at its cost instead of printing a ratio.
func TestWriteVerdicts(t *testing.T) {
	c := judgeCase{pacers: []judgePoint{{"400", 0.50, 1.5, 5}, {"100", 1.05, 2, 1}}, stepper: judgePoint{"100", 1.00, 1.5, 1}}
	sum := c.summary()
	cheap := judgeCase{pacers: frontierPoints, stepper: judgePoint{"100", 0.70, 1, 0.5}}.summary()
	for i := range cheap {
		if cheap[i].Condition == "c" {
			cheap[i].Condition = "busy"
		}
	}
	sum = append(sum, cheap...)
	for _, tt := range []struct {
		memory, column, best string
	}{
		{memPeak, "frontier point by peak", "GOGC=400"},
		{memAvg, "frontier point by average", "GOGC=100"},
	} {
		var b bytes.Buffer
		writeVerdicts(&b, judge(sum, tt.memory), 0)
		out := b.String()
		assert.Contains(t, out, verdictHead(memoryNames[tt.memory]))
		assert.Contains(t, out, tt.column)
		lines := strings.Split(out, "\n")
		row := func(cond string) string { // its cells, one space apart
			for _, l := range lines {
				if f := strings.Fields(l); len(f) > 1 && f[0] == "w" && f[1] == cond {
					return strings.Join(f, " ")
				}
			}
			t.Fatalf("%s: no row for condition %s in\n%s", tt.memory, cond, out)
			return ""
		}
		assert.Contains(t, row("c"), "1.00s "+tt.best+" ", "the stepper's CPU, then the chosen point")
		assert.True(t, strings.HasSuffix(row("busy"), "0.70s "+noneCheaper+" - - - n/a n/a"), "no point, no ratio: %s", row("busy"))
	}
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
	for _, b := range []float64{-0.1, 1.5} {
		assert.ErrorContains(t, c.setBudget(b), "-budget", "%v", b)
	}
	require.NoError(t, c.setBudget(0.1))
	assert.Equal(t, 0.1, c.budget)
}

// A run's stepper counts reach its frontier row: cycles, and releases.
func TestFrontierRunOfCountsTheStepper(t *testing.T) {
	r := lab.RunResult{Workload: "paced", OK: true, Wall: 1, Blocked: 0.5,
		Stepper: &gcstep.Stats{CyclesInline: 5, CyclesOutlasted: 2, Releases: 1}}
	fr := frontierRunOf(r, condition{Name: "both"}, point{Kind: kindStepper, GOGC: "100"}, 0)
	assert.EqualValues(t, 5, fr.Stepped)
	assert.EqualValues(t, 1, fr.Releases)
	assert.InDelta(t, 0.5, fr.IdleShare, 1e-9)
	assert.Zero(t, frontierRunOf(lab.RunResult{Workload: "paced"}, condition{Name: "both"}, point{Kind: kindPacer, GOGC: "100"}, 0).Releases)
}
