package httpidle_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/httpidle"
)

// wait is how long a test waits for anything before it fails.
const wait = 10 * time.Second

// server serves h, wrapped by httpidle.Handler, on a loopback port, with
// a Runtime and a Work of its own; the cleanup shuts it down and closes
// them. Its error log is kept in log.
type server struct {
	rt   *gcstep.Runtime
	work *gcstep.Work
	srv  *http.Server
	url  string
	mu   sync.Mutex
	log  bytes.Buffer
}

func (s *server) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.Write(p)
}

func (s *server) logged() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

func serve(t *testing.T, h http.Handler, opts ...gcstep.Option) *server {
	t.Helper()
	return serveWith(t, httpidle.Handler, h, opts...)
}

// serveWith is serve with h wrapped by wrap (Handler or Streams).
func serveWith(t *testing.T, wrap func(*gcstep.Work, http.Handler) http.Handler, h http.Handler, opts ...gcstep.Option) *server {
	t.Helper()
	s := &server{rt: gcstep.NewRuntime(opts...)}
	s.work = s.rt.Work()
	s.srv = &http.Server{Handler: wrap(s.work, h)}
	s.srv.ErrorLog = log.New(s, "", 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.url = "http://" + ln.Addr().String()
	done := make(chan error, 1)
	go func() { done <- s.srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		assert.NoError(t, s.srv.Shutdown(ctx))
		assert.ErrorIs(t, <-done, http.ErrServerClosed)
		s.work.Close()
		s.rt.Close()
	})
	return s
}

// client is an HTTP client whose idle connections the test closes.
func client(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: wait}
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// received waits for a value on c, for at most wait.
func received[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(wait):
		require.FailNow(t, "timed out waiting for "+what)
		panic("unreachable")
	}
}

func TestHandlerCountsRequestsInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		io.WriteString(w, "done")
	}))
	c := client(t)
	type result struct {
		code int
		body string
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			resp, err := c.Get(s.url)
			if err != nil {
				results <- result{body: err.Error()}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			results <- result{resp.StatusCode, string(b)}
		}()
	}
	received(t, entered, "the first request")
	received(t, entered, "the second request")
	assert.Equal(t, 2, s.work.InFlight())
	close(release)
	for range 2 {
		r := received(t, results, "a response")
		assert.Equal(t, result{http.StatusOK, "done"}, r)
	}
	assert.Equal(t, 0, s.work.InFlight())
}

func TestPanickingHandlerEndsItsCount(t *testing.T) {
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic("handler failed")
	}))
	_, err := client(t).Get(s.url)
	require.Error(t, err, "a response from a handler that panicked")
	assert.Equal(t, 0, s.work.InFlight())
	// The panic went on to net/http, which logged it.
	require.Eventually(t, func() bool { return strings.Contains(s.logged(), "handler failed") }, wait, time.Millisecond,
		"net/http did not see the panic")
	assert.Contains(t, s.logged(), "http: panic serving")
}

func TestAbortHandlerPanicEndsItsCount(t *testing.T) {
	// http.ErrAbortHandler: net/http closes the connection and logs nothing.
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic(http.ErrAbortHandler)
	}))
	_, err := client(t).Get(s.url)
	require.Error(t, err)
	assert.Equal(t, 0, s.work.InFlight())
	assert.Empty(t, s.logged())
}

func TestHijackingHandlerEndsItsCount(t *testing.T) {
	returned := make(chan struct{})
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(returned)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if !assert.NoError(t, err, "the wrapper hid the Hijacker") {
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
		assert.NoError(t, buf.Flush())
	}))
	code, body := get(t, client(t), s.url)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "hijacked", body)
	received(t, returned, "the handler")
	require.Eventually(t, func() bool { return s.work.InFlight() == 0 }, wait, time.Millisecond)
}

func TestStreamingHandlerCountsUntilItReturns(t *testing.T) {
	next := make(chan struct{})
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if !assert.NoError(t, rc.Flush(), "the wrapper hid the Flusher") { // the headers
			return
		}
		for i := range 3 {
			<-next
			io.WriteString(w, strings.Repeat("x", i+1)+"\n")
			if !assert.NoError(t, rc.Flush()) {
				return
			}
		}
	}))
	resp, err := client(t).Get(s.url)
	require.NoError(t, err)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	for i := range 3 {
		next <- struct{}{}
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, strings.Repeat("x", i+1)+"\n", line, "chunk %d arrived before the handler returned", i)
		if i < 2 {
			assert.Equal(t, 1, s.work.InFlight(), "a stream in progress is not in flight")
		}
	}
	_, err = r.ReadByte()
	assert.ErrorIs(t, err, io.EOF)
	require.Eventually(t, func() bool { return s.work.InFlight() == 0 }, wait, time.Millisecond)
}

func TestShutdownWaitsForWorkInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	rt := gcstep.NewRuntime()
	defer rt.Close()
	work := rt.Work()
	srv := &http.Server{Handler: httpidle.Handler(work, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "late")
	}))}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	got := make(chan string, 1)
	c := client(t)
	go func() {
		resp, err := c.Get("http://" + ln.Addr().String())
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- string(b)
	}()
	received(t, entered, "the request")

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	assert.ErrorIs(t, received(t, served, "Serve to return"), http.ErrServerClosed)
	select {
	case err := <-shut:
		require.FailNow(t, "Shutdown returned with a request in flight", "%v", err)
	case <-time.After(50 * time.Millisecond):
	}
	assert.Equal(t, 1, work.InFlight())
	close(release)
	assert.NoError(t, received(t, shut, "Shutdown"))
	assert.Equal(t, 0, work.InFlight(), "Shutdown returned before the count ended")
	assert.Equal(t, "late", received(t, got, "the response"))
	work.Close()
}

var sink []byte

// allocating is a handler that allocates n bytes of garbage per request.
func allocating(n int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < n; i += 32 << 10 {
			sink = make([]byte, 32<<10)
		}
		io.WriteString(w, "ok")
	})
}

func TestGapEmptiedAfterABurst(t *testing.T) {
	// A quiet period long enough that no pause of the sequential client
	// inside the burst, on a loaded machine, counts as a quiet stretch:
	// then the burst's tail would re-arm a second release.
	// A budget that pays for any release: the test is about when one
	// comes, and a 20 MiB burst's faults back cost more than the default
	// budget's start where a fault costs 10 µs.
	s := serve(t, allocating(1<<20), gcstep.WithReleaseDelay(100*time.Millisecond), gcstep.WithBudget(1))
	c := client(t)
	for range 20 {
		code, _ := get(t, c, s.url)
		require.Equal(t, http.StatusOK, code)
	}
	require.Eventually(t, func() bool { return s.rt.Stats().Releases >= 1 }, wait, time.Millisecond,
		"no release after a 20 MiB burst")
	assert.Positive(t, s.rt.Stats().ReleasedBytes)

	// Once per quiet stretch: idle, with nothing allocated, the Runtime
	// does nothing more (no step, no release).
	before := s.rt.Stats()
	time.Sleep(200 * time.Millisecond)
	after := s.rt.Stats()
	assert.Equal(t, before.Steps, after.Steps, "steps while idle")
	assert.Equal(t, before.Releases, after.Releases, "releases while idle")
}

func TestIdleServerDoesNothing(t *testing.T) {
	s := serve(t, allocating(0), gcstep.WithReleaseDelay(5*time.Millisecond))
	c := client(t)
	for range 20 {
		get(t, c, s.url)
	}
	time.Sleep(100 * time.Millisecond)
	before := s.rt.Stats()
	time.Sleep(200 * time.Millisecond)
	after := s.rt.Stats()
	assert.Equal(t, before.Steps, after.Steps, "steps while idle")
	assert.Equal(t, before.Releases, after.Releases, "releases while idle")
	assert.Zero(t, after.CyclesInline, "cycles for requests that allocate nothing")
}

func TestErrorsAreNotCounted(t *testing.T) {
	// A request the server rejects before any handler runs is no work.
	s := serve(t, allocating(0))
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "BAD REQUEST LINE\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(wait)))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		require.NoError(t, err)
	}
	assert.Contains(t, line, "400")
	assert.Equal(t, 0, s.work.InFlight())
}
