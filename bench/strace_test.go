package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/poller"
)

// straceChildEnv marks the re-executed test binary that strace watches.
const straceChildEnv = "IDLEMUX_BENCH_STRACE_CHILD"

// straceRounds is how many round trips the traced child makes: enough that
// a per-iteration system call would stand out from the runtime's own
// handful, few enough that tracing stays well under a second.
const straceRounds = 500

// TestNoSignalMaskPerIteration is seeds 000 and 001 as a test: Ruby 1.8
// built with pthreads made two rt_sigprocmask calls per iteration, visible
// with `strace -c`. It runs the select and WaitFD ping-pongs in a child
// process under `strace -f -c` and checks that rt_sigprocmask is called far
// fewer times than there are round trips (the Go runtime calls it a few
// times per thread it starts), while the waits themselves are there.
func TestNoSignalMaskPerIteration(t *testing.T) {
	if os.Getenv(straceChildEnv) != "" {
		straceChild(t)
		return
	}
	if testing.Short() {
		t.Skip("skipped under -short: runs the ping-pong under strace")
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed (apt-get install strace); nothing to count system calls with")
	}
	// The default backend is enough: WaitFD waits with ppoll(2) on every
	// backend but select, and the Select ping-pong always uses select(2).
	for _, backend := range poller.Backends()[:1] {
		t.Run(backend.String(), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "strace.txt")
			cmd := exec.Command(strace, "-f", "-c", "-o", out,
				os.Args[0], "-test.run", "^TestNoSignalMaskPerIteration$", "-test.count", "1")
			cmd.Env = append(os.Environ(), straceChildEnv+"="+backend.String())
			b, err := cmd.CombinedOutput()
			if err != nil && (strings.Contains(string(b), "ptrace") || strings.Contains(string(b), "Operation not permitted")) {
				t.Skipf("strace cannot trace here: %s", strings.TrimSpace(string(b)))
			}
			require.NoError(t, err, "strace:\n%s", b)
			calls, err := straceCounts(out)
			require.NoError(t, err)
			t.Logf("%d round trips × 2 (WaitFD, Select): %v", straceRounds, calls)
			waits := 0
			for _, sc := range []string{"ppoll", "poll", "select", "pselect6", "epoll_wait", "epoll_pwait"} {
				waits += calls[sc]
			}
			assert.GreaterOrEqual(t, waits, straceRounds,
				"wait system calls for %d round trips: the trace did not see the ping-pong", 2*straceRounds)
			assert.Less(t, calls["rt_sigprocmask"], straceRounds/4,
				"rt_sigprocmask calls for %d round trips: a signal-mask call per iteration", 2*straceRounds)
		})
	}
}

// straceChild is the traced side: both ping-pongs on the backend named by
// the environment.
func straceChild(t *testing.T) {
	name := os.Getenv(straceChildEnv)
	for _, b := range poller.Backends() {
		if b.String() != name {
			continue
		}
		for _, useSelect := range []bool{false, true} {
			_, err := pingPongGVL(nil, straceRounds, useSelect, false, b)
			require.NoError(t, err, "ping-pong, select=%v", useSelect)
		}
		return
	}
	require.Failf(t, "unknown backend", "%s=%q names no backend of this platform", straceChildEnv, name)
}

// straceCounts reads the "calls" column of a `strace -c` summary.
func straceCounts(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	counts := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// % time  seconds  usecs/call  calls  [errors]  syscall
		fs := strings.Fields(sc.Text())
		if len(fs) < 5 || fs[0] == "%" || strings.HasPrefix(fs[0], "-") || fs[len(fs)-1] == "total" {
			continue
		}
		n, err := strconv.Atoi(fs[3])
		if err != nil {
			continue
		}
		counts[fs[len(fs)-1]] += n
	}
	if len(counts) == 0 {
		return nil, fmt.Errorf("no system calls in the strace summary %s", path)
	}
	return counts, sc.Err()
}
