// Command web is a small JSON API on net/http with idle garbage
// collection through package httpidle:
//
//	go run ./examples/web &
//	curl 'http://127.0.0.1:8080/items?n=3'
//
// GET /items?n=N returns a JSON array of N generated records (an id, a
// name, a few tags), encoded with encoding/json: the allocation a real
// listing handler makes. GET /stats reports what the collector and the
// stepper did (cycles, releases), for benchmarks. With -stepper on (the
// default) the requests are counted on a gcstep.Work, and the Runtime
// empties the gap after each burst, as far as its CPU budget pays for it;
// GET /debug/vars then serves expvar's variables, among them "gcstep",
// all of the stepper's Stats (gcstep.Runtime.Var). With -stepper off it
// is a plain net/http server; -baseline tuner or freeos adds what services
// do by hand instead (a GOGC tuner with a 64 MiB threshold, as bytedance's
// gctuner; debug.FreeOSMemory every 10 s), for bench/web's day schedule.
// -budget sets the stepper's budget (gcstep.WithBudget), such as 0.1.
//
// SIGINT or SIGTERM shut it down gracefully (requests in flight finish,
// for up to five seconds) and it prints a one-line summary.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gcstep/gcstepvar"
	"github.com/idlemux/idlemux/httpidle"
	"github.com/idlemux/idlemux/internal/gcbaseline"
	"github.com/idlemux/idlemux/internal/rss"
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
	baseline string  // gcbaseline's name; "none" with the stepper on
	budget   float64 // the stepper's gcstep.WithBudget; 0: the default
}

// parse reads the flags in args. On an error it has printed what is
// wrong and the usage to stderr.
func parse(args []string, stderr io.Writer) (config, error) {
	cfg := config{stepper: true, baseline: "none"}
	fs := flag.NewFlagSet("web", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "`address` to listen on (host:port; port 0 picks a free one)")
	fs.Func("stepper", "`on|off`: empty the gaps between bursts (default on)", func(s string) error {
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
	fs.Func("budget", "`share` of the program's CPU the stepper may spend (gcstep.WithBudget), in (0, 1], such as 0.1 (default the Runtime's, 0.03)", func(s string) error {
		b, err := strconv.ParseFloat(s, 64)
		if err != nil || !(b > 0 && b <= 1) {
			return errors.New("want a share of the CPU in (0, 1]")
		}
		cfg.budget = b
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
	case !cfg.stepper && cfg.budget != 0:
		err = errors.New("-budget needs -stepper on")
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
		fmt.Fprintf(stderr, "web: %v\n", err)
		return 1
	}
	var served atomic.Uint64
	var rt *gcstep.Runtime
	var work *gcstep.Work
	if cfg.stepper {
		var opts []gcstep.Option
		if cfg.budget != 0 {
			opts = append(opts, gcstep.WithBudget(cfg.budget))
		}
		rt = gcstep.NewRuntime(opts...)
	}
	stopBaseline, err := gcbaseline.Start(cfg.baseline)
	if err != nil {
		fmt.Fprintf(stderr, "web: %v\n", err)
		return 2
	}
	defer stopBaseline()
	mux := newMux(&served, rt)
	h := http.Handler(mux)
	if rt != nil {
		publish(rt)
		mux.Handle("GET /debug/vars", expvar.Handler())
		work = rt.Work()
		h = httpidle.Handler(work, h)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	start := time.Now()
	stepper := map[bool]string{true: "on", false: "off"}[cfg.stepper]
	if cfg.baseline != "none" {
		stepper += ", " + cfg.baseline
	}
	fmt.Fprintf(stdout, "web: serving on http://%v (stepper %s)\n", ln.Addr(), stepper)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	code := 0
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "web: %v\n", err)
		code = 1
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := srv.Shutdown(sctx); err != nil {
			fmt.Fprintf(stderr, "web: shutdown: %v\n", err)
			code = 1
		}
		cancel()
		<-errc // http.ErrServerClosed
	}
	if work != nil {
		work.Close()
		rt.Close()
	}
	fmt.Fprintln(stdout, summary(served.Load(), time.Since(start), rt))
	return code
}

// published is the Runtime whose Stats /debug/vars shows as "gcstep".
// A program publishes gcstepvar.New(rt) once, in main; but expvar's names are
// process-wide (a second Publish of one panics) and the tests call run
// more than once in a process, so the name is published once, over
// whichever Runtime run serves with.
var published struct {
	once sync.Once
	rt   atomic.Pointer[gcstep.Runtime]
}

// publish shows rt's Stats at /debug/vars as "gcstep".
func publish(rt *gcstep.Runtime) {
	published.rt.Store(rt)
	published.once.Do(func() {
		expvar.Publish("gcstep", expvar.Func(func() any {
			return json.RawMessage(gcstepvar.New(published.rt.Load()).String())
		}))
	})
}

// summary is the line printed at exit.
func summary(served uint64, up time.Duration, rt *gcstep.Runtime) string {
	s := fmt.Sprintf("web: %d requests in %v, %d GC cycles", served, up.Round(time.Millisecond), gcCycles())
	if peak, err := rss.Peak(); err == nil {
		s += fmt.Sprintf(", peak RSS %.1f MiB", float64(peak)/(1<<20))
	}
	if rt == nil {
		return s + ", stepper off"
	}
	st := rt.Stats()
	return s + fmt.Sprintf(", stepper on: %d releases returned %.1f MiB, costing %v of a budget of %v",
		st.Releases, float64(st.ReleasedBytes)/(1<<20), st.Charged.Round(time.Microsecond), st.Earned.Round(time.Microsecond))
}

func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
