package rss

import (
	"fmt"
	"os"
)

// statusPath is read on every call: it is a small file the kernel renders
// on demand, cheaper than any bookkeeping of our own.
const statusPath = "/proc/self/status"

func readStatus() (status, error) {
	f, err := os.Open(statusPath)
	if err != nil {
		return status{}, fmt.Errorf("rss: %w", err)
	}
	defer f.Close()
	return parseStatus(f)
}

func peak() (uint64, error) {
	st, err := readStatus()
	if err != nil {
		// Without /proc (a bare container), getrusage still knows the peak.
		if p, rerr := maxRSS(); rerr == nil {
			return p, nil
		}
		return 0, err
	}
	return st.hwm, nil
}

func current() (uint64, error) {
	st, err := readStatus()
	if err != nil {
		return 0, err
	}
	return st.rss, nil
}
