package rss

import "testing"

// TestMaxRSSUnit checks getrusage, the fallback, against /proc on Linux:
// a wrong unit would be off by a factor of 1024.
func TestMaxRSSUnit(t *testing.T) {
	st, err := readStatus()
	if err != nil {
		t.Fatalf("readStatus: %v", err)
	}
	m, err := maxRSS()
	if err != nil {
		t.Fatalf("maxRSS: %v", err)
	}
	// ru_maxrss can be far above VmHWM: it keeps the peak of the image the
	// process replaced by exec (here, a fork of the go command). It is
	// never below it, and a unit taken for bytes instead of kilobytes
	// would put it three orders of magnitude below.
	const limit = 16 << 30 // more than any process in a test run holds
	if m < st.hwm/2 || m > limit {
		t.Fatalf("got ru_maxrss %d bytes, want within [%d, %d] (VmHWM %d)", m, st.hwm/2, uint64(limit), st.hwm)
	}
}
