package grpcidle

import (
	"sync"

	"google.golang.org/grpc"

	"github.com/idlemux/idlemux/gcstep"
)

// StreamServerInterceptor returns an interceptor that counts each
// streaming call as work in flight on w while its handler runs, also when
// it returns an error or panics (the panic goes on, as without the
// interceptor).
//
// The handler gets the stream wrapped: while it waits in RecvMsg for the
// client's next message, the call is paused on w (gcstep.Work.Pause), so
// a server whose open streams all wait for their clients counts as quiet
// and gets its memory back. RecvMsg is the only wait that counts: SendMsg
// blocks only when gRPC's flow control holds it, because the client reads
// slower than the server writes, and then the server has work in flight,
// the messages it has made and not yet sent. A handler that waits for
// something else (its own events, a ticker, a call to another service)
// counts as busy while it waits; if it has w, it may say so itself with
// w.Pause and w.Resume around that wait, paired with defer.
//
// A RecvMsg that returns an error (io.EOF, a cancelled or ended call) or
// panics resumes the call as one that returns a message does. The
// handler may return while another goroutine of its own still waits in
// RecvMsg (gRPC then ends that wait with an error): the call ends at once,
// and the wait's return changes nothing. The stream passed on keeps every
// other method of the stream it wraps (Context, SendMsg, headers and
// trailers).
//
// It panics, with a message that starts with "grpcidle:", if w is nil.
func StreamServerInterceptor(w *gcstep.Work) grpc.StreamServerInterceptor {
	if w == nil {
		panic("grpcidle: StreamServerInterceptor with a nil Work")
	}
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		w.Begin()
		s := &serverStream{ServerStream: ss, w: w}
		defer s.end()
		return handler(srv, s)
	}
}

// serverStream is the stream a handler gets: the call's stream, with the
// waits in RecvMsg paused on w.
//
// The handler's goroutine and one of its own may use the stream at once
// (one receiving, one sending), and the handler may return while the
// other still waits in RecvMsg; so whether the call is paused, and
// whether it has ended, change together under mu with w's counts. The
// lock is uncontended but for those moments, and costs little beside a
// gRPC message.
type serverStream struct {
	grpc.ServerStream
	w *gcstep.Work

	mu      sync.Mutex
	waiting int  // RecvMsg calls in progress that paused the call, or found it paused; guarded by mu
	ended   bool // the handler returned and the call's work ended; guarded by mu
}

// RecvMsg waits for the client's next message with the call paused.
func (s *serverStream) RecvMsg(m any) error {
	s.wait()
	defer s.woke()
	return s.ServerStream.RecvMsg(m)
}

// wait records that a RecvMsg begins to wait: the first of them pauses the
// call. gRPC allows only one at a time, but counting costs nothing.
func (s *serverStream) wait() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if s.waiting == 0 {
		s.w.Pause()
	}
	s.waiting++
}

// woke records that a RecvMsg returned, with a message, an error or a
// panic: the last of them resumes the call, unless it ended meanwhile.
func (s *serverStream) woke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.waiting--
	if s.waiting == 0 {
		s.w.Resume()
	}
}

// end ends the call's work when the handler returns or panics. A call
// paused by a RecvMsg still waiting is resumed and ended: the Work has no
// way to end a paused piece of work directly.
func (s *serverStream) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	if s.waiting > 0 {
		s.w.Resume()
	}
	s.w.End()
}
