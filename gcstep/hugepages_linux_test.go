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
// /proc/self/smaps): up to 2 MiB more resident memory. The cycles of a
// program at GOGC=off must end with a finite goal. It runs in a
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
	var inline, started, hg, gogc int
	for line := range strings.Lines(string(out)) {
		if _, err := fmt.Sscanf(line, "inline %d started %d hg %d gogc %d", &inline, &started, &hg, &gogc); err == nil {
			break
		}
	}
	require.GreaterOrEqual(t, inline, 10, "the child's inline cycles: %s", out)
	require.GreaterOrEqual(t, started, 3, "the child's started cycles: %s", out)
	require.Zero(t, hg, "mappings with huge pages turned on after %d inline and %d started cycles at GOGC=off", inline, started)
	require.Equal(t, -1, gogc, "GOGC after Close")
}

// offChild runs cycles at GOGC=off and prints how many, how many
// mappings have huge pages turned on, and GOGC after Close: inline cycles
// with one P (where every cycle starts inline), half of them with a
// budget too short for the cycle to end within its step, then started
// ones with two Ps (where a cycle that does not fit the budget is
// started).
func offChild() {
	debug.SetGCPercent(-1)
	rt := NewRuntime(WithReleaseDelay(0), WithCPUCap(1), eager)
	for i := range 30 {
		procs, budget := 1, time.Second
		switch {
		case i >= 20:
			procs, budget = 2, time.Microsecond
		case i%2 == 1:
			budget = time.Microsecond // the cycle outlives the step
		}
		runtime.GOMAXPROCS(procs)
		garbage(1 << 20)
		rt.Step(budget)
		time.Sleep(time.Millisecond)
	}
	rt.Close()
	st := rt.Stats()
	fmt.Printf("inline %d started %d hg %d gogc %d\n", st.CyclesInline, st.CyclesBackground, hugeMappings(), debug.SetGCPercent(-1))
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
