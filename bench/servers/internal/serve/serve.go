// Package serve is what the comparison's servers share besides their
// network code: the command line, the handshake with the driver, and the
// statistics printed on exit.
//
// A server is started as
//
//	SERVER -addr 127.0.0.1:PORT -loops N [its own flags]
//
// prints "ready" on stdout once it accepts connections, serves until SIGTERM
// or SIGINT, and then prints one line
//
//	stats gc-cycles=N commands=N loops=N [key=value ...]
//
// and exits with status 0. The driver reads both lines.
package serve

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/metrics"
	"strings"
	"syscall"

	"github.com/idlemux/idlemux/examples/kv/resp"
)

// Config is the command line every server takes.
type Config struct {
	Addr  string // host:port to listen on
	Loops int    // event loops (pollers); 0 means the library's default
	// CopyValues is -copy-values: the store copies every SET's value
	// into new memory (resp.Store.CopyValues), which makes garbage.
	CopyValues bool
}

// Store returns the command code's store, as -copy-values asks.
func (c Config) Store() *resp.Store { return &resp.Store{CopyValues: c.CopyValues} }

// Parse registers -addr and -loops beside any flags the server defined
// already, parses the command line and returns the result.
func Parse() Config {
	var c Config
	flag.StringVar(&c.Addr, "addr", "127.0.0.1:6380", "address to listen on")
	flag.IntVar(&c.Loops, "loops", 0, "event loops; 0 = the library's default")
	flag.BoolVar(&c.CopyValues, "copy-values", false, "copy every SET's value into new memory (makes garbage)")
	flag.Parse()
	if c.Loops < 0 {
		Fatalf("-loops %d: want 0 or more", c.Loops)
	}
	return c
}

// Ready tells the driver that the server accepts connections.
func Ready() { fmt.Println("ready") }

// Wait blocks until SIGTERM or SIGINT.
func Wait() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	<-ch
	signal.Stop(ch)
}

// ReplyLimit is how many bytes of replies a server that can stop reading a
// connection lets build up before it stops executing that connection's
// commands (resp.Store.Serve's limit), so a client that does not read
// cannot grow the server's memory without bound.
const ReplyLimit = 256 << 10

// Exit prints the stats line, with the process's GC cycle count, the
// commands the server executed and the event loops it ran first and extra
// ("key=value", no spaces) after them, and exits with status 0.
func Exit(commands uint64, loops int, extra ...string) {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	fields := append([]string{fmt.Sprintf("gc-cycles=%d", s[0].Value.Uint64()),
		fmt.Sprintf("commands=%d", commands), fmt.Sprintf("loops=%d", loops)}, extra...)
	fmt.Println("stats " + strings.Join(fields, " "))
	os.Exit(0)
}

// Fatalf reports a server that cannot start and exits with status 1.
func Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
