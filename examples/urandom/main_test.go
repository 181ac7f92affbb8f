package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// asMainEnv makes the test binary behave as the command, so the end-to-end
// tests run the real program, children included, without building it.
const asMainEnv = "IDLEMUX_URANDOM_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) != "" || os.Getenv(childEnv) != "" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

// smallLen is an odd size, so that the last read is short.
const smallLen = 300_001

// command runs the program with args and returns its stdout, its stderr and
// its exit status.
func command(t *testing.T, env []string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	// Under -race, a process sleeps a second at exit unless told not to;
	// every run is a process here, and the children inherit the setting.
	cmd.Env = append(append(os.Environ(), asMainEnv+"=1", "GORACE=atexit_sleep_ms=0"), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%v: timed out; stderr:\n%s", args, errOut.String())
	case errors.As(err, &exit):
		status = exit.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v", args, err)
	}
	return out.String(), errOut.String(), status
}

func decodeLines(t *testing.T, s string) []result {
	t.Helper()
	var rs []result
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		rs = append(rs, r)
	}
	return rs
}

func TestJSONEveryMode(t *testing.T) {
	out, errOut, status := command(t, nil, "-len", "300001", "-readers", "3", "-chunk", "1000", "-gogc", "50", "-procs", "1", "-frontier", "none", "-json")
	if status != 0 {
		t.Fatalf("got exit status %d, want 0; stderr:\n%s", status, errOut)
	}
	if errOut != "" {
		t.Errorf("got stderr %q, want none (not a terminal)", errOut)
	}
	rs := decodeLines(t, out)
	if len(rs) != len(allModes) {
		t.Fatalf("got %d results, want %d:\n%s", len(rs), len(allModes), out)
	}
	for i, r := range rs {
		if r.Mode != allModes[i] || r.Run != 1 {
			t.Errorf("result %d: got %s run %d, want %s run 1", i, r.Mode, r.Run, allModes[i])
		}
		if !r.DigestOK || r.Bytes != smallLen || r.GOGC != "50" || r.GOMAXPROCS != 1 || r.Readers != 3 || r.Chunk != 1000 {
			t.Errorf("%s: got %+v, want digest ok, %d bytes, GOGC 50, GOMAXPROCS 1, 3 readers, 1000-byte chunks", r.Mode, r, smallLen)
		}
		if r.PeakRSSBytes == 0 || r.WallSeconds <= 0 || r.CPUSeconds < 0 || len(r.Digest) != 64 {
			t.Errorf("%s: got %+v, want a peak RSS, a wall time, a CPU time and a digest", r.Mode, r)
		}
	}
	// The same bytes never come twice from /dev/urandom: a digest that
	// repeats would mean the runs read something other than the stream.
	if rs[0].Digest == rs[1].Digest {
		t.Errorf("got the same digest %s for two runs", rs[0].Digest)
	}
}

// TestIdleStepperCollects: the idle mode's stepper runs collection cycles
// in the loop's idle time, within the budget -budget gives it. Each run
// reads 8 MB into fresh 16 KiB buffers, that much garbage, with one P,
// where a cycle is cheapest, at a budget of half the program's CPU (the
// default 3 % of so short a run may pay for no cycle where faults are
// dear); the policy may decline a given moment (a busy machine leaves
// few idle ones), so the test asks for a cycle in any of three runs,
// which a stepper that stopped working would never run.
func TestIdleStepperCollects(t *testing.T) {
	out, errOut, status := command(t, nil, "-len", "8000000", "-mode", "idle", "-runs", "3",
		"-procs", "1", "-frontier", "none", "-json", "-budget", "0.5")
	require.Equal(t, 0, status, "stderr:\n%s", errOut)
	rs := decodeLines(t, out)
	require.Len(t, rs, 3)
	var cycles uint64
	for _, r := range rs {
		assert.True(t, r.DigestOK)
		assert.NotZero(t, r.IdleSteps, "run %d: the loop never stepped", r.Run)
		if assert.NotNil(t, r.Stepper) {
			earned, cpu := r.Stepper.Earned.Seconds(), r.CPUSeconds
			assert.Greater(t, earned, cpu/10, "run %d: earned %.3f s of %.3f s CPU: not the -budget of 50 %%", r.Run, earned, cpu)
		}
		cycles += r.StepperCycles
	}
	assert.NotZero(t, cycles, "the stepper ran no cycle in 3 runs")
}

func TestRunsInterleave(t *testing.T) {
	out, errOut, status := command(t, []string{"GOGC=off"}, "-len", "50000", "-readers", "2", "-mode", "idle,off", "-runs", "2", "-procs", "1", "-frontier", "none", "-json")
	if status != 0 {
		t.Fatalf("got exit status %d, want 0; stderr:\n%s", status, errOut)
	}
	var got []string
	for _, r := range decodeLines(t, out) {
		got = append(got, string(r.Mode)+"/"+r.GOGC+"/"+string(rune('0'+r.Run)))
	}
	want := "idle/off/1 off/off/1 idle/off/2 off/off/2"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %q, want %q", strings.Join(got, " "), want)
	}
}

func TestTable(t *testing.T) {
	out, errOut, status := command(t, nil, "-len", "100000", "-readers", "2", "-gogc", "100", "-procs", "1", "-frontier", "none", "-probe=false")
	if status != 0 {
		t.Fatalf("got exit status %d, want 0; stderr:\n%s", status, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3+len(allModes) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), 3+len(allModes), out)
	}
	for i, m := range allModes {
		f := strings.Fields(lines[3+i])
		if f[0] != string(m) || f[len(f)-1] != "ok" || f[len(f)-2] != "100,000" {
			t.Errorf("got row %q, want mode %s, 100,000 bytes, digest ok", lines[3+i], m)
		}
	}
}

func TestBadInput(t *testing.T) {
	tests := [][]string{
		{"-len", "0"},
		{"-readers", "0"},
		{"-readers", "100000000"},
		{"-chunk", "0"},
		{"-mode", "fast"},
		{"-gogc", "x"},
		{"-runs", "0"},
		{"-nope"},
	}
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errOut, status := command(t, nil, args...)
			if status != 2 {
				t.Errorf("got exit status %d, want 2", status)
			}
			if out != "" {
				t.Errorf("got stdout %q, want none", out)
			}
			if !strings.HasPrefix(errOut, "urandom: ") || strings.Count(errOut, "\n") != 1 {
				t.Errorf("got stderr %q, want one line starting urandom:", errOut)
			}
		})
	}
}
