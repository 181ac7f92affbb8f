// Command sse is a server-sent events server on net/http whose open
// streams do not keep it from returning memory between bursts:
//
//	go run ./examples/sse &
//	curl -N http://127.0.0.1:8080/events
//
// A broadcaster publishes a JSON message of about -size bytes, encoded
// afresh, to every subscriber every -every for -burst, then nothing for
// -quiet, and again. GET /events streams them, one event each, until the
// client goes. With -stepper on (the default) the route is served by
// httpidle.Streams, and each stream pauses while it waits for its next
// message: once every stream waits, the server is quiet, and the Runtime
// returns the memory the burst left to the OS, however many streams are
// open. With -stepper off it is a plain net/http server.
//
// SIGINT or SIGTERM end the streams and shut the server down, and it
// prints what it did and, with the stepper on, the Runtime's Stats.
// examples/sse/load opens streams to it and measures the delay of the
// messages and the server's memory: see README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/metrics"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/httpidle"
	"github.com/idlemux/idlemux/internal/rss"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// config is what the flags say.
type config struct {
	addr    string
	stepper bool
	streams int // how many streams to expect: a size hint, not a limit
	burst   time.Duration
	every   time.Duration
	quiet   time.Duration
	size    int
}

// parse reads the flags in args. On an error it has printed what is
// wrong and the usage to stderr.
func parse(args []string, stderr io.Writer) (config, error) {
	cfg := config{stepper: true}
	fs := flag.NewFlagSet("sse", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "`address` to listen on (host:port; port 0 picks a free one)")
	fs.Func("stepper", "`on|off`: return memory between bursts (default on)", func(s string) error {
		switch s {
		case "on", "off":
			cfg.stepper = s == "on"
			return nil
		}
		return errors.New("want on or off")
	})
	fs.IntVar(&cfg.streams, "streams", 1000, "how many streams to expect (sizes the subscriber set; not a limit)")
	fs.DurationVar(&cfg.burst, "burst", time.Second, "how long each burst of messages lasts")
	fs.DurationVar(&cfg.every, "every", 10*time.Millisecond, "time between two messages of a burst")
	fs.DurationVar(&cfg.quiet, "quiet", 5*time.Second, "time with no message after each burst")
	fs.IntVar(&cfg.size, "size", 4<<10, "approximate size of a message's JSON, in `bytes`")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var err error
	switch {
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case cfg.streams < 0:
		err = errors.New("-streams must not be negative")
	case cfg.burst <= 0 || cfg.every <= 0 || cfg.quiet < 0:
		err = errors.New("-burst and -every must be positive, -quiet not negative")
	case cfg.size < 0 || cfg.size > 1<<20:
		err = errors.New("-size must be from 0 to 1048576")
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
		fmt.Fprintf(stderr, "sse: %v\n", err)
		return 1
	}
	s := newServer(cfg)
	stepper := map[bool]string{true: "on", false: "off"}[cfg.stepper]
	fmt.Fprintf(stdout, "sse: serving on http://%v/events (stepper %s)\n", ln.Addr(), stepper)
	start := time.Now()
	code := 0
	if err := s.serve(ctx, ln); err != nil {
		fmt.Fprintf(stderr, "sse: %v\n", err)
		code = 1
	}
	fmt.Fprintln(stdout, s.summary(time.Since(start)))
	if s.rt != nil {
		fmt.Fprintf(stdout, "sse: stats: %+v\n", s.rt.Stats())
	}
	return code
}

// A server is the broadcaster and the HTTP server of its streams, with,
// when the stepper is on, the Runtime and the Work they count on.
type server struct {
	cfg  config
	rt   *gcstep.Runtime // nil with the stepper off
	work *gcstep.Work    // nil with the stepper off
	b    *broadcaster
	srv  *http.Server
}

func newServer(cfg config) *server {
	s := &server{cfg: cfg}
	if cfg.stepper {
		s.rt = gcstep.NewRuntime()
		s.work = s.rt.Work()
	}
	s.b = newBroadcaster(s.work, cfg.streams)
	var h http.Handler = events(s.b)
	if s.work != nil {
		h = httpidle.Streams(s.work, h)
	}
	mux := http.NewServeMux()
	mux.Handle("/events", h)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.srv.RegisterOnShutdown(s.b.close) // ends the streams, or Shutdown would wait for them
	return s
}

// serve publishes and serves on ln until ctx ends, then ends the streams,
// shuts the server down (for up to five seconds) and closes the Work and
// the Runtime. It returns nil after a clean shutdown.
func (s *server) serve(ctx context.Context, ln net.Listener) error {
	bctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.b.run(bctx, s.cfg.burst, s.cfg.every, s.cfg.quiet, s.cfg.size) })
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(ln) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = s.srv.Shutdown(sctx)
		cancel()
		<-errc // http.ErrServerClosed
	}
	stop()
	wg.Wait()
	s.b.close() // if Serve failed
	if s.work != nil {
		s.work.Close()
		s.rt.Close()
	}
	return err
}

// summary is the line printed at exit.
func (s *server) summary(up time.Duration) string {
	line := fmt.Sprintf("sse: %d messages in %v, %d missed by slow streams, %d GC cycles",
		s.b.published.Load(), up.Round(time.Millisecond), s.b.dropped.Load(), gcCycles())
	if peak, err := rss.Peak(); err == nil {
		line += fmt.Sprintf(", peak RSS %.1f MiB", float64(peak)/(1<<20))
	}
	if s.rt == nil {
		return line + ", stepper off"
	}
	st := s.rt.Stats()
	return line + fmt.Sprintf(", stepper on: %d releases returned %.1f MiB, costing %v of a budget of %v",
		st.Releases, float64(st.ReleasedBytes)/(1<<20), st.Charged.Round(time.Microsecond), st.Earned.Round(time.Microsecond))
}

func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
