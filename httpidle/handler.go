package httpidle

import (
	"net/http"

	"github.com/idlemux/idlemux/gcstep"
)

// Handler returns h wrapped so that each request counts as work in
// flight on w from the moment the server calls the handler until the
// handler returns, also when it panics (the panic goes on to net/http,
// which logs it and closes the connection, as without the wrapper).
//
// The ResponseWriter is passed on as it is, so a handler can still flush
// a streamed response (http.Flusher, http.ResponseController), hijack the
// connection (http.Hijacker) and set deadlines. A streaming handler counts
// as in flight until it returns, however idle the stream, and while any
// request is in flight the Runtime does not empty the gap: serve the
// routes of long-lived streams (server-sent events, long polls,
// websockets) with Streams instead, whose handlers say with Pause when
// they wait. A hijacked connection counts until its handler returns;
// what a goroutine does with it afterwards is not counted.
//
// Idle keep-alive connections need no telling (http.Server.ConnState):
// the gap between bursts is the time with no handler running, whether
// the connections stay open or not.
func Handler(w *gcstep.Work, h http.Handler) http.Handler {
	return handler{w: w, h: h}
}

type handler struct {
	w *gcstep.Work
	h http.Handler
}

func (x handler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	x.w.Begin()
	defer x.w.End()
	x.h.ServeHTTP(rw, r)
}
