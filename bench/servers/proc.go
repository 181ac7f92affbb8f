package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/internal/procfs"
)

// sample is one RSS reading, at T after the sampler started.
type sample struct {
	T   time.Duration `json:"t_ns"`
	RSS uint64        `json:"rss"`
}

// sampler reads a process's VmRSS on a ticker until stopped.
type sampler struct {
	pid   int
	start time.Time
	stop  chan struct{}
	done  chan struct{}

	mu      sync.Mutex
	samples []sample
}

// startSampler samples pid's RSS every period, starting now.
func startSampler(pid int, period time.Duration) *sampler {
	s := &sampler{pid: pid, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run(period)
	return s
}

func (s *sampler) run(period time.Duration) {
	defer close(s.done)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		s.take()
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// take records one sample now and returns it; a process that has gone
// records nothing.
func (s *sampler) take() (sample, bool) {
	st, err := procfs.Status(s.pid)
	if err != nil {
		return sample{}, false
	}
	x := sample{T: time.Since(s.start), RSS: st.RSS}
	s.mu.Lock()
	s.samples = append(s.samples, x)
	s.mu.Unlock()
	return x, true
}

// peakOf is a server's peak RSS: the higher of its VmHWM and the highest
// of the samples. The kernel updates VmHWM only when it is about to lower
// the RSS, from per-CPU counters it sums approximately for that, so a
// process whose RSS fell after its peak can read a VmHWM a few hundred
// KiB below the VmRSS it had then; the samples catch what it missed, up to
// their period.
func peakOf(hwm uint64, samples []sample) uint64 {
	for _, x := range samples {
		hwm = max(hwm, x.RSS)
	}
	return hwm
}

// now is the time since the sampler started, on its clock.
func (s *sampler) now() time.Duration { return time.Since(s.start) }

// finish stops the sampler and returns its samples.
func (s *sampler) finish() []sample {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples
}

// readSwitches returns the context switches, voluntary and not, of every
// thread of process pid (the voluntary_ctxt_switches and
// nonvoluntary_ctxt_switches lines of /proc/PID/task/*/status): a thread
// that blocks, or is preempted, to let another run.
func readSwitches(pid int) (uint64, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("no threads of process %d", pid)
	}
	var n uint64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread exited
		}
		n += parseSwitches(b)
	}
	return n, nil
}

// parseSwitches sums the two context-switch lines of a status file.
func parseSwitches(b []byte) uint64 {
	var n uint64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if ok && (name == "voluntary_ctxt_switches" || name == "nonvoluntary_ctxt_switches") {
			v, _ := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
			n += v
		}
	}
	return n
}

// clientCPU returns the CPU time of this process and of its waited-for
// children: taken before and after a load run, the difference is the load
// generator's CPU (redis-benchmark's, a child that exits within the run,
// or the Go generator's, which runs in this process).
func clientCPU() time.Duration {
	var self, kids unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &self)
	unix.Getrusage(unix.RUSAGE_CHILDREN, &kids)
	tv := func(t unix.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}
