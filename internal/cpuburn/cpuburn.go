// Package cpuburn keeps a share of one CPU busy from another process, so
// that a program can be measured on a machine it does not have to itself.
//
// The burner is the calling program started again with Env set: its main
// must call Main first thing, which turns such a process into a burner and
// returns at once in any other. A burner spins for its share of every
// Period and sleeps for the rest, on one thread (GOMAXPROCS 1); at 100 % it
// never sleeps. It exits when its standard input, a pipe from the process
// that started it, reaches end of file, so it dies with that process even
// when Stop is never called (on Linux the kernel also kills it with its
// parent thread).
package cpuburn

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Env is the environment variable that makes a process a burner; its value
// is the percentage of one CPU to keep busy.
const Env = "IDLEMUX_CPUBURN"

// Period is the length of a burner's duty cycle: it spins for its share of
// each Period and sleeps for the rest. Ten milliseconds is short against
// the runs it disturbs and long against the timer slack of a sleep.
const Period = 10 * time.Millisecond

// Main turns this process into a burner if Env is set, and never returns
// then; otherwise it returns at once. Call it first thing in main.
func Main() {
	v, ok := os.LookupEnv(Env)
	if !ok {
		return
	}
	pct, err := parsePercent(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cpuburn: %s=%q: %v\n", Env, v, err)
		os.Exit(2)
	}
	runtime.GOMAXPROCS(1)
	go func() {
		// The starter is gone, or wants us gone.
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	burn(pct, Period)
}

// burn spins for pct percent of every period and sleeps for the rest,
// forever; at 100 % it never sleeps. The Go scheduler preempts the
// spinning loop, so the goroutine watching standard input still runs.
func burn(pct int, period time.Duration) {
	busy := period * time.Duration(pct) / 100
	for {
		start := time.Now()
		for time.Since(start) < busy {
		}
		if rest := period - time.Since(start); rest > 0 {
			time.Sleep(rest)
		}
	}
}

func parsePercent(s string) (int, error) {
	pct, err := strconv.Atoi(s)
	if err != nil || pct < 0 || pct > 100 {
		return 0, errors.New("want a percentage of one CPU, 0 to 100")
	}
	return pct, nil
}

// A Burner is a running burner process, or nothing for 0 %.
type Burner struct {
	Percent int
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	start   time.Time
}

// Usage is what a burner used while it ran.
type Usage struct {
	Wall time.Duration // from Start to Stop
	CPU  time.Duration // user and system time of the burner process
}

// Share returns the CPU time used as a fraction of one CPU over the wall
// time: what the burner actually took, which can be less than asked for
// when the machine is busier still.
func (u Usage) Share() float64 {
	if u.Wall <= 0 {
		return 0
	}
	return u.CPU.Seconds() / u.Wall.Seconds()
}

// Start starts exe, a program whose main calls Main, as a burner of pct
// percent of one CPU (0 to 100), with this process's environment and no
// arguments. For 0 it starts nothing. The caller must call Stop.
func Start(exe string, pct int) (*Burner, error) {
	if _, err := parsePercent(strconv.Itoa(pct)); err != nil {
		return nil, fmt.Errorf("cpuburn: %d %%: %w", pct, err)
	}
	b := &Burner{Percent: pct, start: time.Now()}
	if pct == 0 {
		return b, nil
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), Env+"="+strconv.Itoa(pct))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = sysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("cpuburn: %w", err)
	}
	if err := cmd.Start(); err != nil {
		stdin.Close()
		return nil, fmt.Errorf("cpuburn: starting %s: %w", exe, err)
	}
	b.cmd, b.stdin = cmd, stdin
	return b, nil
}

// Pid returns the burner's process id, 0 when there is no process.
func (b *Burner) Pid() int {
	if b.cmd == nil {
		return 0
	}
	return b.cmd.Process.Pid
}

// Stop kills the burner, waits for it to be gone, and reports what it used.
// A second call does nothing and reports nothing.
func (b *Burner) Stop() (Usage, error) {
	if b.cmd == nil {
		u := Usage{}
		if !b.start.IsZero() {
			u.Wall = time.Since(b.start)
		}
		b.start = time.Time{}
		return u, nil
	}
	cmd := b.cmd
	wall := time.Since(b.start)
	b.cmd, b.start = nil, time.Time{}
	// Killed first: a burner that exits on its own, even at the end of
	// its standard input, is one that failed.
	cmd.Process.Kill()
	b.stdin.Close()
	err := cmd.Wait()
	u := Usage{Wall: wall}
	if ps := cmd.ProcessState; ps != nil {
		u.CPU = ps.UserTime() + ps.SystemTime()
		if ps.Exited() {
			// It exited on its own before being killed: it failed.
			return u, fmt.Errorf("cpuburn: the burner exited early: %v", err)
		}
	}
	return u, nil
}

// LoadAverage returns the machine's one-minute load average where the
// system publishes it (/proc/loadavg), and false elsewhere. Measurements
// print it beside a burner's share, because a machine that is already
// busy changes what a busy core means.
func LoadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}
