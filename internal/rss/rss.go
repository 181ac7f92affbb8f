package rss

import (
	"bytes"
	"fmt"
	"math"
)

// Peak returns the peak resident set size of this process, in bytes.
//
// The peak covers the whole life of the process, so comparing two workloads
// needs two processes. On Linux it is VmHWM, which the kernel updates only
// when it is about to lower the RSS, from counters it keeps per CPU and
// sums approximately for that: a process whose RSS fell after its peak may
// read a peak a few hundred KiB below the VmRSS (Current) it had then.
// Sampling Current as well, and taking the higher, reads it closer.
func Peak() (uint64, error) { return peak() }

// Current returns the resident set size of this process now, in bytes.
//
// Where the system offers no cheap way to read it (everywhere but Linux),
// Current returns an error that matches errors.ErrUnsupported.
func Current() (uint64, error) { return current() }

// Split returns how much of this process's resident set is anonymous
// memory and how much is file-backed (the binary's and the libraries'
// pages), in bytes: RssAnon and RssFile. Where the system does not say
// (everywhere but Linux 4.5 and later), Split returns an error that
// matches errors.ErrUnsupported.
func Split() (anon, file uint64, err error) { return split() }

// status holds the fields of /proc/self/status this package reads.
type status struct {
	hwm uint64 // VmHWM: peak resident set size, bytes
	rss uint64 // VmRSS: current resident set size, bytes
	// RssAnon and RssFile, bytes, where split says the kernel printed
	// both (Linux 4.5 and later).
	anon, file uint64
	split      bool
}

// parseStatus reads the VmHWM and VmRSS lines of a Linux /proc/<pid>/status
// file, and the RssAnon and RssFile lines if it has them. VmHWM and VmRSS
// must be present: the kernel prints them for every process that has an
// address space, so a missing one means the wrong file. It allocates
// nothing unless the file is malformed.
func parseStatus(b []byte) (status, error) {
	var st status
	var haveHWM, haveRSS, haveAnon, haveFile bool
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		var dst *uint64
		switch {
		case bytes.HasPrefix(line, []byte("VmHWM:")):
			dst, haveHWM = &st.hwm, true
		case bytes.HasPrefix(line, []byte("VmRSS:")):
			dst, haveRSS = &st.rss, true
		case bytes.HasPrefix(line, []byte("RssAnon:")):
			dst, haveAnon = &st.anon, true
		case bytes.HasPrefix(line, []byte("RssFile:")):
			dst, haveFile = &st.file, true
		default:
			continue
		}
		v, ok := parseKB(line)
		if !ok {
			return status{}, fmt.Errorf("rss: malformed status line %q", line)
		}
		*dst = v
	}
	if !haveHWM || !haveRSS {
		return status{}, fmt.Errorf("rss: status has no VmHWM or VmRSS line")
	}
	st.split = haveAnon && haveFile
	return st, nil
}

// parseKB parses a status line such as "VmRSS:\t    1760 kB" into bytes.
// The kernel always prints these fields in kB (1024 bytes).
func parseKB(line []byte) (uint64, bool) {
	_, rest, _ := bytes.Cut(line, []byte(":"))
	rest = bytes.TrimLeft(rest, " \t")
	digits := 0
	var kb uint64
	for digits < len(rest) && '0' <= rest[digits] && rest[digits] <= '9' {
		d := uint64(rest[digits] - '0')
		if kb > (math.MaxUint64/1024-d)/10 {
			return 0, false // would overflow in bytes
		}
		kb = kb*10 + d
		digits++
	}
	if digits == 0 || string(bytes.TrimSpace(rest[digits:])) != "kB" {
		return 0, false
	}
	return kb * 1024, true
}
