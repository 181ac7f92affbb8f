package grpcidle_test

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/grpcidle"
)

// benchConn serves the test service over loopback, with the interceptors
// on a Work of rt's or, for the baseline, without them.
func benchConn(b *testing.B, rt *gcstep.Runtime) *grpc.ClientConn {
	var opts []grpc.ServerOption
	if rt != nil {
		work := rt.Work()
		b.Cleanup(work.Close)
		opts = append(opts,
			grpc.ChainUnaryInterceptor(grpcidle.UnaryServerInterceptor(work)),
			grpc.ChainStreamInterceptor(grpcidle.StreamServerInterceptor(work)),
		)
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(service(handlers{}), struct{}{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		conn.Close()
		srv.Stop()
	})
	return conn
}

// The cost of the interceptors beside a plain server: a unary call, and
// one message's round trip on an open stream (a Pause and a Resume).
func BenchmarkRoundTrip(b *testing.B) {
	for _, tt := range []struct {
		name    string
		stepper bool
	}{{"plain", false}, {"grpcidle", true}} {
		b.Run(tt.name, func(b *testing.B) {
			var rt *gcstep.Runtime
			if tt.stepper {
				rt = gcstep.NewRuntime()
				b.Cleanup(rt.Close)
			}
			conn := benchConn(b, rt)
			ctx := context.Background()
			in, out := wrapperspb.String("hello"), new(wrapperspb.StringValue)
			b.Run("Say", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := conn.Invoke(ctx, sayMethod, in, out); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("Chat", func(b *testing.B) {
				cs, err := conn.NewStream(ctx, &chatDesc, chatMethod)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := cs.SendMsg(in); err != nil {
						b.Fatal(err)
					}
					if err := cs.RecvMsg(out); err != nil {
						b.Fatal(err)
					}
				}
				cs.CloseSend()
				cs.RecvMsg(out)
			})
		})
	}
}
