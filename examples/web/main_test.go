package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
)

// wait is how long a test waits for anything before it fails.
const wait = 10 * time.Second

// TestMain runs the command itself when a test starts this binary with
// WEB_RUN_MAIN set (to test signals on a real process); otherwise the
// tests, which must leave no goroutine behind.
func TestMain(m *testing.M) {
	if os.Getenv("WEB_RUN_MAIN") != "" {
		os.Args = append(os.Args[:1], strings.Fields(os.Getenv("WEB_RUN_MAIN"))...)
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

func TestItems(t *testing.T) {
	var served atomic.Uint64
	mux := newMux(&served, nil)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/items?n=5", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var items []item
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &items))
	require.Len(t, items, 5)
	for i, it := range items {
		assert.Equal(t, i+1, it.ID)
		assert.NotEmpty(t, it.Name)
		assert.NotEmpty(t, it.Tags)
	}
	assert.EqualValues(t, 1, served.Load())

	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/items?n=0", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "[]\n", rec.Body.String())
}

func TestItemsBadN(t *testing.T) {
	var served atomic.Uint64
	mux := newMux(&served, nil)
	for _, q := range []string{"", "?n=", "?n=x", "?n=-1", "?n=100001", "?n=1.5"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "/items"+q, nil))
		assert.Equal(t, http.StatusBadRequest, rec.Code, "GET /items%s", q)
		assert.Contains(t, rec.Body.String(), "n must be an integer from 0 to 100000", "GET /items%s", q)
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("POST", "/items?n=1", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Zero(t, served.Load())
}

func TestRunBadFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-stepper", "maybe"}, `invalid value "maybe" for flag -stepper: want on or off`},
		{[]string{"-port", "1"}, "flag provided but not defined: -port"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-stepper", "off", "-baseline", "gctuner"}, `invalid value "gctuner" for flag -baseline: want none|tuner|freeos`},
		{[]string{"-baseline", "tuner"}, "-baseline needs -stepper off"},
		{[]string{"-budget", "2"}, `invalid value "2" for flag -budget: want a share of the CPU in (0, 1]`},
		{[]string{"-budget", "x"}, `invalid value "x" for flag -budget`},
		{[]string{"-stepper", "off", "-budget", "0.1"}, "-budget needs -stepper on"},
	} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), tt.args, &stdout, &stderr)
		assert.Equal(t, 2, code, "%v", tt.args)
		assert.Contains(t, stderr.String(), tt.want, "%v", tt.args)
		assert.Contains(t, stderr.String(), "Usage of web", "%v", tt.args)
		assert.Empty(t, stdout.String(), "%v", tt.args)
	}
}

func TestRunBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"-addr", ln.Addr().String()}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "address already in use")
	assert.Empty(t, stdout.String())
}

// pipe is an io.Writer for run's stdout whose lines the test reads.
func lines(t *testing.T) (io.WriteCloser, <-chan string) {
	r, w := io.Pipe()
	c := make(chan string, 16)
	go func() {
		defer close(c)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			c <- sc.Text()
		}
	}()
	t.Cleanup(func() { r.Close() })
	return w, c
}

func line(t *testing.T, c <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-c:
		require.True(t, ok, "no more output")
		return l
	case <-time.After(wait):
		require.FailNow(t, "timed out waiting for output")
		return ""
	}
}

func TestRunServesAndShutsDown(t *testing.T) {
	for _, mode := range []string{"on", "off", "off, tuner", "off, freeos"} {
		t.Run("stepper="+mode, func(t *testing.T) {
			stepper, baseline, _ := strings.Cut(mode, ", ")
			args := []string{"-addr", "127.0.0.1:0", "-stepper", stepper}
			if baseline != "" {
				args = append(args, "-baseline", baseline)
			}
			out, c := lines(t)
			var stderr strings.Builder
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, args, out, &stderr)
				out.Close()
			}()
			first := line(t, c)
			url, ok := strings.CutPrefix(first, "web: serving on ")
			require.True(t, ok, "first line %q", first)
			url, _, _ = strings.Cut(url, " ")
			assert.Contains(t, first, "(stepper "+mode+")")

			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			cl := &http.Client{Transport: tr, Timeout: wait}
			resp, err := cl.Get(url + "/items?n=100")
			require.NoError(t, err)
			var items []item
			assert.NoError(t, json.NewDecoder(resp.Body).Decode(&items))
			resp.Body.Close()
			assert.Len(t, items, 100)

			// With the stepper on, /debug/vars has its Stats under "gcstep".
			resp, err = cl.Get(url + "/debug/vars")
			require.NoError(t, err)
			var vars map[string]json.RawMessage
			if stepper == "on" {
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.NoError(t, json.NewDecoder(resp.Body).Decode(&vars))
				var st map[string]any
				raw, ok := vars["gcstep"]
				if assert.True(t, ok, "/debug/vars has %v, no gcstep", slices.Sorted(maps.Keys(vars))) &&
					assert.NoError(t, json.Unmarshal(raw, &st)) {
					assert.Contains(t, st, "releases")
					assert.Contains(t, st, "earned_seconds")
				}
			} else {
				assert.Equal(t, http.StatusNotFound, resp.StatusCode)
			}
			resp.Body.Close()
			tr.CloseIdleConnections()

			stop()
			select {
			case code := <-done:
				assert.Equal(t, 0, code, "stderr: %s", stderr.String())
			case <-time.After(wait):
				require.FailNow(t, "run did not return after its context ended")
			}
			summary := line(t, c)
			assert.True(t, strings.HasPrefix(summary, "web: 1 requests in "), "summary %q", summary)
			assert.Contains(t, summary, "stepper "+stepper)
			assert.Empty(t, stderr.String())
		})
	}
}

// The real command, in a process of its own: SIGTERM shuts it down with
// exit status 0 and the summary.
func TestSIGTERM(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WEB_RUN_MAIN=-addr 127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		var out []string
		for sc.Scan() {
			out = append(out, sc.Text())
			if len(out) == 1 {
				assert.NoError(t, cmd.Process.Signal(unix.SIGTERM))
			}
		}
		err := cmd.Wait()
		if assert.Len(t, out, 2, "stdout %q, stderr %q", out, stderr.String()) {
			assert.Contains(t, out[0], "web: serving on http://127.0.0.1:")
			assert.Contains(t, out[1], "web: 0 requests in ")
		}
		exited <- err
	}()
	select {
	case err := <-exited:
		assert.NoError(t, err, "stderr: %s", stderr.String())
	case <-time.After(wait):
		cmd.Process.Kill()
		<-exited
		require.FailNow(t, "the command did not exit after SIGTERM")
	}
}

func TestStats(t *testing.T) {
	var served atomic.Uint64
	rec := httptest.NewRecorder()
	newMux(&served, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/stats", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var s stats
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &s))
	assert.False(t, s.Stepper)
	assert.Zero(t, s.Releases)

	rt := gcstep.NewRuntime()
	defer rt.Close()
	rec = httptest.NewRecorder()
	newMux(&served, rt).ServeHTTP(rec, httptest.NewRequest("GET", "/stats", nil))
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &s))
	assert.True(t, s.Stepper)
}
