package rss

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// Peak returns the peak resident set size of this process, in bytes.
//
// The peak covers the whole life of the process, so comparing two workloads
// needs two processes.
func Peak() (uint64, error) { return peak() }

// Current returns the resident set size of this process now, in bytes.
//
// Where the system offers no cheap way to read it (everywhere but Linux),
// Current returns an error that matches errors.ErrUnsupported.
func Current() (uint64, error) { return current() }

// status holds the fields of /proc/self/status this package reads.
type status struct {
	hwm uint64 // VmHWM: peak resident set size, bytes
	rss uint64 // VmRSS: current resident set size, bytes
}

// parseStatus reads the VmHWM and VmRSS lines of a Linux /proc/<pid>/status
// file. Both must be present: the kernel prints them for every process that
// has an address space, so a missing one means the wrong file.
func parseStatus(r io.Reader) (status, error) {
	var st status
	var haveHWM, haveRSS bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Bytes()
		var dst *uint64
		switch {
		case bytes.HasPrefix(line, []byte("VmHWM:")):
			dst, haveHWM = &st.hwm, true
		case bytes.HasPrefix(line, []byte("VmRSS:")):
			dst, haveRSS = &st.rss, true
		default:
			continue
		}
		v, err := parseKB(line)
		if err != nil {
			return status{}, err
		}
		*dst = v
	}
	if err := sc.Err(); err != nil {
		return status{}, fmt.Errorf("rss: reading status: %w", err)
	}
	if !haveHWM || !haveRSS {
		return status{}, fmt.Errorf("rss: status has no VmHWM or VmRSS line")
	}
	return st, nil
}

// parseKB parses a status line such as "VmRSS:	    1760 kB" into bytes.
// The kernel always prints these fields in kB (1024 bytes).
func parseKB(line []byte) (uint64, error) {
	_, rest, _ := bytes.Cut(line, []byte(":"))
	fields := bytes.Fields(rest)
	if len(fields) != 2 || string(fields[1]) != "kB" {
		return 0, fmt.Errorf("rss: malformed status line %q", line)
	}
	kb, err := strconv.ParseUint(string(fields[0]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("rss: malformed status line %q: %w", line, err)
	}
	return kb * 1024, nil
}
