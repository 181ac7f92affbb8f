package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A config is one way to run the server.
type config struct {
	Name     string // on, off, budget=N, gogc=N, memlimit=N, tuner, freeos
	Stepper  bool
	Budget   string // the stepper's -budget, a share of the CPU; "" for the default
	GOGC     string // "" for the default
	MemLimit string // GOMEMLIMIT; "" for none
	Baseline string // the server's -baseline; "" for none
	Procs    int    // the server's GOMAXPROCS; 0 for the runtime's default
}

// parseConfig reads on, off, budget=N (the stepper on, its budget N % of
// the program's CPU: examples/web's -budget), gogc=N (the server with the stepper off
// and GOGC=N), memlimit=N (off, GOMEMLIMIT=N MiB), tuner or freeos (off,
// with a GOGC tuner or debug.FreeOSMemory on a timer: the server's
// -baseline), each optionally followed by .K: a second copy of the same
// configuration, run as a configuration of its own, to show the noise
// between two identical servers (off against off.2).
func parseConfig(s string) (config, error) {
	if base, k, ok := strings.Cut(s, "."); ok {
		c, err := parseConfig(base)
		var n int
		if _, serr := fmt.Sscanf(k, "%d", &n); err != nil || serr != nil || n < 2 || fmt.Sprint(n) != k {
			return config{}, fmt.Errorf("bad configuration %q: want a configuration and .K with K >= 2", s)
		}
		c.Name = s
		return c, nil
	}
	switch {
	case s == "on" || s == "off":
		return config{Name: s, Stepper: s == "on"}, nil
	case strings.HasPrefix(s, "budget="):
		n, ok := positive(strings.TrimPrefix(s, "budget="))
		if !ok || n > 100 {
			return config{}, fmt.Errorf("bad configuration %q: want budget=N with N in 1..100 (percent)", s)
		}
		return config{Name: s, Stepper: true, Budget: strconv.FormatFloat(float64(n)/100, 'g', -1, 64)}, nil
	case strings.HasPrefix(s, "gogc="):
		v := strings.TrimPrefix(s, "gogc=")
		if _, ok := positive(v); !ok {
			return config{}, fmt.Errorf("bad configuration %q: want gogc=N with N > 0", s)
		}
		return config{Name: s, GOGC: v}, nil
	case strings.HasPrefix(s, "memlimit="):
		v := strings.TrimPrefix(s, "memlimit=")
		if _, ok := positive(v); !ok {
			return config{}, fmt.Errorf("bad configuration %q: want memlimit=N with N > 0 (MiB)", s)
		}
		return config{Name: s, MemLimit: v + "MiB"}, nil
	case s == "tuner" || s == "freeos":
		return config{Name: s, Baseline: s}, nil
	}
	return config{}, fmt.Errorf("bad configuration %q: want on, off, budget=N, gogc=N, memlimit=N, tuner or freeos", s)
}

// positive reads v as a positive integer written plainly (no sign, no
// leading zero, nothing after it).
func positive(v string) (int, bool) {
	var n int
	if _, err := fmt.Sscanf(v, "%d", &n); err != nil || n <= 0 || fmt.Sprint(n) != v {
		return 0, false
	}
	return n, true
}

// A target is a server program and the client that loads it.
type target struct {
	Name  string
	ready string // the prefix of its first line, before its address
	// load drives the server at addr with conns clients for d.
	load func(ctx context.Context, addr string, conns int, d time.Duration) (wrkResult, error)
}

// server is a running examples/web process.
type server struct {
	cmd     *exec.Cmd
	pid     int
	url     string
	summary chan string // the line it prints at exit
	client  *http.Client
}

// startServer starts bin, a server of t, with cfg on a free loopback port
// and waits for it to say where it serves.
func startServer(ctx context.Context, t target, bin string, cfg config) (*server, error) {
	stepper := "off"
	if cfg.Stepper {
		stepper = "on"
	}
	args := []string{"-addr", "127.0.0.1:0", "-stepper", stepper}
	if cfg.Baseline != "" {
		args = append(args, "-baseline", cfg.Baseline)
	}
	if cfg.Budget != "" {
		if t.Name != "web" {
			return nil, fmt.Errorf("%s: only examples/web takes a budget (%s)", t.Name, cfg.Name)
		}
		args = append(args, "-budget", cfg.Budget)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	env := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOGC=") && !strings.HasPrefix(e, "GOMEMLIMIT=") && !strings.HasPrefix(e, "GOMAXPROCS=") {
			env = append(env, e)
		}
	}
	if cfg.GOGC != "" {
		env = append(env, "GOGC="+cfg.GOGC)
	}
	if cfg.MemLimit != "" {
		env = append(env, "GOMEMLIMIT="+cfg.MemLimit)
	}
	if cfg.Procs > 0 {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(cfg.Procs))
	}
	cmd.Env = env
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, pid: cmd.Process.Pid, summary: make(chan string, 1),
		client: &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}}
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var last string
		for n := 0; sc.Scan(); n++ {
			if n == 0 {
				first <- sc.Text()
			}
			last = sc.Text()
		}
		close(first)
		s.summary <- last
	}()
	select {
	case line, ok := <-first:
		addr, found := strings.CutPrefix(line, t.ready)
		if !ok || !found {
			s.stop()
			return nil, fmt.Errorf("server: first line %q", line)
		}
		s.url, _, _ = strings.Cut(addr, " ")
	case <-time.After(10 * time.Second):
		s.stop()
		return nil, fmt.Errorf("server: not serving after 10 s")
	}
	return s, nil
}

// webStats is examples/web's GET /stats.
type webStats struct {
	GCCycles     uint64 `json:"gc_cycles"`
	Releases     uint64 `json:"releases"`
	CyclesInline uint64 `json:"cycles_inline"`
}

func (s *server) stats() (webStats, error) {
	var st webStats
	resp, err := s.client.Get(s.url + "/stats")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, err
	}
	io.Copy(io.Discard, resp.Body)
	return st, nil
}

// stop sends SIGTERM, waits for the process to print its summary and
// exit, and returns the summary.
func (s *server) stop() string {
	s.client.CloseIdleConnections()
	s.cmd.Process.Signal(unix.SIGTERM)
	var line string
	select {
	case line = <-s.summary: // its stdout is closed: it has exited, or is about to
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		line = <-s.summary
	}
	s.cmd.Wait()
	return line
}
