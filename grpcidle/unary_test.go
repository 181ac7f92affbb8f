package grpcidle_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idlemux/idlemux/grpcidle"
)

func TestUnaryCountsCallInFlight(t *testing.T) {
	f := newFixture(t)
	// The handler answers with the counts it saw, or fails as asked.
	f.serve(t, handlers{say: func(_ context.Context, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		if in.GetValue() == "fail" {
			return nil, status.Error(codes.NotFound, "failed as asked")
		}
		return wrapperspb.String(countsOf(f.work).String()), nil
	}})
	for _, tt := range []struct {
		req, want string
		code      codes.Code
	}{
		{"count", "1 in flight, 0 paused", codes.OK},
		{"fail", "", codes.NotFound},
		{"count", "1 in flight, 0 paused", codes.OK},
	} {
		out := new(wrapperspb.StringValue)
		err := f.conn.Invoke(ctx(t), sayMethod, wrapperspb.String(tt.req), out)
		if got := status.Code(err); got != tt.code {
			t.Errorf("%s: got code %v (%v), want %v", tt.req, got, err, tt.code)
		}
		if got := out.GetValue(); got != tt.want {
			t.Errorf("%s: inside the handler got %q, want %q", tt.req, got, tt.want)
		}
		if got, want := countsOf(f.work), (counts{}); got != want {
			t.Errorf("%s: after the call got %v, want %v", tt.req, got, want)
		}
	}
}

// The interceptor is called directly for the handlers that panic: gRPC
// does not recover a handler's panic, and the test process would die.
func TestUnaryInterceptorEndsEveryCall(t *testing.T) {
	f := newFixture(t)
	intercept := grpcidle.UnaryServerInterceptor(f.work)
	errFailed := errors.New("failed")
	info := &grpc.UnaryServerInfo{FullMethod: sayMethod}
	for _, tt := range []struct {
		name    string
		handler func(ctx context.Context, req any) (any, error)
		resp    any
		err     error
		panic   any
	}{
		{"returns", func(_ context.Context, req any) (any, error) { return "re: " + req.(string), nil }, "re: req", nil, nil},
		{"fails", func(context.Context, any) (any, error) { return nil, errFailed }, nil, errFailed, nil},
		{"panics", func(context.Context, any) (any, error) { panic("handler panicked") }, nil, nil, "handler panicked"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var inside counts
			var resp any
			var err error
			p := panicked(func() {
				resp, err = intercept(context.Background(), "req", info, func(ctx context.Context, req any) (any, error) {
					inside = countsOf(f.work)
					return tt.handler(ctx, req)
				})
			})
			if p != tt.panic {
				t.Errorf("got panic %v, want %v", p, tt.panic)
			}
			if resp != tt.resp || err != tt.err {
				t.Errorf("got %v, %v, want %v, %v", resp, err, tt.resp, tt.err)
			}
			if want := (counts{1, 0}); inside != want {
				t.Errorf("inside the handler got %v, want %v", inside, want)
			}
			if got, want := countsOf(f.work), (counts{}); got != want {
				t.Errorf("after it got %v, want %v", got, want)
			}
		})
	}
}

func TestNilWorkPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"UnaryServerInterceptor":  func() { grpcidle.UnaryServerInterceptor(nil) },
		"StreamServerInterceptor": func() { grpcidle.StreamServerInterceptor(nil) },
	} {
		p := panicked(f)
		if s, _ := p.(string); !strings.HasPrefix(s, "grpcidle: ") {
			t.Errorf("%s(nil): got panic %v, want one that starts with %q", name, p, "grpcidle: ")
		}
	}
}
