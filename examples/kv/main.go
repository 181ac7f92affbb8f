// Command kv is a Redis-protocol key-value server on package netloop:
// PING, ECHO, SET, GET, DEL, DBSIZE, CONFIG GET, COMMAND and QUIT, inline
// or multibulk, pipelined. It works with redis-cli and redis-benchmark:
//
//	go run ./examples/kv &
//	redis-benchmark -p 6380 -t set,get -n 100000 -c 50 -q
//
// It runs netloop's default number of loops, one per four Ps and at least
// one (netloop.WithLoops says why); -loops N asks for N, which pays only on
// cores the clients leave free.
//
// -stepper off serves without the idle stepper; -baseline tuner or freeos
// then adds what services do by hand instead (a GOGC tuner, or
// debug.FreeOSMemory on a timer), for comparisons such as bench/web's day.
//
// It prints where it serves as its first line on stdout. SIGINT or SIGTERM
// shut it down gracefully (connections finish writing their replies, for
// up to five seconds) and it prints a one-line summary.
// The command code is package resp's; this file is the server.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/examples/kv/resp"
	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/internal/gcbaseline"
	"github.com/idlemux/idlemux/netloop"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6380", "`address` to listen on (host:port)")
	loops := flag.Int("loops", netloop.DefaultLoops(), "`number` of event loops; the default, netloop's, is one per four Ps and at least one:\n"+
		"each loop sleeps and wakes on its own, so loops the load does not keep busy cost\n"+
		"wakeups and context switches; more pay only on cores the clients leave free\n"+
		fmt.Sprintf("(GOMAXPROCS is %d here)", runtime.GOMAXPROCS(0)))
	stepper := flag.String("stepper", "on", "collect garbage while the loops are idle: on or off")
	reusePort := flag.Bool("reuseport", false, "one listening socket per loop (SO_REUSEPORT) instead of one shared")
	baseline := flag.String("baseline", "none", "`"+gcbaseline.Names+"`: with -stepper off, what a service does by hand instead:\n"+
		"a GOGC tuner or debug.FreeOSMemory on a timer")
	flag.Parse()
	switch {
	case *stepper != "on" && *stepper != "off":
		usage("-stepper: want on or off")
	case *loops < 1:
		usage("-loops: want at least 1")
	case !gcbaseline.Valid(*baseline):
		usage("-baseline: want " + gcbaseline.Names)
	case *stepper == "on" && *baseline != "none":
		usage("-baseline needs -stepper off")
	case flag.NArg() > 0:
		usage(fmt.Sprintf("unexpected argument %q", flag.Arg(0)))
	}
	var rt *gcstep.Runtime
	if *stepper == "on" {
		rt = gcstep.NewRuntime()
	}
	stopBaseline, err := gcbaseline.Start(*baseline)
	if err != nil {
		log.Fatal(err)
	}
	defer stopBaseline()
	var store resp.Store
	srv, err := netloop.Listen("tcp", *addr, netloop.HandlerFuncs{Data: func(c *netloop.Conn) {
		var n int
		var quit bool
		c.AppendOutput(func(out []byte) []byte {
			out, n, quit = store.Serve(out, c.Peek(), netloop.DefaultWriteLimit)
			return out
		})
		c.Discard(n)
		if quit {
			c.Close()
		}
	}}, netloop.WithLoops(*loops), netloop.WithStepper(stepperOrNil(rt)), netloop.WithReusePort(*reusePort),
		netloop.WithAcceptErrorFunc(func(err error) { log.Print(err) }))
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			log.Printf("shutdown: %v", err)
		}
	}()
	if *baseline != "none" {
		*stepper += ", " + *baseline
	}
	fmt.Printf("kv: serving on %v with %d loops, stepper %s\n", srv.Addr(), *loops, *stepper)
	if err := srv.Serve(); err != nil {
		log.Fatal(err)
	}
	st := srv.Stats()
	summary := fmt.Sprintf("kv: %d connections, %d requests", st.Accepted, store.Commands())
	if rt != nil {
		gs := rt.Stats()
		summary += fmt.Sprintf(", stepper: %d cycles, %d releases, %v stepping, %d looks declined for the budget",
			gs.CyclesInline, gs.Releases, gs.StepTime.Round(time.Millisecond), gs.DeclinedBudget)
	}
	fmt.Println(summary)
}

// usage reports a bad command line and exits with status 2.
func usage(msg string) {
	fmt.Fprintln(os.Stderr, msg)
	flag.Usage()
	os.Exit(2)
}

// stepperOrNil keeps a nil *gcstep.Runtime from becoming a non-nil
// interface holding nil.
func stepperOrNil(rt *gcstep.Runtime) gcstep.Stepper {
	if rt == nil {
		return nil
	}
	return rt
}
