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
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A config is one way to run the server.
type config struct {
	Name    string // on, off, gogc=N
	Stepper bool
	GOGC    string // "" for the default
}

// parseConfig reads on, off or gogc=N (the server with the stepper off
// and GOGC=N), each optionally followed by .K: a second copy of the same
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
	case strings.HasPrefix(s, "gogc="):
		v := strings.TrimPrefix(s, "gogc=")
		var n int
		if _, err := fmt.Sscanf(v, "%d", &n); err != nil || n <= 0 || fmt.Sprint(n) != v {
			return config{}, fmt.Errorf("bad configuration %q: want gogc=N with N > 0", s)
		}
		return config{Name: s, GOGC: v}, nil
	}
	return config{}, fmt.Errorf("bad configuration %q: want on, off or gogc=N", s)
}

// server is a running examples/web process.
type server struct {
	cmd     *exec.Cmd
	pid     int
	url     string
	summary chan string // the line it prints at exit
	client  *http.Client
}

// startServer starts bin with cfg on a free loopback port and waits for it
// to say where it serves.
func startServer(ctx context.Context, bin string, cfg config) (*server, error) {
	stepper := "off"
	if cfg.Stepper {
		stepper = "on"
	}
	cmd := exec.CommandContext(ctx, bin, "-addr", "127.0.0.1:0", "-stepper", stepper)
	env := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOGC=") {
			env = append(env, e)
		}
	}
	if cfg.GOGC != "" {
		env = append(env, "GOGC="+cfg.GOGC)
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
		addr, found := strings.CutPrefix(line, "web: serving on ")
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
