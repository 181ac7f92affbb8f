package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// wait is how long a test waits for anything before it fails.
const wait = 10 * time.Second

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRunBadFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-stepper", "maybe"}, `invalid value "maybe" for flag -stepper: want on or off`},
		{[]string{"-stepper", "off", "-baseline", "gctuner"}, `invalid value "gctuner" for flag -baseline: want none|tuner|freeos`},
		{[]string{"-baseline", "tuner"}, "-baseline needs -stepper off"},
		{[]string{"-port", "1"}, "flag provided but not defined: -port"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		var stdout, stderr strings.Builder
		if code := run(context.Background(), tt.args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: got exit code %d, want 2", tt.args, code)
		}
		if !strings.Contains(stderr.String(), tt.want) || !strings.Contains(stderr.String(), "Usage of server") {
			t.Errorf("%v: got stderr %q, want %q and the usage", tt.args, stderr.String(), tt.want)
		}
	}
}

// TestRun serves both methods with the stepper on and off, and stops on
// ctx's end with a summary.
func TestRun(t *testing.T) {
	for _, mode := range []string{"on", "off", "off, tuner", "off, freeos"} {
		t.Run(mode, func(t *testing.T) {
			stepper, baseline, _ := strings.Cut(mode, ", ")
			args := []string{"-addr", "127.0.0.1:0", "-stepper", stepper}
			if baseline != "" {
				args = append(args, "-baseline", baseline)
			}
			out, lines := lines(t)
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			var stderr strings.Builder
			code := make(chan int, 1)
			go func() {
				code <- run(ctx, args, out, &stderr)
				out.Close()
			}()
			first := next(t, lines)
			addr, ok := strings.CutPrefix(first, "server: serving on ")
			if !ok {
				t.Fatalf("got %q, want the address", first)
			}
			addr, _, _ = strings.Cut(addr, " ")
			if want := "(stepper " + mode + ")"; !strings.Contains(first, want) {
				t.Errorf("got %q, want %q in it", first, want)
			}
			call(t, addr)

			stop()
			select {
			case c := <-code:
				if c != 0 {
					t.Errorf("got exit code %d, want 0; stderr %q", c, stderr.String())
				}
			case <-time.After(wait):
				t.Fatal("timed out waiting for run to return")
			}
			last := next(t, lines)
			for _, want := range []string{"server: 2 calls in ", "stepper " + stepper} {
				if !strings.Contains(last, want) {
					t.Errorf("got summary %q, want %q in it", last, want)
				}
			}
		})
	}
}

// call makes a unary call and a stream of two messages to the server at
// addr.
func call(t *testing.T, addr string) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	out := new(wrapperspb.StringValue)
	if err := conn.Invoke(ctx, "/idlemux.example.Echo/Say", wrapperspb.String("hello"), out); err != nil || out.GetValue() != "hello" {
		t.Fatalf("Say: got %q, %v, want %q", out.GetValue(), err, "hello")
	}
	desc := &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}
	cs, err := conn.NewStream(ctx, desc, "/idlemux.example.Echo/Chat")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"one", "two"} {
		if err := cs.SendMsg(wrapperspb.String(s)); err != nil {
			t.Fatal(err)
		}
		if err := cs.RecvMsg(out); err != nil || out.GetValue() != s {
			t.Fatalf("Chat: got %q, %v, want %q", out.GetValue(), err, s)
		}
	}
	if err := cs.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if err := cs.RecvMsg(out); !errors.Is(err, io.EOF) {
		t.Fatalf("Chat: got %v, want io.EOF", err)
	}
}

// lines is an io.Writer for run's stdout whose lines the test reads.
func lines(t *testing.T) (io.WriteCloser, <-chan string) {
	r, w := io.Pipe()
	c := make(chan string, 16)
	go func() {
		defer close(c)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			c <- sc.Text()
		}
	}()
	t.Cleanup(func() { r.Close() })
	return w, c
}

// next waits for the next line, for at most wait.
func next(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("stdout closed")
		}
		return l
	case <-time.After(wait):
		t.Fatal("timed out waiting for a line of output")
	}
	return ""
}
