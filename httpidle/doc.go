// Package httpidle gives a net/http server the idle garbage collection
// of package gcstep: memory back to the operating system soon after a
// burst of requests, nothing paid by the requests themselves.
//
// A server with a goroutine per connection has no event loop whose idle
// moments a stepper could use, and after a burst it keeps its memory: the
// runtime collects again only when allocation resumes, and returns free
// pages at about 1 % of a CPU. Handler counts the requests in flight on
// a gcstep.Work; once none has been in flight for the Work's quiet period
// (and every event loop sharing the Runtime is quiet too), the Runtime
// collects what the burst left and returns it, once per quiet stretch,
// with the same policy and within the same CPU budget as for its loops.
//
//	rt := gcstep.NewRuntime() // one per process
//	defer rt.Close()
//	work := rt.Work()
//	defer work.Close() // once the server has shut down
//	srv.Handler = httpidle.Handler(work, srv.Handler)
//
// A handler that streams (server-sent events, a long poll, a websocket)
// is in flight for as long as it lives, and a server with a stream open
// would never be quiet. Serve such routes with Streams instead, and
// let their handlers wrap each wait for the next message in Pause and
// its resume: while every request in flight waits, the server is quiet.
//
//	mux.Handle("/events", httpidle.Streams(work, events))
//	mux.Handle("/", httpidle.Handler(work, api))
package httpidle
