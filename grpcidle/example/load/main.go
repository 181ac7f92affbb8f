// Command load drives example/server's unary Say for a while, from many
// goroutines over one connection, and reports what the calls took:
//
//	go run ./example/load -addr 127.0.0.1:50051 -c 32 -d 5s -size 4096
//
// It prints one line, or with -json one JSON object: calls, calls a
// second, the 50th and 99th percentile of the calls' latency, and the
// calls that failed. bench/web's day schedule runs it as its gRPC client.
//
// With -streams N it opens N Chat streams instead and, -bursts times,
// sends -messages messages on each, -every apart, then leaves every
// stream open and idle for -settle; given the server's process id (-pid)
// it reads the server's resident memory at the end of each settle, over
// what it held before the streams opened, and its CPU time:
//
//	go run ./example/load -streams 1000 -pid $(pgrep -n server)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// config is what the flags say.
type config struct {
	addr  string
	conns int
	d     time.Duration
	size  int
	json  bool

	streams, bursts, messages int
	every, settle             time.Duration
	pid                       int
}

// Result is what a run reports.
type Result struct {
	Calls       int           `json:"calls"`
	CallsPerSec float64       `json:"calls_per_sec"`
	P50         time.Duration `json:"p50_ns"`
	P99         time.Duration `json:"p99_ns"`
	Errors      int           `json:"errors"`
	LastError   string        `json:"last_error,omitempty"` // the last failed call's error
}

func parse(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:50051", "the server's `address`")
	fs.IntVar(&cfg.conns, "c", 32, "goroutines calling at once")
	fs.DurationVar(&cfg.d, "d", 5*time.Second, "how long to call")
	fs.IntVar(&cfg.size, "size", 4096, "`bytes` in each request's string, echoed back")
	fs.BoolVar(&cfg.json, "json", false, "print the result as JSON")
	fs.IntVar(&cfg.streams, "streams", 0, "open this many Chat streams and send messages on them in bursts, instead of unary calls")
	fs.IntVar(&cfg.bursts, "bursts", 3, "with -streams: bursts of messages")
	fs.IntVar(&cfg.messages, "messages", 20, "with -streams: messages per stream and burst")
	fs.DurationVar(&cfg.every, "every", 20*time.Millisecond, "with -streams: time between a stream's messages in a burst")
	fs.DurationVar(&cfg.settle, "settle", time.Second, "with -streams: idle time after each burst, at whose end the server's memory is read")
	fs.IntVar(&cfg.pid, "pid", 0, "with -streams: the server's process `id`, to read its memory and CPU (0: do not)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case cfg.conns < 1 || cfg.d <= 0 || cfg.size < 0:
		err = errors.New("want -c >= 1, -d > 0 and -size >= 0")
	case cfg.streams < 0 || cfg.streams > 0 && (cfg.bursts < 1 || cfg.messages < 1 || cfg.every <= 0 || cfg.settle <= 0):
		err = errors.New("want -streams >= 0, and with streams -bursts and -messages >= 1, -every and -settle > 0")
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		fs.Usage()
	}
	return cfg, err
}

// run is the command; it returns the exit code: 2 for bad flags, 1 if
// the server could not be reached or no call succeeded.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if cfg.streams > 0 {
		return runStreams(ctx, cfg, stdout, stderr)
	}
	res, err := drive(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "load: %v\n", err)
		return 1
	}
	if cfg.json {
		b, _ := json.Marshal(res)
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprintf(stdout, "load: %d calls in %v (%.0f/s), p50 %v, p99 %v, %d errors\n",
			res.Calls, cfg.d, res.CallsPerSec, res.P50, res.P99, res.Errors)
		if res.Errors > 0 {
			fmt.Fprintf(stdout, "load: the last error: %s\n", res.LastError)
		}
	}
	return 0
}

// drive calls Say from cfg.conns goroutines for cfg.d.
func drive(ctx context.Context, cfg config) (Result, error) {
	conn, err := grpc.NewClient(cfg.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return Result{}, err
	}
	defer conn.Close()
	msg := wrapperspb.String(strings.Repeat("x", cfg.size))
	// The run ends by a flag, not by a deadline on the calls: a call
	// begun before the end finishes and counts.
	var over atomic.Bool
	t := time.AfterFunc(cfg.d, func() { over.Store(true) })
	defer t.Stop()
	lat := make([][]time.Duration, cfg.conns)
	errs := make([]int, cfg.conns)
	var last error
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for i := range cfg.conns {
		wg.Go(func() {
			for !over.Load() && ctx.Err() == nil {
				out := new(wrapperspb.StringValue)
				t0 := time.Now()
				err := conn.Invoke(ctx, "/idlemux.example.Echo/Say", msg, out)
				switch {
				case err == nil && len(out.GetValue()) == cfg.size:
					lat[i] = append(lat[i], time.Since(t0))
				case ctx.Err() != nil: // interrupted, not a failure
				default:
					errs[i]++
					mu.Lock()
					last = fmt.Errorf("call: %v (answer of %d bytes)", err, len(out.GetValue()))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	all := slices.Concat(lat...)
	var r Result
	for _, e := range errs {
		r.Errors += e
	}
	if r.Errors > 0 {
		r.LastError = last.Error()
	}
	if len(all) == 0 {
		if last == nil {
			last = errors.New("no call finished")
		}
		return r, last
	}
	slices.Sort(all)
	r.Calls = len(all)
	r.CallsPerSec = float64(len(all)) / took.Seconds()
	r.P50, r.P99 = quantile(all, 50), quantile(all, 99)
	return r, nil
}

// quantile is the q-th percentile of sorted, which is not empty.
func quantile(sorted []time.Duration, q int) time.Duration {
	return sorted[min(len(sorted)*q/100, len(sorted)-1)]
}

// runStreams is run for -streams.
func runStreams(ctx context.Context, cfg config, stdout, stderr io.Writer) int {
	res, err := streams(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "load: %v\n", err)
		return 1
	}
	if cfg.json {
		b, _ := json.Marshal(res)
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	fmt.Fprintf(stdout, "load: %d streams, %d messages echoed, round trip p50 %v, p99 %v\n",
		res.Streams, res.Messages, res.P50, res.P99)
	for i, rss := range res.Settled {
		fmt.Fprintf(stdout, "load: burst %d: the server holds %.1f MiB over its RSS before the streams, %v after the burst; CPU %v\n",
			i+1, (float64(rss)-float64(res.StartRSS))/(1<<20), cfg.settle, res.CPU[i].Round(time.Millisecond))
	}
	return 0
}
