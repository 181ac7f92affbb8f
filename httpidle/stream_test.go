package httpidle_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/httpidle"
)

// quiet reports whether nothing is in flight on w unpaused. It asks
// Work.Pause, which panics ("gcstep: ...") with nothing unpaused and
// leaves the counts as they were; otherwise it undoes its Pause at once.
// No other goroutine may resume work on w meanwhile.
func quiet(t *testing.T, w *gcstep.Work) (q bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			msg, _ := r.(string)
			require.True(t, strings.HasPrefix(msg, "gcstep: "), "panic %v", r)
			q = true
		}
	}()
	w.Pause()
	w.Resume()
	return false
}

// newWork returns a Work of a Runtime of its own, closed by the cleanup.
func newWork(t *testing.T, opts ...gcstep.Option) (*gcstep.Runtime, *gcstep.Work) {
	rt := gcstep.NewRuntime(opts...)
	work := rt.Work()
	t.Cleanup(func() {
		work.Close()
		rt.Close()
	})
	return rt, work
}

// serveOne calls h for one request on the calling goroutine, and returns
// what it panicked with, if it did.
func serveOne(h http.Handler) (panicked any) {
	defer func() { panicked = recover() }()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/events", nil))
	return nil
}

func TestStreamsCountsRight(t *testing.T) {
	for _, tt := range []struct {
		name  string
		wrap  func(*gcstep.Work, http.Handler) http.Handler
		h     func(t *testing.T, w *gcstep.Work, r *http.Request)
		panic any // what ServeHTTP panics with
	}{
		{"returns paused", httpidle.Streams, func(t *testing.T, w *gcstep.Work, r *http.Request) {
			httpidle.Pause(r.Context())
			assert.True(t, quiet(t, w), "paused, not quiet")
		}, nil},
		{"panics paused", httpidle.Streams, func(t *testing.T, w *gcstep.Work, r *http.Request) {
			httpidle.Pause(r.Context())
			panic("stream failed")
		}, "stream failed"},
		{"aborts paused", httpidle.Streams, func(t *testing.T, w *gcstep.Work, r *http.Request) {
			httpidle.Pause(r.Context())
			panic(http.ErrAbortHandler)
		}, http.ErrAbortHandler},
		{"resumes", httpidle.Streams, func(t *testing.T, w *gcstep.Work, r *http.Request) {
			assert.False(t, quiet(t, w), "in flight, quiet")
			resume := httpidle.Pause(r.Context())
			assert.True(t, quiet(t, w), "paused, not quiet")
			resume()
			assert.False(t, quiet(t, w), "resumed, quiet")
		}, nil},
		{"resumes twice", httpidle.Streams, func(t *testing.T, w *gcstep.Work, r *http.Request) {
			resume := httpidle.Pause(r.Context())
			resume()
			resume() // a second Work.Resume would panic
			assert.False(t, quiet(t, w), "resumed, quiet")
		}, nil},
		{"pauses twice", httpidle.Streams, func(t *testing.T, w *gcstep.Work, r *http.Request) {
			resume := httpidle.Pause(r.Context())
			again := httpidle.Pause(r.Context()) // nothing to do
			again()
			assert.True(t, quiet(t, w), "resumed by the second pause's resume")
			resume()
			assert.False(t, quiet(t, w), "resumed, quiet")
		}, nil},
		{"stale resume", httpidle.Streams, func(t *testing.T, w *gcstep.Work, r *http.Request) {
			first := httpidle.Pause(r.Context())
			first()
			second := httpidle.Pause(r.Context())
			first()
			assert.True(t, quiet(t, w), "the first pause's resume ended the second")
			second()
			assert.False(t, quiet(t, w), "resumed, quiet")
		}, nil},
		{"resumed elsewhere", httpidle.Streams, func(t *testing.T, w *gcstep.Work, r *http.Request) {
			resume := httpidle.Pause(r.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				resume()
			}()
			received(t, done, "the resume")
			assert.False(t, quiet(t, w), "resumed, quiet")
		}, nil},
		{"derived context", httpidle.Streams, func(t *testing.T, w *gcstep.Work, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), time.Hour)
			defer cancel()
			resume := httpidle.Pause(ctx)
			assert.True(t, quiet(t, w), "paused, not quiet")
			resume()
		}, nil},
		{"nested", func(w *gcstep.Work, h http.Handler) http.Handler {
			return httpidle.Streams(w, httpidle.Streams(w, h))
		}, func(t *testing.T, w *gcstep.Work, r *http.Request) {
			assert.Equal(t, 1, w.InFlight(), "counted twice")
			httpidle.Pause(r.Context())
			assert.True(t, quiet(t, w), "paused, not quiet")
		}, nil},
		{"under Handler", httpidle.Handler, func(t *testing.T, w *gcstep.Work, r *http.Request) {
			resume := httpidle.Pause(r.Context()) // does nothing
			assert.False(t, quiet(t, w), "paused under Handler")
			resume()
			assert.False(t, quiet(t, w), "in flight, quiet")
		}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, work := newWork(t)
			h := tt.wrap(work, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				tt.h(t, work, r)
			}))
			assert.Equal(t, tt.panic, serveOne(h))
			assert.Equal(t, 0, work.InFlight())
			// The counts are as they were: a request after it pairs.
			assert.Nil(t, serveOne(httpidle.Streams(work, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				httpidle.Pause(r.Context())()
				assert.False(t, quiet(t, work), "in flight, quiet")
			}))))
			assert.Equal(t, 0, work.InFlight())
		})
	}
}

func TestPauseOutsideStreams(t *testing.T) {
	resume := httpidle.Pause(context.Background())
	resume()
	resume()
}

func TestResumeAfterTheRequestEnded(t *testing.T) {
	_, work := newWork(t)
	var leaked func()
	h := httpidle.Streams(work, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		leaked = httpidle.Pause(r.Context())
	}))
	require.Nil(t, serveOne(h))
	require.NotNil(t, leaked)

	// Another stream waits: the first one's resume must not end its pause.
	paused, release := make(chan struct{}), make(chan struct{})
	done := make(chan any, 1)
	go func() {
		done <- serveOne(httpidle.Streams(work, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			resume := httpidle.Pause(r.Context())
			close(paused)
			<-release
			resume()
		})))
	}()
	received(t, paused, "the second stream to pause")
	leaked()
	assert.True(t, quiet(t, work), "a resume after its request ended resumed another")
	assert.Equal(t, 1, work.InFlight())
	close(release)
	assert.Nil(t, received(t, done, "the second stream"))
	assert.Equal(t, 0, work.InFlight())

	// And a Pause after it ended pauses nothing.
	var ctx context.Context
	require.Nil(t, serveOne(httpidle.Streams(work, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		ctx = r.Context()
	}))))
	work.Begin()
	httpidle.Pause(ctx)()
	httpidle.Pause(ctx)
	assert.False(t, quiet(t, work), "a Pause after its request ended paused another")
	work.End()
}

func TestStreamCanceledWhilePaused(t *testing.T) {
	entered, returned := make(chan struct{}), make(chan struct{})
	s := serveWith(t, httpidle.Streams, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(returned)
		if !assert.NoError(t, http.NewResponseController(w).Flush()) {
			return
		}
		httpidle.Pause(r.Context()) // resumed by Streams
		close(entered)
		<-r.Context().Done()
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", s.url, nil)
	require.NoError(t, err)
	resp, err := client(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	received(t, entered, "the stream to pause")
	assert.Equal(t, 1, s.work.InFlight())
	assert.True(t, quiet(t, s.work), "paused, not quiet")
	cancel()
	received(t, returned, "the handler to see the client go")
	require.Eventually(t, func() bool { return s.work.InFlight() == 0 }, wait, time.Millisecond)
	work := s.work
	work.Begin()
	assert.False(t, quiet(t, work), "in flight, quiet")
	work.End()
}

// kept keeps the last garbage of each stream reachable from the heap, so
// that it is allocated there.
var kept atomic.Pointer[[]byte]

func TestThousandPausedStreamsAreQuiet(t *testing.T) {
	const streams = 1000
	// A budget that pays for any release: the test is about when one comes.
	rt, work := newWork(t, gcstep.WithReleaseDelay(10*time.Millisecond), gcstep.WithBudget(1))
	paused, release := make(chan struct{}, streams), make(chan struct{})
	h := httpidle.Streams(work, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		for range 8 { // 8 MiB of garbage in all
			b := make([]byte, 1<<10)
			kept.Store(&b)
		}
		resume := httpidle.Pause(r.Context())
		paused <- struct{}{}
		<-release
		resume()
	}))
	// Work of the test's own keeps the Runtime from releasing before
	// every stream is paused.
	work.Begin()
	var wg sync.WaitGroup
	for range streams {
		wg.Go(func() { assert.Nil(t, serveOne(h)) })
	}
	for range streams {
		received(t, paused, "the streams to pause")
	}
	assert.Equal(t, streams+1, work.InFlight())
	before := rt.Stats().Releases
	work.End()
	assert.Equal(t, streams, work.InFlight())
	assert.True(t, quiet(t, work), "%d paused streams, not quiet", streams)
	assert.Eventually(t, func() bool { return rt.Stats().Releases > before }, 5*time.Second, time.Millisecond,
		"no release while %d streams were paused", streams)
	assert.Equal(t, streams, work.InFlight())
	close(release)
	wg.Wait()
	assert.Equal(t, 0, work.InFlight())
}

func TestHandlerAllocatesNothing(t *testing.T) {
	_, work := newWork(t)
	h := httpidle.Handler(work, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	w, r := nopWriter{h: http.Header{}}, httptest.NewRequest("GET", "/", nil)
	assert.Zero(t, testing.AllocsPerRun(100, func() { h.ServeHTTP(w, r) }))
}
