package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/bench/footprint/internal/lab"
)

// labEnv opts in to TestQuickLab, the CI check of the whole lab.
const labEnv = "IDLEMUX_FOOTPRINT_LAB"

// TestQuickLab runs `footprint -quick` into a temporary directory and
// checks only what cannot flake: every run moved all its data intact,
// results.json is well-formed and complete, every chart was written. It
// takes about half a minute, so it runs only when asked:
//
//	IDLEMUX_FOOTPRINT_LAB=1 go test -count=1 -run TestQuickLab ./bench/footprint
func TestQuickLab(t *testing.T) {
	if os.Getenv(labEnv) == "" {
		t.Skipf("the quick lab takes half a minute; set %s=1 to run it", labEnv)
	}
	if testing.Short() {
		t.Skip("skipped under -short")
	}
	dir := t.TempDir()
	cfg := config{out: dir, quick: true, workloads: "urandom,bursty,tcp,bigheap", sample: 10 * time.Millisecond, profiles: true}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, progress bytes.Buffer
	rep, err := runLab(ctx, cfg, &stdout, &progress)
	if err != nil {
		t.Fatalf("lab: %v\n%s", err, progress.String())
	}

	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got report
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	want := 0
	for _, name := range cfg.list() {
		w, _ := lab.FindWorkload(name)
		want += len(lab.GCSettings(w, true)) * len(lab.Steppings)
	}
	if len(got.Runs) != want || len(rep.Runs) != want {
		t.Errorf("results.json has %d runs (report %d), want %d", len(got.Runs), len(rep.Runs), want)
	}
	for _, r := range got.Runs {
		name := r.Workload + "/" + r.GC.Name + "/" + r.Stepping
		if !r.OK || r.Error != "" {
			t.Errorf("%s: ok=%v error=%q check=%q", name, r.OK, r.Error, r.Check)
		}
		if r.Bytes <= 0 || r.PeakRSS == 0 || r.Wall <= 0 || len(r.Samples) == 0 {
			t.Errorf("%s: bytes %d, peak %d, wall %v, %d samples: want all positive", name, r.Bytes, r.PeakRSS, r.Wall, len(r.Samples))
		}
		if (r.Stepper != nil) != (r.Stepping == "runtime") {
			t.Errorf("%s: stepper stats %v, want them for the runtime policy only", name, r.Stepper)
		}
		// urandom makes 16 KiB of garbage per read and its loop waits
		// for the writer between reads: a Runtime that runs no cycle
		// there has stopped doing its job, unless it left every cycle
		// to the pacer because its budget could not pay for one or
		// because one would have outlasted the loop's gaps.
		if r.Workload == "urandom" && r.Stepper != nil && r.StepperCycles() == 0 && r.Stepper.DeclinedBudget == 0 && r.Stepper.DeclinedGap == 0 {
			t.Errorf("%s: the stepper ran no cycle (%+v)", name, *r.Stepper)
		}
		if r.Workload == "tcp" {
			if r.Requests <= 0 || r.Latency == nil || r.Latency.N != int(r.Requests) || r.Syscalls == 0 || r.HandlerSyscalls == 0 {
				t.Errorf("%s: %d requests, latency %+v, %d poller and %d handler syscalls", name, r.Requests, r.Latency, r.Syscalls, r.HandlerSyscalls)
			}
			if len(r.AfterBurstRSS) == 0 || len(r.AfterBurstMS) != len(lab.AfterBurstOffsets) || r.AfterBurstRSS[0][0] == 0 {
				t.Errorf("%s: RSS after bursts %v at %v ms", name, r.AfterBurstRSS, r.AfterBurstMS)
			}
		}
	}
	if len(got.Summary) != want {
		t.Errorf("%d summary rows, want %d", len(got.Summary), want)
	}
	if len(got.HeapDiff) != 1 || got.HeapDiff[0].Workload != "urandom" {
		t.Errorf("%d heap comparisons, want 1, of the first workload (urandom)", len(got.HeapDiff))
	}
	for _, name := range cfg.list() {
		w, _ := lab.FindWorkload(name)
		for _, chart := range []string{"rss-", "peak-vs-" + costName(w.Name) + "-"} {
			for _, ext := range []string{".png", ".svg"} {
				path := filepath.Join(dir, chart+w.Name+ext)
				b, err := os.ReadFile(path)
				switch {
				case err != nil:
					t.Error(err)
				case ext == ".png" && !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
					t.Errorf("%s is not a PNG", path)
				case ext == ".svg" && !bytes.Contains(b, []byte("<svg")):
					t.Errorf("%s is not an SVG", path)
				}
			}
		}
		if !strings.Contains(stdout.String(), w.Name+": ") {
			t.Errorf("no table for %s on stdout", w.Name)
		}
	}
}

// writeProfile writes a heap profile with the given in-use bytes per
// allocating function.
func writeProfile(t *testing.T, path string, inuse map[string]int64) {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}, {Type: "inuse_space", Unit: "bytes"}},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"},
	}
	id := uint64(0)
	for name, v := range inuse {
		id++
		fn := &profile.Function{ID: id, Name: name}
		loc := &profile.Location{ID: id, Line: []profile.Line{{Function: fn}}}
		p.Function = append(p.Function, fn)
		p.Location = append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{2 * v, v}})
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
}

func TestConfigSelects(t *testing.T) {
	cfg := config{workloads: "tcp", sample: time.Millisecond, gogc: "off,100", steppings: "runtime,off"}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	w, _ := lab.FindWorkload("tcp")
	var gcs []string
	for _, gc := range cfg.gcSettings(w) {
		gcs = append(gcs, gc.GOGC)
	}
	if strings.Join(gcs, ",") != "100,off" {
		t.Errorf("GC settings %v, want 100,off in the lab's order", gcs)
	}
	if got := strings.Join(cfg.stepping(), ","); got != "off,runtime" {
		t.Errorf("policies %s, want off,runtime in table order", got)
	}
	all := config{workloads: "tcp", sample: time.Millisecond}
	if err := all.validate(); err != nil {
		t.Fatal(err)
	}
	if len(all.gcSettings(w)) != len(lab.GCSettings(w, false)) || len(all.stepping()) != len(lab.Steppings) {
		t.Errorf("no selection: %d settings, %d policies; want all", len(all.gcSettings(w)), len(all.stepping()))
	}
}

func TestDiffHeapProfiles(t *testing.T) {
	dir := t.TempDir()
	off, on := filepath.Join(dir, "off.pprof"), filepath.Join(dir, "on.pprof")
	writeProfile(t, off, map[string]int64{"main.read": 5 << 20, "main.keep": 1 << 20, "main.gone": 2 << 20})
	writeProfile(t, on, map[string]int64{"main.read": 1 << 20, "main.keep": 1 << 20, "main.new": 3 << 20})
	d, err := diffHeapProfiles("w", off, on, 3)
	if err != nil {
		t.Fatal(err)
	}
	if d.OffTotal != 8<<20 || d.OnTotal != 5<<20 {
		t.Errorf("totals %d, %d; want %d, %d", d.OffTotal, d.OnTotal, 8<<20, 5<<20)
	}
	want := []funcInUse{
		{"main.read", 5 << 20, 1 << 20, 4 << 20},
		{"main.new", 0, 3 << 20, -3 << 20},
		{"main.gone", 2 << 20, 0, 2 << 20},
	}
	if len(d.Top) != len(want) {
		t.Fatalf("got %d rows %v, want %v", len(d.Top), d.Top, want)
	}
	for i := range want {
		if d.Top[i] != want[i] {
			t.Errorf("row %d: got %+v, want %+v", i, d.Top[i], want[i])
		}
	}
}

func TestSummariseTakesMediansPerConfiguration(t *testing.T) {
	gc := lab.GCSetting{Name: "GOGC=100", GOGC: "100"}
	var runs []lab.RunResult
	for i, peak := range []uint64{30, 10, 20} {
		for _, st := range []string{"runtime", "off"} {
			runs = append(runs, lab.RunResult{Workload: "w", GC: gc, Stepping: st, Round: i, OK: st == "off" || i != 1,
				PeakRSS: peak, Wall: float64(peak) / 10, Latency: &lab.Percentiles{P50: int64(peak)}})
		}
	}
	got := summarise(runs)
	if len(got) != 2 {
		t.Fatalf("got %d rows, want 2", len(got))
	}
	if got[0].Stepping != "off" || got[1].Stepping != "runtime" {
		t.Errorf("order %s, %s; want off, runtime", got[0].Stepping, got[1].Stepping)
	}
	for _, s := range got {
		if s.Runs != 3 || s.PeakRSS != 20 || s.Wall != 2 || s.P50 != 20 {
			t.Errorf("%s: runs %d, peak %d, wall %v, p50 %d; want 3, 20, 2, 20", s.Stepping, s.Runs, s.PeakRSS, s.Wall, s.P50)
		}
	}
	if !got[0].OK || got[1].OK {
		t.Errorf("ok: off %v, runtime %v; want true, false", got[0].OK, got[1].OK)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  config
		ok   bool
		want int
	}{
		{config{workloads: "urandom", sample: time.Millisecond}, true, 3},
		{config{workloads: "urandom", sample: time.Millisecond, quick: true}, true, 1},
		{config{workloads: "urandom,nope", sample: time.Millisecond}, false, 0},
		{config{workloads: "urandom", sample: 0}, false, 0},
		{config{workloads: "urandom", sample: time.Millisecond, rounds: -1}, false, 0},
		{config{workloads: "", sample: time.Millisecond}, false, 0},
		{config{workloads: "urandom", sample: time.Millisecond, gogc: "100,off"}, true, 3},
		{config{workloads: "urandom", sample: time.Millisecond, gogc: "200"}, false, 0},
		{config{workloads: "urandom", sample: time.Millisecond, gogc: "400", quick: true}, false, 0},
		{config{workloads: "urandom", sample: time.Millisecond, gogc: "400,off", quick: true}, true, 1},
		{config{workloads: "urandom", sample: time.Millisecond, steppings: "off,runtime"}, true, 3},
		{config{workloads: "urandom", sample: time.Millisecond, steppings: "off,lazy"}, false, 0},
		{config{workloads: "urandom", sample: time.Millisecond, busy: "0,50,100"}, true, 3},
		{config{workloads: "urandom", sample: time.Millisecond, busy: "50,50"}, false, 0},
		{config{workloads: "urandom", sample: time.Millisecond, busy: "120"}, false, 0},
		{config{workloads: "urandom", sample: time.Millisecond, busy: "half"}, false, 0},
	} {
		err := tc.cfg.validate()
		if (err == nil) != tc.ok {
			t.Errorf("%+v: err %v, want ok=%v", tc.cfg, err, tc.ok)
		}
		if tc.ok && tc.cfg.rounds != tc.want {
			t.Errorf("%+v: rounds %d, want %d", tc.cfg, tc.cfg.rounds, tc.want)
		}
	}
}

func TestSummariseRequestWorkload(t *testing.T) {
	gc := lab.GCSetting{Name: "GOGC=100", GOGC: "100"}
	run := func(st string, busy int, cpu float64, after [][]uint64) lab.RunResult {
		return lab.RunResult{Workload: "tcp", GC: gc, Stepping: st, OK: true, BusyPercent: busy,
			CPUUser: cpu, Requests: 100, Syscalls: 10, HandlerSyscalls: 200,
			AfterBurstMS: []int{100, 300, 1000}, AfterBurstRSS: after}
	}
	runs := []lab.RunResult{
		run("off", 0, 0.01, [][]uint64{{10, 20, 0}, {30, 40, 0}}),
		run("off", 0, 0.03, [][]uint64{{50, 60, 0}}),
		run("off", 50, 0.02, [][]uint64{{1, 2, 3}}),
	}
	got := summarise(runs)
	require.Len(t, got, 2, "busy levels are conditions of their own")
	s := got[0]
	assert.Equal(t, "GOGC=100", s.GC)
	assert.InDelta(t, 0.0003, s.CPUPerRequest, 1e-12, "the upper median of 100 µs and 300 µs")
	assert.InDelta(t, 2.1, s.SyscallsPerRequest, 1e-12)
	assert.InDelta(t, 0.1, s.PollerSyscallsPerRequest, 1e-12)
	// Medians over every burst of every round, readings not taken left out.
	assert.Equal(t, []uint64{30, 40, 0}, s.AfterBurstRSS)
	assert.Equal(t, "GOGC=100 busy=50%", got[1].GC)
	assert.Equal(t, 50, got[1].Busy)
	assert.Equal(t, []uint64{1, 2, 3}, got[1].AfterBurstRSS)

	var b bytes.Buffer
	writeRequestTable(&b, &report{Summary: got}, "tcp")
	assert.Contains(t, b.String(), "RSS +300ms")
	assert.Contains(t, b.String(), "GOGC=100 busy=50%")
}

func TestRoundRatios(t *testing.T) {
	gc := lab.GCSetting{Name: "GOGC=100", GOGC: "100"}
	var runs []lab.RunResult
	for round, p99 := range [][2]int64{{100, 200}, {100, 50}, {100, 120}} {
		for i, st := range []string{"off", "runtime"} {
			runs = append(runs, lab.RunResult{Workload: "tcp", GC: gc, Stepping: st, Round: round, OK: true,
				Latency: &lab.Percentiles{P99: p99[i]}, Requests: 10, CPUUser: 1, Syscalls: 10,
				AfterBurstMS: []int{100, 300}, AfterBurstRSS: [][]uint64{{5, uint64(10 * (i + 1))}}})
		}
	}
	var b bytes.Buffer
	writeRoundRatios(&b, &report{Runs: runs, Summary: summarise(runs)}, "tcp")
	assert.Equal(t, "GOGC=100 runtime/off by round:  p99 1.20 (2.00 0.50 1.20)  RSS 300ms after a burst 2.00 (2.00 2.00 2.00)  CPU/req 1.00 (1.00 1.00 1.00)  syscalls/req 1.00 (1.00 1.00 1.00)\n\n", b.String())
}
