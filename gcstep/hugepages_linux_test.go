package gcstep

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// offChildEnv makes the test binary run offChild instead of the test.
const offChildEnv = "GCSTEP_TEST_OFF_CHILD"

// A cycle that ends with GOGC=off ends with an unbounded heap goal, and
// the runtime then turns on huge pages for its heap metadata for good
// (madvise MADV_HUGEPAGE, the "hg" flag of a mapping in
// /proc/self/smaps): up to 2 MiB more resident memory. The inline cycles
// of a program at GOGC=off must end with a finite goal. It runs in a
// process of its own, since any cycle of this one may have done it.
func TestOffCyclesLeaveMetadataPagesSmall(t *testing.T) {
	if os.Getenv(offChildEnv) != "" {
		offChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOffCyclesLeaveMetadataPagesSmall$")
	cmd.Env = append(os.Environ(), offChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child: %s", out)
	var cycles, hg, gogc int
	for line := range strings.Lines(string(out)) {
		if _, err := fmt.Sscanf(line, "cycles %d hg %d gogc %d", &cycles, &hg, &gogc); err == nil {
			break
		}
	}
	require.GreaterOrEqual(t, cycles, 10, "the child's inline cycles: %s", out)
	require.Zero(t, hg, "mappings with huge pages turned on after %d inline cycles at GOGC=off", cycles)
	require.Equal(t, -1, gogc, "GOGC after Close")
}

// offChild runs inline cycles at GOGC=off, half of them with a budget
// too short for the cycle to end within its step (with one P every cycle
// starts inline), and prints how many, how many mappings have huge pages
// turned on, and GOGC after Close.
func offChild() {
	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(-1)
	rt := NewRuntime(WithReleaseDelay(0), WithCPUCap(1), eager)
	for i := range 20 {
		garbage(1 << 20)
		budget := time.Second
		if i%2 == 1 {
			budget = time.Microsecond // the cycle outlives the step
		}
		rt.Step(budget)
		time.Sleep(time.Millisecond)
	}
	rt.Close()
	fmt.Printf("cycles %d hg %d gogc %d\n", rt.Stats().CyclesInline, hugeMappings(), debug.SetGCPercent(-1))
}

// hugeMappings counts this process's mappings that have huge pages turned
// on with madvise.
func hugeMappings() int {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return -1
	}
	n := 0
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		if f, ok := strings.CutPrefix(s.Text(), "VmFlags:"); ok && strings.Contains(f+" ", " hg ") {
			n++
		}
	}
	return n
}
