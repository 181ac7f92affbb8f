package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// echo serves Say as example/server does.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: "idlemux.example.Echo",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Say",
			Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				in := new(wrapperspb.StringValue)
				err := dec(in)
				return in, err
			}}},
		Streams: []grpc.StreamDesc{{StreamName: "Chat", ServerStreams: true, ClientStreams: true,
			Handler: func(_ any, ss grpc.ServerStream) error {
				for {
					m := new(wrapperspb.StringValue)
					if err := ss.RecvMsg(m); err != nil {
						return nil
					}
					if err := ss.SendMsg(m); err != nil {
						return err
					}
				}
			}}},
	}, struct{}{})
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

func TestRunReports(t *testing.T) {
	addr := echo(t)
	var out, errb strings.Builder
	code := run(context.Background(), []string{"-addr", addr, "-c", "4", "-d", "200ms", "-size", "1000", "-json"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var r Result
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
		t.Fatalf("%q: %v", out.String(), err)
	}
	if r.Calls == 0 || r.CallsPerSec <= 0 || r.P50 <= 0 || r.P99 < r.P50 || r.Errors != 0 {
		t.Errorf("result %+v", r)
	}
}

func TestRunFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody there
	var out, errb strings.Builder
	start := time.Now()
	if code := run(context.Background(), []string{"-addr", addr, "-c", "2", "-d", "100ms"}, &out, &errb); code != 1 {
		t.Errorf("exit %d with nobody listening, want 1; stderr %q", code, errb.String())
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
	for _, args := range [][]string{{"-c", "0"}, {"-d", "0s"}, {"extra"}} {
		errb.Reset()
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestRunStreams(t *testing.T) {
	addr := echo(t)
	var out, errb strings.Builder
	args := []string{"-addr", addr, "-streams", "5", "-bursts", "2", "-messages", "3", "-every", "1ms", "-settle", "10ms",
		"-size", "100", "-pid", fmt.Sprint(os.Getpid()), "-json"}
	if code := run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var r StreamsResult
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
		t.Fatalf("%q: %v", out.String(), err)
	}
	if r.Streams != 5 || r.Messages != 30 || r.P50 <= 0 || r.P99 < r.P50 || r.StartRSS == 0 || len(r.Settled) != 2 || len(r.CPU) != 2 {
		t.Errorf("result %+v", r)
	}
	out.Reset()
	if code := run(context.Background(), args[:len(args)-1], &out, &errb); code != 0 || !strings.Contains(out.String(), "burst 2: the server holds") {
		t.Errorf("exit %d, output %q", code, out.String())
	}
	for _, bad := range [][]string{{"-streams", "-1"}, {"-streams", "2", "-messages", "0"}, {"-streams", "2", "-every", "0s"}} {
		if code := run(context.Background(), bad, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}
