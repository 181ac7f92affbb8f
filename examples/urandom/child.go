package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// childEnv marks a child process, one run of one mode; its value is the
// label the child's progress display shows, such as "idle 2/5".
const childEnv = "IDLEMUX_URANDOM_CHILD"

// runChild is the child's side: measure the one mode c names, in this
// process, and report the result as one JSON line on stdout.
func runChild(c config, label string, stdout io.Writer) error {
	if len(c.modes) != 1 {
		return fmt.Errorf("a child runs one mode, got %q", joinModes(c.modes))
	}
	r, err := measure(job{mode: c.modes[0], length: c.length, readers: c.readers, chunk: c.chunk, budget: c.budget},
		progressOutput(), label)
	if err != nil {
		return err
	}
	r.GOGC = c.gogc
	r.GOMAXPROCS = runtime.GOMAXPROCS(0)
	return writeJSONLine(stdout, r)
}

// spawn runs one mode in a child process of exe (this program) with GOGC
// and GOMAXPROCS (procs) set, and returns its result. The child's standard error is ours, for its
// progress display and its error message.
func spawn(exe string, c config, m mode, procs int, label string, stderr io.Writer) (result, error) {
	args := []string{
		"-mode", string(m),
		"-len", strconv.FormatInt(c.length, 10),
		"-readers", strconv.Itoa(c.readers),
		"-chunk", strconv.Itoa(c.chunk),
		"-gogc", c.gogc,
		"-budget", strconv.FormatFloat(c.budget, 'g', -1, 64),
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = childEnviron(os.Environ(), c.gogc, procs, label)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%s run: %w", label, err)
	}
	var r result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return result{}, fmt.Errorf("%s run: reading its result %q: %w", label, out.String(), err)
	}
	if r.Mode != m || r.GOMAXPROCS != procs {
		return result{}, fmt.Errorf("%s run: reported mode %q with GOMAXPROCS %d", label, r.Mode, r.GOMAXPROCS)
	}
	return r, nil
}

// childEnviron is env with GOGC and GOMAXPROCS replaced and the child
// marker added.
func childEnviron(env []string, gogc string, procs int, label string) []string {
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOGC=") || strings.HasPrefix(kv, "GOMAXPROCS=") || strings.HasPrefix(kv, childEnv+"=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GOGC="+gogc, "GOMAXPROCS="+strconv.Itoa(procs), childEnv+"="+label)
}
