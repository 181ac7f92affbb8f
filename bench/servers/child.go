package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// server is one server configuration the driver can start.
type server struct {
	Name  string   // as reported, e.g. "netloop-step"
	Bin   string   // the package under srv/ that serves it
	Args  []string // flags beside -addr and -loops
	Loops int      // -loops; 0 is the library's default
	Pin   string   // CPUs to run on (taskset -c), "" for any
}

// servers are all the configurations, in the report's order. The libraries'
// defaults differ: netloop one loop per four Ps and nbio one poller per four
// cores (at least one each), gnet (multicore) a loop per core; so netloop
// also runs with two loops and with one, and gnet with one.
var servers = []server{
	{Name: "netloop-step", Bin: "netloop", Args: []string{"-stepper=true"}},
	{Name: "netloop-step-1", Bin: "netloop", Args: []string{"-stepper=true"}, Loops: 1},
	{Name: "netloop-step-2", Bin: "netloop", Args: []string{"-stepper=true"}, Loops: 2},
	{Name: "netloop", Bin: "netloop", Args: []string{"-stepper=false"}},
	{Name: "netloop-1", Bin: "netloop", Args: []string{"-stepper=false"}, Loops: 1},
	{Name: "netloop-2", Bin: "netloop", Args: []string{"-stepper=false"}, Loops: 2},
	{Name: "netloop-reuseport", Bin: "netloop", Args: []string{"-stepper=false", "-reuseport"}},
	{Name: "netloop-thread", Bin: "netloop", Args: []string{"-stepper=false", "-netpoller=false"}},
	{Name: "netloop-parked", Bin: "netloop", Args: []string{"-stepper=false", "-netpoller=true"}},
	{Name: "netloop-parked-1", Bin: "netloop", Args: []string{"-stepper=false", "-netpoller=true"}, Loops: 1},
	{Name: "gnet", Bin: "gnet"},
	{Name: "gnet-1", Bin: "gnet", Loops: 1},
	{Name: "nbio", Bin: "nbio"},
	{Name: "net", Bin: "stdnet"},
}

// findServer returns the configuration called name.
func findServer(name string) (server, bool) {
	for _, s := range servers {
		if s.Name == name {
			return s, true
		}
	}
	return server{}, false
}

// modulePath is this module's path; the servers are built from its srv/.
const modulePath = "github.com/idlemux/idlemux/bench/servers"

// buildServers builds the binaries of srvs into dir, with the go command on
// PATH; the working directory must be inside this module.
func buildServers(dir string, srvs []server) error {
	seen := map[string]bool{}
	for _, s := range srvs {
		if seen[s.Bin] {
			continue
		}
		seen[s.Bin] = true
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, s.Bin), modulePath+"/srv/"+s.Bin)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s (run the driver from bench/servers): %w\n%s", s.Bin, err, out)
		}
	}
	return nil
}

// child is a running server process.
type child struct {
	srv   server
	cmd   *exec.Cmd
	Addr  string
	ready chan error
	done  chan struct{}     // closed when stdout is drained
	stats map[string]string // the server's "stats" line, read at exit
}

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startServer starts s from binDir with loops event loops (0: s.Loops)
// and the flags extra, and waits until it serves PING.
func startServer(binDir string, s server, loops int, extra ...string) (*child, error) {
	if loops == 0 {
		loops = s.Loops
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := slices.Concat([]string{"-addr", addr, "-loops", strconv.Itoa(loops)}, s.Args, extra)
	cmd := exec.Command(filepath.Join(binDir, s.Bin), args...)
	if s.Pin != "" {
		// taskset execs the server: the pid stays the server's.
		cmd = exec.Command("taskset", slices.Concat([]string{"-c", s.Pin, filepath.Join(binDir, s.Bin)}, args)...)
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	c := &child{srv: s, cmd: cmd, Addr: addr, ready: make(chan error, 1), done: make(chan struct{}), stats: map[string]string{}}
	go c.readOutput(out)
	select {
	case err = <-c.ready:
	case <-time.After(10 * time.Second):
		err = errors.New("not ready after 10s")
	}
	if err == nil {
		err = ping(addr)
	}
	if err != nil {
		c.cmd.Process.Kill()
		c.cmd.Wait()
		return nil, fmt.Errorf("server %s: %w", s.Name, err)
	}
	return c, nil
}

// readOutput reads the server's stdout: "ready" once it listens, "stats
// k=v ..." as it exits; anything else is passed on to stderr.
func (c *child) readOutput(r io.Reader) {
	defer close(c.done)
	sc := bufio.NewScanner(r)
	ready := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "ready" && !ready:
			ready = true
			c.ready <- nil
		case strings.HasPrefix(line, "stats "):
			for _, kv := range strings.Fields(line)[1:] {
				k, v, _ := strings.Cut(kv, "=")
				c.stats[k] = v
			}
		default:
			fmt.Fprintf(os.Stderr, "%s: %s\n", c.srv.Name, line)
		}
	}
	if !ready {
		c.ready <- errors.New("exited before it was ready")
	}
}

// Pid is the server's process id.
func (c *child) Pid() int { return c.cmd.Process.Pid }

// stop asks the server to exit (SIGTERM), waits for it and returns its
// stats line. A server that does not exit within 10 s is killed and that is
// an error.
func (c *child) stop() (map[string]string, error) {
	c.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() {
		<-c.done
		exited <- c.cmd.Wait()
	}()
	select {
	case err := <-exited:
		if err != nil {
			return c.stats, fmt.Errorf("server %s: %w", c.srv.Name, err)
		}
		if _, ok := c.stats["gc-cycles"]; !ok {
			return c.stats, fmt.Errorf("server %s printed no gc-cycles on exit", c.srv.Name)
		}
		return c.stats, nil
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-exited
		return c.stats, fmt.Errorf("server %s did not exit within 10s of SIGTERM", c.srv.Name)
	}
}

// ping sends PING on a fresh connection and waits for +PONG, retrying for a
// second while the server comes up.
func ping(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		last = pingOnce(ctx, addr)
		if last == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("ping: %w", last)
}

func pingOnce(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write(appendCommand(nil, "PING")); err != nil {
		return err
	}
	rep, err := readReply(bufio.NewReader(c), true)
	if err != nil {
		return err
	}
	if rep.Kind != '+' || rep.Line != "PONG" {
		return fmt.Errorf("PING answered %q %q", rep.Kind, rep.Line)
	}
	return nil
}
