package main

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/internal/machine"
)

func offAt(gogc string, peakMiB, wall, cpu float64) result {
	return result{Mode: modeOff, GOGC: gogc, PeakRSSBytes: uint64(peakMiB * (1 << 20)), WallSeconds: wall, CPUSeconds: cpu}
}

func TestBestGOGC(t *testing.T) {
	idle := result{Mode: modeIdle, GOGC: "100", PeakRSSBytes: 8 << 20, WallSeconds: 1, CPUSeconds: 1}
	tests := []struct {
		name  string
		off   []result
		want  string // the best GOGC, "" for none
		words string // in bestLine
	}{
		{"the lowest peak that costs no more", []result{offAt("100", 8, 0.9, 0.9), offAt("25", 5, 1, 1), offAt("10", 4, 1.2, 1.2)}, "25",
			"best GOGC 25 holds 5.0 MiB; the idle mode holds 8.0 MiB, 1.60× of it, at 1.00× its wall and 1.00× its CPU"},
		{"10 % more CPU is no more", []result{offAt("100", 8, 0.9, 0.9), offAt("25", 5, 0.9, 1.1)}, "25", "best GOGC 25"},
		{"more than 10 % more CPU is out", []result{offAt("100", 8, 0.9, 0.9), offAt("25", 5, 0.9, 1.11)}, "100", "best GOGC 100"},
		{"wall is shown, not judged", []result{offAt("100", 8, 1.5, 0.9)}, "100", "at 0.67× its wall"},
		{"none costs no more", []result{offAt("100", 8, 1, 1.2)}, "", "no GOGC setting tried costs as little as the idle mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := bestSet{procs: 2, off: tt.off, idle: idle}
			at, found := s.best()
			assert.Equal(t, tt.want != "", found)
			if found {
				assert.Equal(t, tt.want, s.off[at].GOGC)
			}
			line := bestLine(s)
			assert.True(t, strings.HasPrefix(line, "with 2 Ps: "), line)
			assert.Contains(t, line, tt.words)
		})
	}
}

func TestWriteBest(t *testing.T) {
	c := config{runs: 3, modes: []mode{modeOff, modeIdle}, frontier: []string{"100", "25"}}
	sets := []bestSet{
		{procs: 2, off: []result{offAt("100", 8, 0.5, 0.6), offAt("25", 6, 0.6, 0.7)}, idle: result{Mode: modeIdle, GOGC: "100", PeakRSSBytes: 8 << 20, WallSeconds: 0.5, CPUSeconds: 0.6}},
		{procs: 1, off: []result{offAt("100", 8, 0.5, 0.4), offAt("25", 5, 0.5, 0.45)}, idle: result{Mode: modeIdle, GOGC: "100", PeakRSSBytes: 4 << 20, WallSeconds: 0.55, CPUSeconds: 0.5}},
	}
	var b strings.Builder
	require.NoError(t, writeBest(&b, c, "100", 0, sets))
	want := `the best GOGC beside the stepper: the off loop at GOGC 100, 25 and the idle mode at GOGC=100, medians of 3 runs;
best GOGC: the lowest peak RSS among the GOGC settings that cost no more CPU than the idle mode (within 10 %)

  GOMAXPROCS  mode  GOGC  peak RSS  ×idle    wall  ×idle     CPU  ×idle  costs no more
           2  off    100   8.0 MiB   1.00  0.50 s   1.00  0.60 s   1.00            yes  best GOGC
           2  off     25   6.0 MiB   0.75  0.60 s   1.20  0.70 s   1.17             no
           2  idle   100   8.0 MiB   1.00  0.50 s   1.00  0.60 s   1.00              -
           1  off    100   8.0 MiB   2.00  0.50 s   0.91  0.40 s   0.80            yes
           1  off     25   5.0 MiB   1.25  0.50 s   0.91  0.45 s   0.90            yes  best GOGC
           1  idle   100   4.0 MiB   1.00  0.55 s   1.00  0.50 s   1.00              -

with 2 Ps: best GOGC 100 holds 8.0 MiB; the idle mode holds 8.0 MiB, 1.00× of it, at 1.00× its wall and 1.00× its CPU
with 1 P: best GOGC 25 holds 5.0 MiB; the idle mode holds 4.0 MiB, 0.80× of it, at 1.10× its wall and 1.11× its CPU
`
	assert.Equal(t, want, b.String())
}

func TestPricesLine(t *testing.T) {
	line := pricesLine(machine.Prices{Procs: 2, CycleAll: 260 * time.Microsecond, CycleOne: 52 * time.Microsecond, Wake: 150 * time.Microsecond})
	assert.Contains(t, line, "0.26 ms with 2 Ps,\n0.05 ms with 1 P (5.0× less); waking a sleeping thread costs 0.15 ms")
	dearer := pricesLine(machine.Prices{Procs: 2, CycleAll: 110 * time.Microsecond, CycleOne: 130 * time.Microsecond, Wake: 70 * time.Microsecond})
	assert.Contains(t, dearer, "0.13 ms with 1 P (1.2× more)")
	same := pricesLine(machine.Prices{Procs: 2, CycleAll: 100 * time.Microsecond, CycleOne: 105 * time.Microsecond})
	assert.Contains(t, same, "(about the same)")
	one := pricesLine(machine.Prices{Procs: 1, CycleAll: 50 * time.Microsecond, CycleOne: 50 * time.Microsecond})
	assert.Contains(t, one, "1 CPU")
	assert.NotContains(t, one, "waking")
}

func TestPlan(t *testing.T) {
	c := config{modes: []mode{modeIdle, modeGoroutines}, gogcs: []string{"100", "off"}, busy: []int{0}, procs: []int{2, 1}, frontier: []string{"400", "100"}}
	var got []string
	for _, s := range c.plan() {
		got = append(got, strings.Join([]string{string(s.mode), s.gogc, map[int]string{1: "1", 2: "2"}[s.procs]}, "/"))
	}
	assert.Equal(t, []string{
		"idle/100/2", "goroutines/100/2", "off/100/2", "idle/off/2", "goroutines/off/2", "off/400/2",
		"idle/100/1", "goroutines/100/1", "off/100/1", "idle/off/1", "goroutines/off/1", "off/400/1",
	}, got, "the off loop joins at the frontier's GOGC settings, every GOMAXPROCS in turn")

	c.modes = []mode{modeGoroutines}
	assert.Len(t, c.plan(), 4, "no idle mode: no frontier")
}

func TestChildEnviron(t *testing.T) {
	env := childEnviron([]string{"HOME=/h", "GOGC=5", "GOMAXPROCS=8", childEnv + "=x"}, "off", 1, "idle 1/3")
	assert.Equal(t, []string{"HOME=/h", "GOGC=off", "GOMAXPROCS=1", childEnv + "=idle 1/3"}, env)
}

// TestDefaultOutput runs the command as a newcomer would, on a short
// stream: the machine's prices, every mode with every CPU and with one P,
// and the idle mode beside the best GOGC.
func TestDefaultOutput(t *testing.T) {
	out, errOut, status := command(t, nil, "-len", "300001", "-readers", "3", "-chunk", "1000")
	require.Equal(t, 0, status, errOut)
	parts := strings.Split(strings.TrimSpace(out), "\n\n")
	require.Len(t, parts, 6, "prices, heading and table, heading and best table, best lines:\n%s", out)
	assert.True(t, strings.HasPrefix(parts[0], "this machine ("), parts[0])
	procs := machineProcs(runtime.NumCPU())
	rows := strings.Split(parts[2], "\n")[1:]
	require.Len(t, rows, len(procs)*len(allModes), parts[2])
	for i, row := range rows {
		f := strings.Fields(row)
		assert.Equal(t, string(allModes[i%len(allModes)]), f[0])
		assert.Equal(t, procs[i/len(allModes)], atoi(t, f[1]), "GOMAXPROCS")
		assert.Equal(t, "ok", f[len(f)-1])
	}
	best := strings.Split(parts[4], "\n")[1:]
	assert.Len(t, best, len(procs)*(len(defaultFrontier)+1), parts[4])
	lines := strings.Split(parts[5], "\n")
	require.Len(t, lines, len(procs))
	for _, l := range lines {
		assert.Regexp(t, `^with \d+ Ps?: (best GOGC \d+ holds|no GOGC setting)`, l)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}
