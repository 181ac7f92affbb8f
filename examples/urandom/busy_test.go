package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBusyLevels runs two modes at two -busy levels: every mode runs at
// every level, and the runs at 50 % had a burner that took some CPU.
func TestBusyLevels(t *testing.T) {
	out, errOut, status := command(t, nil, "-len", "300001", "-readers", "3", "-chunk", "1000",
		"-mode", "off,idle", "-busy", "0,50", "-procs", "1", "-frontier", "none", "-json")
	require.Equal(t, 0, status, errOut)
	rs := decodeLines(t, out)
	require.Len(t, rs, 4)
	var got []string
	for _, r := range rs {
		got = append(got, string(r.Mode)+"@"+map[int]string{0: "0", 50: "50"}[r.BusyPercent])
		assert.True(t, r.DigestOK, "%s at %d %%", r.Mode, r.BusyPercent)
		if r.BusyPercent == 0 {
			assert.Zero(t, r.BusyShare, "no burner at 0 %%")
		} else {
			assert.Positive(t, r.BusyShare, "%s: the burner ran", r.Mode)
		}
	}
	assert.Equal(t, []string{"off@0", "idle@0", "off@50", "idle@50"}, got, "interleaved: every mode at each level in turn")
}

func TestBusyTables(t *testing.T) {
	out, errOut, status := command(t, nil, "-len", "300001", "-readers", "3", "-chunk", "1000",
		"-mode", "off", "-busy", "0,100", "-procs", "1", "-probe=false")
	require.Equal(t, 0, status, errOut)
	tables := strings.Split(strings.TrimSpace(out), "\n\n")
	require.Len(t, tables, 6, "a heading and a table per level, then the levels side by side:\n%s", out)
	assert.NotContains(t, tables[0], "busy")
	assert.Contains(t, tables[2], "100 % of one CPU kept busy by another process")
	assert.Contains(t, tables[4], "CPU taken away")
	rows := strings.Split(tables[5], "\n")
	require.Len(t, rows, 3)
	assert.Regexp(t, `^\s+100\s+1\s+0 %\s+0 %\s+\d+\.\d MiB`, rows[1])
	assert.Regexp(t, `^\s+100\s+1\s+100 %\s+\d+ %\s+\d+\.\d MiB`, rows[2])
}

func TestWriteConditions(t *testing.T) {
	c := config{modes: []mode{modeOff, modeIdle}, runs: 3}
	groups := [][]result{
		{{Mode: modeOff, GOGC: "100", GOMAXPROCS: 2, PeakRSSBytes: 8 << 20, WallSeconds: 0.5}, {Mode: modeIdle, GOGC: "100", GOMAXPROCS: 2, PeakRSSBytes: 4 << 20, WallSeconds: 0.55}},
		{{Mode: modeOff, GOGC: "100", GOMAXPROCS: 1, BusyPercent: 50, BusyShare: 0.49, PeakRSSBytes: 8 << 20, WallSeconds: 0.6}, {Mode: modeIdle, GOGC: "100", GOMAXPROCS: 1, BusyPercent: 50, BusyShare: 0.48, PeakRSSBytes: 6 << 20, WallSeconds: 0.6}},
		{{Mode: modeIdle, GOGC: "400", GOMAXPROCS: 2, BusyPercent: 100, BusyShare: 1, PeakRSSBytes: 5 << 20, WallSeconds: 1}},
	}
	var b strings.Builder
	require.NoError(t, writeConditions(&b, c, groups, "; load 1.0"))
	want := `peak RSS and wall by GOGC and CPU taken away by another process (% of one CPU: asked, taken); ratios to off at the same level, medians of 3 runs; load 1.0

  GOGC  GOMAXPROCS   busy  taken  off peak    wall  idle peak    wall  idle/off peak  wall
   100           2    0 %    0 %   8.0 MiB  0.50 s    4.0 MiB  0.55 s           0.50  1.10
   100           1   50 %   49 %   8.0 MiB  0.60 s    6.0 MiB  0.60 s           0.75  1.00
   400           2  100 %  100 %         -       -    5.0 MiB  1.00 s              -     -
`
	assert.Equal(t, want, b.String())
}
