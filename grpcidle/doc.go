// Package grpcidle gives a gRPC server the idle garbage collection of
// package gcstep: memory back to the operating system soon after a burst
// of calls, also while the streams that stay open only wait for their
// clients, at next to no cost to the calls (an atomic add as a call
// begins and ends; for a stream, a small allocation and a lock around
// each RecvMsg).
//
// A gRPC server runs a goroutine per call and has no event loop whose idle
// moments a stepper could use. Its interceptors count the calls in flight
// on a gcstep.Work, as package httpidle does for net/http; once nothing
// has been in flight for the Runtime's quiet period (and every event loop
// and Work sharing the Runtime is quiet too), the Runtime collects what
// the burst left and returns it, once per quiet stretch, within its CPU
// budget.
//
// A unary call is in flight while its handler runs. A streaming call is in
// flight while its handler runs, except while it waits in RecvMsg for its
// client's next message: there it is paused (gcstep.Work.Pause), so a
// server whose streams all wait for their clients counts as quiet. Nothing
// else counts as waiting; see StreamServerInterceptor.
//
//	rt := gcstep.NewRuntime() // one per process
//	defer rt.Close()
//	work := rt.Work()
//	defer work.Close() // once the server has stopped
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(grpcidle.UnaryServerInterceptor(work)),
//		grpc.ChainStreamInterceptor(grpcidle.StreamServerInterceptor(work)),
//	)
//
// The package is a module of its own, so that the idlemux module does not
// depend on gRPC.
package grpcidle
