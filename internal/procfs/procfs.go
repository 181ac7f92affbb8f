// Package procfs reads what the benchmark drivers need of another
// process from Linux's /proc: its resident memory and its CPU time. The
// drivers (bench/web, bench/servers) start a server as a child process and
// measure it from outside, one reading per burst or sample.
package procfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat. The
// kernel has exported 100 to user space on every architecture Go supports
// since Linux 2.6, whatever its internal HZ.
const clockTicks = 100

// Mem is what /proc/PID/status says of a process's resident memory.
type Mem struct {
	RSS  uint64 // VmRSS, bytes
	Peak uint64 // VmHWM, bytes
}

// Status reads VmRSS and VmHWM of process pid.
func Status(pid int) (Mem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Mem{}, err
	}
	return ParseStatus(b)
}

// ParseStatus parses the VmRSS and VmHWM lines of a /proc/PID/status file;
// both must be there (the kernel prints them for every process with an
// address space).
func ParseStatus(b []byte) (Mem, error) {
	var st Mem
	var haveRSS, havePeak bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return Mem{}, fmt.Errorf("status: bad %s line %q", name, sc.Text())
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return Mem{}, fmt.Errorf("status: bad %s line %q: %w", name, sc.Text(), err)
		}
		if name == "VmRSS" {
			st.RSS, haveRSS = kb<<10, true
		} else {
			st.Peak, havePeak = kb<<10, true
		}
	}
	if !haveRSS || !havePeak {
		return Mem{}, fmt.Errorf("status: VmRSS or VmHWM missing")
	}
	return st, nil
}

// CPU returns the user plus system CPU time process pid has used.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return ParseStat(b)
}

// ParseStat returns utime+stime from a /proc/PID/stat line. The command name
// (field 2) is in parentheses and may hold spaces or parentheses itself, so
// the fields are counted from the last ')'.
func ParseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the command name, want at least 13", len(f))
	}
	var ticks uint64
	for _, s := range f[11:13] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("stat: %w", err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
