package main

import (
	"context"
	"encoding/json"
	"net"
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
