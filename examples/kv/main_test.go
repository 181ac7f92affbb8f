package main_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

const timeout = 20 * time.Second

// build builds the server into a temporary directory and returns its
// path.
func build(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build the server with")
	}
	bin := filepath.Join(t.TempDir(), "kv")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "build: %s", out)
	return bin
}

// kv builds the server and starts it on a free port (see start).
func kv(t *testing.T, args ...string) (addr string, stop func(sig unix.Signal) string) {
	t.Helper()
	return start(t, build(t), args...)
}

// start starts the server bin on a free port; it returns the address,
// and a function that stops it with sig and returns what it printed on
// stdout after the line that says where it serves.
func start(t *testing.T, bin string, args ...string) (addr string, stop func(sig unix.Signal) string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := make(chan string, 16)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	select {
	case line := <-lines:
		m := regexp.MustCompile(`^kv: serving on (\S+) with \d+ loops, stepper `).FindStringSubmatch(line)
		require.NotNil(t, m, "first line: %q", line)
		addr = m[1]
	case <-time.After(timeout):
		t.Fatal("the server did not start")
	}
	stop = func(sig unix.Signal) string {
		require.NoError(t, cmd.Process.Signal(sig))
		var rest strings.Builder
		for line := range lines { // closed at exit
			rest.WriteString(line + "\n")
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			require.NoError(t, err, "exit status")
		case <-time.After(timeout):
			t.Fatal("the server did not exit")
		}
		if stderr.Len() > 0 {
			t.Logf("stderr: %s", stderr.String())
		}
		return rest.String()
	}
	return addr, stop
}

func dial(t *testing.T, addr string) net.Conn {
	c, err := net.DialTimeout("tcp", addr, timeout)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(timeout)))
	t.Cleanup(func() { c.Close() })
	return c
}

func TestSession(t *testing.T) {
	addr, stop := kv(t, "-loops", "2")
	c := dial(t, addr)
	// Split across writes, inline and multibulk, pipelined.
	for _, part := range []string{"*3\r\n$3\r\nSE", "T\r\n$1\r\nk\r\n$5\r\nhel", "lo\r\nGET k\r\nDEL k\r\nGE", "T k\r\nPING\r\n"} {
		_, err := c.Write([]byte(part))
		require.NoError(t, err)
		time.Sleep(5 * time.Millisecond)
	}
	want := "+OK\r\n$5\r\nhello\r\n:1\r\n$-1\r\n+PONG\r\n"
	got := make([]byte, len(want))
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, want, string(got))

	_, err = c.Write([]byte("QUIT\r\n"))
	require.NoError(t, err)
	rest, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Equal(t, "+OK\r\n", string(rest))

	summary := stop(unix.SIGTERM)
	assert.Regexp(t, `^kv: 1 connections, 6 requests, stepper: \d+ cycles, \d+ releases, \S+ stepping, \d+ looks declined for the budget\n$`, summary)
}

func TestRedisTools(t *testing.T) {
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		t.Skip("redis-benchmark not installed (apt-get install redis-tools)")
	}
	addr, stop := kv(t, "-stepper", "off")
	host, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command("redis-cli", "-h", host, "-p", port, "SET", "greeting", "hi there").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "OK\n", string(out))
	out, err = exec.Command("redis-cli", "-h", host, "-p", port, "GET", "greeting").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "hi there\n", string(out))

	out, err = exec.Command("redis-benchmark", "-h", host, "-p", port, "-t", "set,get", "-n", "2000", "-c", "20", "-P", "4", "-q").CombinedOutput()
	require.NoError(t, err, "%s", out)
	text := strings.ReplaceAll(string(out), "\r", "\n")
	assert.Regexp(t, `SET: [\d.]+ requests per second`, text)
	assert.Regexp(t, `GET: [\d.]+ requests per second`, text)
	assert.NotContains(t, text, "ERR")

	summary := stop(unix.SIGINT)
	assert.Regexp(t, `^kv: \d+ connections, \d+ requests\n$`, summary)
}

// TestBaseline: -baseline runs beside -stepper off only, and the first
// line says which.
func TestBaseline(t *testing.T) {
	bin := build(t)
	addr, stop := start(t, bin, "-stepper", "off", "-baseline", "freeos")
	c := dial(t, addr)
	_, err := c.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	got := make([]byte, len("+PONG\r\n"))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, "+PONG\r\n", string(got))
	assert.Regexp(t, `^kv: 1 connections, 1 requests\n$`, stop(unix.SIGTERM))

	for _, args := range [][]string{
		{"-baseline", "tuner"}, // the stepper is on by default
		{"-stepper", "off", "-baseline", "gctuner"},
		{"-stepper", "maybe"},
		{"-loops", "0"},
	} {
		out, err := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...).CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%v: %s", args, out)
		assert.Equal(t, 2, exit.ExitCode(), "%v", args)
		assert.Contains(t, string(out), "Usage", "%v", args)
	}
}
