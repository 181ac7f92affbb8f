// Command server is a small gRPC server with idle garbage collection
// through package grpcidle. Its service, idlemux.example.Echo, is written
// by hand (no generated code) over the well-known StringValue message:
//
//	/idlemux.example.Echo/Say    unary: answers with the request
//	/idlemux.example.Echo/Chat   bidirectional: echoes each message until
//	                             the client closes its side
//
// With -stepper on (the default) the calls are counted on a gcstep.Work
// through both interceptors: the Runtime empties the gaps after bursts,
// and while the open streams only wait for their clients, as far as its
// CPU budget pays for it. With -stepper off it is a plain gRPC server;
// -baseline tuner or freeos adds what services do by hand instead (a GOGC
// tuner with a 64 MiB threshold, as bytedance's gctuner;
// debug.FreeOSMemory every 10 s), for bench/web's day schedule. The
// command example/load drives it.
//
// SIGINT or SIGTERM stop it gracefully (calls in flight finish, for up to
// five seconds) and it prints what the Runtime did.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/grpcidle"
	"github.com/idlemux/idlemux/internal/gcbaseline"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// config is what the flags say.
type config struct {
	addr     string
	stepper  bool
	baseline string // gcbaseline's name; "none" with the stepper on
}

// parse reads the flags in args. On an error it has printed what is
// wrong and the usage to stderr.
func parse(args []string, stderr io.Writer) (config, error) {
	cfg := config{stepper: true, baseline: "none"}
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:50051", "`address` to listen on (host:port; port 0 picks a free one)")
	fs.Func("stepper", "`on|off`: return memory after bursts and while streams wait (default on)", func(s string) error {
		switch s {
		case "on", "off":
			cfg.stepper = s == "on"
			return nil
		}
		return errors.New("want on or off")
	})
	fs.Func("baseline", "`"+gcbaseline.Names+"`: with -stepper off, what a service does by hand instead: a GOGC tuner or debug.FreeOSMemory on a timer (default none)", func(s string) error {
		if !gcbaseline.Valid(s) {
			return errors.New("want " + gcbaseline.Names)
		}
		cfg.baseline = s
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case cfg.stepper && cfg.baseline != "none":
		err = errors.New("-baseline needs -stepper off")
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		fs.Usage()
	}
	return cfg, err
}

// run is the command: it serves until ctx ends and returns the exit code,
// 2 for bad flags and 1 for a server that could not start or failed.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		fmt.Fprintf(stderr, "server: %v\n", err)
		return 1
	}
	var rt *gcstep.Runtime
	var work *gcstep.Work
	var opts []grpc.ServerOption
	if cfg.stepper {
		rt = gcstep.NewRuntime()
		work = rt.Work()
		opts = append(opts,
			grpc.ChainUnaryInterceptor(grpcidle.UnaryServerInterceptor(work)),
			grpc.ChainStreamInterceptor(grpcidle.StreamServerInterceptor(work)),
		)
	}
	stopBaseline, err := gcbaseline.Start(cfg.baseline)
	if err != nil {
		fmt.Fprintf(stderr, "server: %v\n", err)
		return 2
	}
	defer stopBaseline()
	srv := grpc.NewServer(opts...)
	var calls atomic.Uint64
	srv.RegisterService(echoService(&calls), struct{}{})
	start := time.Now()
	stepper := map[bool]string{true: "on", false: "off"}[cfg.stepper]
	if cfg.baseline != "none" {
		stepper += ", " + cfg.baseline
	}
	fmt.Fprintf(stdout, "server: serving on %v (stepper %s)\n", ln.Addr(), stepper)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	code := 0
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "server: %v\n", err)
		code = 1
	case <-ctx.Done():
		stopped := make(chan struct{})
		go func() {
			srv.GracefulStop()
			close(stopped)
		}()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			fmt.Fprintln(stderr, "server: calls still in flight after 5s: stopped")
			srv.Stop()
			<-stopped
		}
		<-errc // nil once stopped
	}
	if work != nil {
		work.Close()
		rt.Close()
	}
	fmt.Fprintln(stdout, summary(calls.Load(), time.Since(start), rt))
	return code
}

// summary is the line printed at exit.
func summary(calls uint64, up time.Duration, rt *gcstep.Runtime) string {
	s := fmt.Sprintf("server: %d calls in %v", calls, up.Round(time.Millisecond))
	if rt == nil {
		return s + ", stepper off"
	}
	st := rt.Stats()
	return s + fmt.Sprintf(", stepper on: %d releases returned %.1f MiB, %d cycles at idle moments, costing %v of a budget of %v",
		st.Releases, float64(st.ReleasedBytes)/(1<<20), st.CyclesInline, st.Charged.Round(time.Microsecond), st.Earned.Round(time.Microsecond))
}

// echoService is the Echo service, as protoc would generate its
// description; calls counts the calls begun.
func echoService(calls *atomic.Uint64) *grpc.ServiceDesc {
	say := func(_ context.Context, req any) (any, error) { return req, nil }
	return &grpc.ServiceDesc{
		ServiceName: "idlemux.example.Echo",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Say",
			Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
				calls.Add(1)
				in := new(wrapperspb.StringValue)
				if err := dec(in); err != nil {
					return nil, err
				}
				if interceptor == nil {
					return say(ctx, in)
				}
				return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/idlemux.example.Echo/Say"}, say)
			},
		}},
		Streams: []grpc.StreamDesc{{
			StreamName: "Chat",
			Handler: func(_ any, ss grpc.ServerStream) error {
				calls.Add(1)
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
}
