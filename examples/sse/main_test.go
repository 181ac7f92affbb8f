package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// wait is how long a test waits for anything before it fails.
const wait = 10 * time.Second

// The tests start servers, streams and the Runtime's timers: none of
// their goroutines may outlive them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open opens a stream of events at url.
func open(ctx context.Context, c *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp, err
}

// read reads events from a stream until it has n of them or the stream
// ends, and returns their messages.
func read(body io.Reader, n int) ([]message, error) {
	var msgs []message
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	id := ""
	for len(msgs) < n && sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			id = v
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			var m message
			if err := json.Unmarshal([]byte(v), &m); err != nil {
				return msgs, err
			}
			if id != strconv.FormatUint(m.Seq, 10) {
				return msgs, fmt.Errorf("event id %s for message %d", id, m.Seq)
			}
			msgs = append(msgs, m)
		}
	}
	return msgs, sc.Err()
}

func TestStreamsReceiveAndEnd(t *testing.T) {
	const streams, want = 20, 10
	s := newServer(config{stepper: true, streams: streams,
		burst: 50 * time.Millisecond, every: 5 * time.Millisecond, quiet: 300 * time.Millisecond, size: 16 << 10})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + ln.Addr().String() + "/events"
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- s.serve(ctx, ln) }()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	sctx, disconnect := context.WithCancel(context.Background())
	defer disconnect()
	type result struct {
		msgs []message
		err  error
	}
	results := make(chan result, streams)
	var wg sync.WaitGroup
	for range streams {
		wg.Go(func() {
			resp, err := open(sctx, c, url)
			if err != nil {
				results <- result{nil, err}
				return
			}
			defer resp.Body.Close()
			msgs, err := read(resp.Body, want)
			results <- result{msgs, err}
			<-sctx.Done() // stay connected
		})
	}
	for range streams {
		var r result
		select {
		case r = <-results:
		case <-time.After(wait):
			require.FailNow(t, "timed out waiting for the streams' messages")
		}
		require.NoError(t, r.err)
		require.Len(t, r.msgs, want)
		for i, m := range r.msgs {
			assert.Positive(t, m.Burst)
			assert.Positive(t, m.Sent)
			assert.Len(t, m.Payload, 16<<10-80)
			if i > 0 {
				assert.Greater(t, m.Seq, r.msgs[i-1].Seq, "out of order")
			}
		}
	}
	// The streams are open, each waiting for its next message, so
	// paused: after a burst the Runtime returns what it left.
	require.Eventually(t, func() bool { return s.rt.Stats().Releases > 0 }, wait, time.Millisecond,
		"no release with %d paused streams open", streams)
	// Every stream is counted; the broadcaster counts one more while it
	// publishes, so look for the count between its publishes.
	assert.Eventually(t, func() bool { return s.work.InFlight() == streams }, wait, time.Millisecond,
		"in flight never came to the %d streams", streams)

	disconnect()
	wg.Wait()
	require.Eventually(t, func() bool { return s.work.InFlight() == 0 }, wait, time.Millisecond,
		"streams still counted after their clients went")
	s.b.mu.Lock()
	assert.Empty(t, s.b.subs, "subscribers left")
	s.b.mu.Unlock()
	stop()
	select {
	case err := <-served:
		assert.NoError(t, err)
	case <-time.After(wait):
		require.FailNow(t, "timed out waiting for the server to stop")
	}
}

func TestShutdownEndsOpenStreams(t *testing.T) {
	for _, stepper := range []bool{true, false} {
		s := newServer(config{stepper: stepper, burst: time.Hour, every: 5 * time.Millisecond, size: 100})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ctx, stop := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- s.serve(ctx, ln) }()
		tr := &http.Transport{}
		c := &http.Client{Transport: tr, Timeout: wait}
		resp, err := open(context.Background(), c, "http://"+ln.Addr().String()+"/events")
		require.NoError(t, err)
		msgs, err := read(resp.Body, 1)
		require.NoError(t, err)
		require.Len(t, msgs, 1)
		done := make(chan error, 1)
		go func() {
			defer resp.Body.Close()
			_, err := io.Copy(io.Discard, resp.Body) // to the end, which Shutdown brings
			done <- err
		}()
		require.Eventually(t, func() bool { return s.b.published.Load() > 3 }, wait, time.Millisecond)
		stop()
		select {
		case err := <-served:
			assert.NoError(t, err, "stepper %v", stepper)
		case <-time.After(wait):
			require.FailNow(t, "Shutdown waited for the open streams")
		}
		assert.NoError(t, <-done)
		tr.CloseIdleConnections()
		if stepper {
			assert.Equal(t, 0, s.work.InFlight())
		}
	}
}

func TestRun(t *testing.T) {
	ctx, stop := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer stop()
	var stdout, stderr strings.Builder
	code := run(ctx, []string{"-addr", "127.0.0.1:0", "-every", "5ms"}, &stdout, &stderr)
	assert.Equal(t, 0, code)
	assert.Empty(t, stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "sse: serving on http://127.0.0.1:")
	assert.Contains(t, out, "(stepper on)")
	assert.Regexp(t, `sse: \d+ messages in `, out)
	assert.Contains(t, out, "stepper on: ")
	assert.Contains(t, out, "sse: stats: {Steps:")
}

func TestRunBadFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-stepper", "maybe"}, `invalid value "maybe" for flag -stepper: want on or off`},
		{[]string{"-every", "0s"}, "-burst and -every must be positive"},
		{[]string{"-size", "-1"}, "-size must be from 0 to 1048576"},
		{[]string{"-streams", "-1"}, "-streams must not be negative"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), tt.args, &stdout, &stderr)
		assert.Equal(t, 2, code, "%v", tt.args)
		assert.Contains(t, stderr.String(), tt.want, "%v", tt.args)
		assert.Contains(t, stderr.String(), "Usage of sse", "%v", tt.args)
		assert.Empty(t, stdout.String(), "%v", tt.args)
	}
}

func TestFrame(t *testing.T) {
	got := string(frame(event{seq: 42, data: []byte(`{"a":1}`)}))
	assert.Equal(t, "id: 42\ndata: {\"a\":1}\n\n", got)
}
