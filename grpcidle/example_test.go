package grpcidle_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/grpcidle"
)

// echo is a gRPC service written by hand as protoc would generate it, over
// a well-known message type: Say answers a unary call with its request,
// and Chat echoes each message of a bidirectional stream until the client
// closes its side.
var echo = grpc.ServiceDesc{
	ServiceName: "idlemux.example.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Say",
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			say := func(ctx context.Context, req any) (any, error) { return req, nil }
			if interceptor == nil {
				return say(ctx, in)
			}
			return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/idlemux.example.Echo/Say"}, say)
		},
	}},
	Streams: []grpc.StreamDesc{{
		StreamName: "Chat",
		Handler: func(srv any, ss grpc.ServerStream) error {
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
		},
		ServerStreams: true,
		ClientStreams: true,
	}},
}

// A gRPC server gets idle GC from a Runtime, a Work and two interceptors.
// Its calls count as work in flight, but for a stream's waits for its
// client's next message.
func Example() {
	rt := gcstep.NewRuntime() // one per process
	defer rt.Close()
	work := rt.Work()
	defer work.Close() // runs first, once the server has stopped
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(grpcidle.UnaryServerInterceptor(work)),
		grpc.ChainStreamInterceptor(grpcidle.StreamServerInterceptor(work)),
	)
	srv.RegisterService(&echo, struct{}{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	go srv.Serve(ln)
	defer srv.GracefulStop()

	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	ctx := context.Background()

	out := new(wrapperspb.StringValue)
	if err := conn.Invoke(ctx, "/idlemux.example.Echo/Say", wrapperspb.String("hello"), out); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("Say:", out.GetValue())

	chat, err := conn.NewStream(ctx, &echo.Streams[0], "/idlemux.example.Echo/Chat")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range []string{"one", "two"} {
		if err := chat.SendMsg(wrapperspb.String(s)); err != nil {
			fmt.Println(err)
			return
		}
		if err := chat.RecvMsg(out); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("Chat:", out.GetValue())
	}
	// The server waits for the next message: in flight, but paused.
	fmt.Println("in flight while Chat is open:", work.InFlight())
	chat.CloseSend()
	if err := chat.RecvMsg(out); !errors.Is(err, io.EOF) {
		fmt.Println("want io.EOF, got", err)
	}
	fmt.Println("in flight after it ended:", work.InFlight())
	// Output:
	// Say: hello
	// Chat: one
	// Chat: two
	// in flight while Chat is open: 1
	// in flight after it ended: 0
}
