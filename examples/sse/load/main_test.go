package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The tests open streams: none of their goroutines may outlive them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestParseHead(t *testing.T) {
	for _, tt := range []struct {
		in               string
		burst, seq, sent uint64
		ok               bool
	}{
		{`{"burst":2,"seq":17,"sent":1733333333000000001,"payload":"xx"}`, 2, 17, 1733333333000000001, true},
		{`{"burst":1,"seq":1,"sent":5}`, 1, 1, 5, true},
		{`{"seq":1,"burst":1,"sent":5}`, 0, 0, 0, false},
		{`{"burst":,"seq":1,"sent":5}`, 0, 0, 0, false},
		{`{"burst":1,"seq":1,"sent":-5}`, 0, 0, 0, false},
		{``, 0, 0, 0, false},
	} {
		b, s, sent, ok := parseHead([]byte(tt.in))
		assert.Equal(t, tt.ok, ok, "%s", tt.in)
		assert.Equal(t, tt.burst, b, "%s", tt.in)
		assert.Equal(t, tt.seq, s, "%s", tt.in)
		assert.Equal(t, int64(tt.sent), sent, "%s", tt.in)
	}
}

func TestPercentile(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tt := range []struct {
		p    float64
		want time.Duration
	}{{50, 5}, {99, 10}, {100, 10}, {10, 1}, {1, 1}} {
		assert.Equal(t, tt.want, percentile(d, tt.p), "p%v", tt.p)
	}
	assert.Zero(t, percentile(nil, 50))
}

// fake serves events as examples/sse does, once streams streams are open:
// a burst of five, a pause, a burst with message 4 missing.
func fake(streams int32) *httptest.Server {
	var open atomic.Int32
	all := make(chan struct{})
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		rc.Flush()
		if open.Add(1) == streams {
			close(all)
		}
		select {
		case <-all:
		case <-r.Context().Done():
			return
		}
		time.Sleep(50 * time.Millisecond)
		seq := 0
		for b, seqs := range [][]int{{1, 2, 3, 4, 5}, {6, 7, 8, 10, 11}} {
			if b > 0 {
				time.Sleep(200 * time.Millisecond)
			}
			for _, seq = range seqs {
				fmt.Fprintf(w, "id: %d\ndata: {\"burst\":%d,\"seq\":%d,\"sent\":%d,\"payload\":\"%s\"}\n\n",
					seq, b+1, seq, time.Now().UnixNano(), strings.Repeat("x", 100<<10))
				rc.Flush()
				time.Sleep(time.Millisecond)
			}
		}
		<-r.Context().Done()
	}))
}

func TestRun(t *testing.T) {
	srv := fake(3)
	defer srv.Close()
	var stdout, stderr strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code := run(ctx, []string{"-url", srv.URL, "-streams", "3", "-bursts", "2", "-settle", "100ms",
		"-pid", fmt.Sprint(os.Getpid())}, &stdout, &stderr)
	require.Equal(t, 0, code, "%s", stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "load: 3 streams, 2 bursts: 30 messages, 3 missed; delay p50 ")
	assert.Regexp(t, `load: server RSS [0-9.]+ MiB before the streams; after each burst: [0-9.]+ [0-9.]+ MiB; over start-up, median -?[0-9.]+ MiB\nload: server CPU \S+ per burst and its quiet\n`, out)
}

func TestRunFails(t *testing.T) {
	var stdout, stderr strings.Builder
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	assert.Equal(t, 1, run(context.Background(), []string{"-url", srv.URL, "-streams", "2"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "404 Not Found")
	assert.Equal(t, 2, run(context.Background(), []string{"-bursts", "0"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-streams and -bursts must be positive")
	assert.Empty(t, stdout.String())
}
