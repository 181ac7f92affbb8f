package httpidle_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/httpidle"
	"github.com/idlemux/idlemux/netloop"
)

// One Runtime for a net/http server and a netloop server in the same
// process: the gap is emptied only once both are quiet, and then once.
// The test is about the sharing, not the prices: the whole of the
// program's CPU is the budget, and before each quiet the test spends
// enough CPU of its own (earnFor) that every release is affordable.
func TestRuntimeSharedWithNetloop(t *testing.T) {
	rt := gcstep.NewRuntime(gcstep.WithBudget(1))
	defer rt.Close()

	// netloop: a line server that allocates 1 MiB per line.
	var junk [][]byte
	nl, err := netloop.Listen("tcp", "127.0.0.1:0", netloop.HandlerFuncs{
		Data: func(c *netloop.Conn) {
			in := c.Peek()
			for _, b := range in {
				if b == '\n' {
					junk = append(junk[:0], make([]byte, 1<<20))
					c.Write([]byte("ok\n"))
				}
			}
			c.Discard(len(in))
		},
	}, netloop.WithStepper(rt), netloop.WithLoops(2))
	require.NoError(t, err)
	nlDone := make(chan error, 1)
	go func() { nlDone <- nl.Serve() }()

	// net/http: a handler that allocates and then waits until told.
	work := rt.Work()
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	srv := &http.Server{Handler: httpidle.Handler(work, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sink = make([]byte, 4<<20)
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	}))}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	c := client(t)

	// A slow request stays in flight while netloop serves a burst and
	// goes quiet: no release.
	slow := make(chan error, 1)
	go func() {
		resp, err := c.Get(url + "/slow")
		if err == nil {
			resp.Body.Close()
		}
		slow <- err
	}()
	received(t, entered, "the slow request")
	conn, err := net.Dial("tcp", nl.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	for range 20 {
		_, err := io.WriteString(conn, "x\n")
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(wait)))
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "ok\n", line)
	}
	time.Sleep(3 * gcstep.DefaultReleaseDelay) // netloop's quiet period, three times over
	assert.Zero(t, rt.Stats().Releases, "released while a request was in flight")

	// The request ends: both servers are quiet, the gap is emptied, once.
	earnFor(t, rt)
	close(release)
	require.NoError(t, received(t, slow, "the slow response"))
	require.Eventually(t, func() bool { return rt.Stats().Releases >= 1 }, wait, time.Millisecond,
		"no release once both servers were quiet: %+v", rt.Stats())
	time.Sleep(gcstep.DefaultReleaseDelay)
	assert.EqualValues(t, 1, rt.Stats().Releases, "quiet stretches emptied")

	// A burst on each side, then quiet again: another release.
	earnFor(t, rt)
	for range 5 {
		code, _ := get(t, c, url)
		require.Equal(t, http.StatusOK, code)
		_, err := io.WriteString(conn, "x\n")
		require.NoError(t, err)
		_, err = r.ReadString('\n')
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return rt.Stats().Releases >= 2 }, wait, time.Millisecond,
		"no release after the second burst: %+v", rt.Stats())

	conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	assert.NoError(t, srv.Shutdown(ctx))
	assert.ErrorIs(t, <-httpDone, http.ErrServerClosed)
	work.Close()
	assert.NoError(t, nl.Shutdown(ctx))
	assert.NoError(t, <-nlDone)
}

// earnFor spends CPU outside the servers until rt's budget holds 250 ms:
// a release is paid from the program's CPU, and its price here (~20 MiB
// of pages faulted back, 20-65 ms where a fault costs 10 µs, and the
// burst's own charges) can exceed what a test's few requests earn, the
// tokens a process starts with having gone to its first Runtime.
func earnFor(t *testing.T, rt *gcstep.Runtime) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for s := rt.Stats(); s.Earned-s.Charged < 250*time.Millisecond; s = rt.Stats() {
		require.True(t, time.Now().Before(deadline), "the budget earned too little: %+v", s)
		for end := time.Now().Add(time.Millisecond); time.Now().Before(end); {
		}
	}
}
