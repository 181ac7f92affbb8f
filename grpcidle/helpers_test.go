package grpcidle_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/grpcidle"
)

// wait is how long a test waits for anything before it fails.
const wait = 10 * time.Second

// fixture is a Runtime and a Work of a test's own, and a gRPC server on a
// loopback port whose calls are counted on the Work, with a client
// connected to it. The cleanup stops them all.
type fixture struct {
	rt   *gcstep.Runtime
	work *gcstep.Work
	conn *grpc.ClientConn
}

// newFixture makes the Runtime, with opts, and the Work. Only one Runtime
// may be open at a time: a second would join the first, options and all.
func newFixture(t *testing.T, opts ...gcstep.Option) *fixture {
	t.Helper()
	f := &fixture{rt: gcstep.NewRuntime(opts...)}
	f.work = f.rt.Work()
	t.Cleanup(func() {
		f.work.Close()
		f.rt.Close()
	})
	return f
}

// handlers are the test service's methods; nil ones echo.
type handlers struct {
	say  func(ctx context.Context, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error)
	chat func(ss grpc.ServerStream) error
}

const (
	sayMethod  = "/idlemux.test.Echo/Say"
	chatMethod = "/idlemux.test.Echo/Chat"
)

// chatDesc describes the bidirectional stream for the client.
var chatDesc = grpc.StreamDesc{StreamName: "Chat", ServerStreams: true, ClientStreams: true}

// service is the test service over h, written by hand as protoc would
// generate it.
func service(h handlers) *grpc.ServiceDesc {
	if h.say == nil {
		h.say = func(_ context.Context, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error) { return in, nil }
	}
	if h.chat == nil {
		h.chat = echoChat
	}
	chat := chatDesc
	chat.Handler = func(_ any, ss grpc.ServerStream) error { return h.chat(ss) }
	return &grpc.ServiceDesc{
		ServiceName: "idlemux.test.Echo",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Say",
			Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
				in := new(wrapperspb.StringValue)
				if err := dec(in); err != nil {
					return nil, err
				}
				say := func(ctx context.Context, req any) (any, error) { return h.say(ctx, req.(*wrapperspb.StringValue)) }
				if interceptor == nil {
					return say(ctx, in)
				}
				return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: sayMethod}, say)
			},
		}},
		Streams: []grpc.StreamDesc{chat},
	}
}

// echoChat sends back each message until the client closes its side.
func echoChat(ss grpc.ServerStream) error {
	for {
		m := new(wrapperspb.StringValue)
		if err := ss.RecvMsg(m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if err := ss.SendMsg(m); err != nil {
			return err
		}
	}
}

// serve starts a server of h with both interceptors on f.work, and
// connects f.conn to it. The cleanup closes the connection and stops the
// server gracefully, or not if its calls do not end within wait.
func (f *fixture) serve(t *testing.T, h handlers) {
	t.Helper()
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(grpcidle.UnaryServerInterceptor(f.work)),
		grpc.ChainStreamInterceptor(grpcidle.StreamServerInterceptor(f.work)),
	)
	srv.RegisterService(service(h), struct{}{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		srv.Stop()
		t.Fatal(err)
	}
	f.conn = conn
	t.Cleanup(func() {
		conn.Close()
		stopped := make(chan struct{})
		go func() {
			srv.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(wait):
			t.Error("calls still running after the client closed: stopping the server")
			srv.Stop()
			<-stopped
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// ctx is a context for a client's call, which ends with the test or
// after wait.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return c
}

// chat opens a stream of the test service.
func (f *fixture) chat(t *testing.T, ctx context.Context) grpc.ClientStream {
	t.Helper()
	cs, err := f.conn.NewStream(ctx, &chatDesc, chatMethod)
	if err != nil {
		t.Fatalf("NewStream: %v", err)
	}
	return cs
}

// exchange sends s on cs and returns the answer.
func exchange(t *testing.T, cs grpc.ClientStream, s string) string {
	t.Helper()
	if err := cs.SendMsg(wrapperspb.String(s)); err != nil {
		t.Fatalf("SendMsg: %v", err)
	}
	m := new(wrapperspb.StringValue)
	if err := cs.RecvMsg(m); err != nil {
		t.Fatalf("RecvMsg: %v", err)
	}
	return m.GetValue()
}

// finish closes the client's side of cs and waits for the server's
// status: want nil for a handler that returned nil.
func finish(t *testing.T, cs grpc.ClientStream) error {
	t.Helper()
	if err := cs.CloseSend(); err != nil {
		t.Fatalf("CloseSend: %v", err)
	}
	err := cs.RecvMsg(new(wrapperspb.StringValue))
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err == nil {
		t.Fatal("a message after CloseSend, want the status")
	}
	return err
}

// eventually waits for cond, for at most wait.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// received waits for a value on c, for at most wait.
func received[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(wait):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// paused reports how many pieces of work in flight on w are paused. A
// Work does not say, so it is read through the check of its misuse:
// Resume panics once no pause is left. Each pause taken is put back.
// Call it only while no paused RecvMsg can return: one that did would
// find its pause taken, and panic.
func paused(w *gcstep.Work) (n int) {
	defer func() {
		for range n {
			w.Pause()
		}
	}()
	for resume(w) {
		n++
	}
	return n
}

// resume calls w.Resume and reports whether there was a pause to resume.
func resume(w *gcstep.Work) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if s, _ := r.(string); !strings.HasPrefix(s, "gcstep: ") {
				panic(r)
			}
			ok = false
		}
	}()
	w.Resume()
	return true
}

// counts is what a Work's counts are, as the tests read them.
type counts struct{ inFlight, paused int }

func (c counts) String() string { return fmt.Sprintf("%d in flight, %d paused", c.inFlight, c.paused) }

func countsOf(w *gcstep.Work) counts { return counts{w.InFlight(), paused(w)} }

// panicked runs f and returns what it panicked with, or nil.
func panicked(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}
