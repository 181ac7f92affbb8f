package httpidle

import (
	"context"
	"net/http"
	"sync"

	"github.com/idlemux/idlemux/gcstep"
)

// Streams returns h wrapped for routes whose handlers live long and
// mostly wait: server-sent events, long polls, websockets. Each request
// counts as work in flight on w until its handler returns, also when it
// panics, as with Handler; in between, the handler can say with Pause
// when it waits for its source or its peer. While every request in
// flight waits, the server is quiet, and the Runtime returns memory to
// the operating system after the quiet period however many streams stay
// open.
//
// Streams puts the request's state in its context, which costs each
// request three small allocations, and each Pause one more (its resume);
// Handler costs none. Wrap the stream routes with Streams and the others
// with Handler, or everything with Streams, but not one request with
// both: the count Handler adds is never paused, so the server would not
// be quiet while a stream is open. Streams inside Streams on the same
// Work counts a request once.
func Streams(w *gcstep.Work, h http.Handler) http.Handler {
	return streams{w: w, h: h}
}

type streams struct {
	w *gcstep.Work
	h http.Handler
}

func (x streams) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if s, ok := r.Context().Value(streamKey{}).(*stream); ok && s.w == x.w {
		x.h.ServeHTTP(rw, r) // an outer Streams counts it
		return
	}
	s := &stream{w: x.w}
	r = r.WithContext(context.WithValue(r.Context(), streamKey{}, s))
	x.w.Begin()
	defer s.end()
	x.h.ServeHTTP(rw, r)
}

// streamKey is the context key of a request's *stream.
type streamKey struct{}

// A stream is the state of one request served by Streams. Its Begin is
// matched by one End, in end; each w.Pause made for it by one w.Resume,
// in the resume func Pause returned or, if the handler did not call it,
// in end, before the End.
type stream struct {
	w *gcstep.Work

	mu     sync.Mutex // guards the fields below
	paused bool       // w.Pause was called for the request and w.Resume not yet
	ended  bool       // the handler returned: nothing more is counted
	pauses uint64     // the Pauses so far: which one a resume func ends
}

// end ends the request's count, resuming it first if it was paused.
func (s *stream) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	if s.paused {
		s.paused = false
		s.w.Resume()
	}
	s.w.End()
}

// Pause records that the request served by Streams whose context is ctx,
// or one ctx derives from, waits for its source or its peer, and returns
// the function that records that it goes on. Wrap the wait for the next
// message and nothing else:
//
//	resume := httpidle.Pause(r.Context())
//	select {
//	case msg = <-messages:
//	case <-r.Context().Done():
//	}
//	resume()
//	// encode msg, write it, flush: work, counted
//
// What a message costs (encoding, writing, flushing it, even when a slow
// client blocks the write) is work, and stays counted: a pause that
// covered it would make the server look quiet in the middle of a burst,
// and the Runtime would collect and release while the burst goes on. A
// request is paused or not as a whole: a handler whose goroutines work
// and wait at once (a websocket's reader and writer) should pause only
// where all of them wait.
//
// resume may be called from any goroutine and more than once: only its
// first call does anything, and none after the handler returned. The
// handler need not call it before it returns, nor defer it: Streams
// resumes a request that ends paused, also when its handler panics.
// Pause on a request already paused, on one whose handler returned, or
// on a context that Streams did not make (a request under Handler, a
// background context) does nothing and returns a resume that does
// nothing.
func Pause(ctx context.Context) (resume func()) {
	s, ok := ctx.Value(streamKey{}).(*stream)
	if !ok {
		return nop
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused || s.ended {
		return nop
	}
	s.w.Pause()
	s.paused = true
	s.pauses++
	n := s.pauses
	return func() { s.resume(n) }
}

// resume ends pause n, if the request is still in it.
func (s *stream) resume(n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused && s.pauses == n {
		s.paused = false
		s.w.Resume()
	}
}

func nop() {}
