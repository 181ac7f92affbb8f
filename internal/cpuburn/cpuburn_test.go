package cpuburn

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// orphanEnv makes the test binary a go-between that starts a burner,
// prints its pid and exits without stopping it.
const orphanEnv = "IDLEMUX_CPUBURN_TEST_ORPHAN"

func TestMain(m *testing.M) {
	Main()
	if os.Getenv(orphanEnv) != "" {
		exe, _ := os.Executable()
		b, err := Start(exe, 100)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(b.Pid())
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// gone reports whether pid no longer runs: no such process, or a zombie
// waiting to be reaped by whoever inherited it.
func gone(pid int) bool {
	if err := unix.Kill(pid, 0); err == unix.ESRCH {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func TestZeroStartsNothing(t *testing.T) {
	b, err := Start("/nonexistent", 0)
	require.NoError(t, err)
	assert.Zero(t, b.Pid())
	u, err := b.Stop()
	require.NoError(t, err)
	assert.Zero(t, u.CPU)
	assert.Zero(t, u.Share())
}

func TestBadPercent(t *testing.T) {
	for _, pct := range []int{-1, 101} {
		_, err := Start("/nonexistent", pct)
		assert.ErrorContains(t, err, "0 to 100", "%d %%", pct)
	}
	for _, s := range []string{"", "x", "50.5", "-3", "200"} {
		_, err := parsePercent(s)
		assert.Error(t, err, "%q", s)
	}
}

func TestStartStop(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, pct := range []int{50, 100} {
		b, err := Start(exe, pct)
		require.NoError(t, err)
		pid := b.Pid()
		require.NotZero(t, pid)
		require.NoError(t, unix.Kill(pid, 0), "the burner runs")
		time.Sleep(50 * time.Millisecond)
		u, err := b.Stop()
		require.NoError(t, err, "%d %%: it ran until stopped", pct)
		assert.True(t, gone(pid), "%d %%: stopped and reaped", pct)
		assert.Positive(t, u.Wall)
		again, err := b.Stop()
		require.NoError(t, err)
		assert.Zero(t, again, "a second Stop does nothing")
	}
}

func TestMissingExecutable(t *testing.T) {
	_, err := Start("/nonexistent/burner", 50)
	assert.ErrorContains(t, err, "/nonexistent/burner")
}

// TestDiesWithItsStarter starts a process that starts a burner and exits
// without stopping it: the burner must not outlive it.
func TestDiesWithItsStarter(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), orphanEnv+"=1")
	out, err := cmd.Output()
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	require.NoError(t, err, "pid line %q", out)
	deadline := time.Now().Add(10 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			unix.Kill(pid, unix.SIGKILL)
			t.Fatalf("burner %d still runs 10 s after its starter exited", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLoadAverage(t *testing.T) {
	v, ok := LoadAverage()
	if _, err := os.Stat("/proc/loadavg"); err != nil {
		assert.False(t, ok)
		return
	}
	assert.True(t, ok)
	assert.GreaterOrEqual(t, v, 0.0)
}
