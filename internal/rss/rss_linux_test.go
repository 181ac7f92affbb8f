package rss

import "testing"

// TestMaxRSSUnit checks that getrusage, the fallback, agrees with /proc on
// Linux: a wrong unit would be off by a factor of 1024.
func TestMaxRSSUnit(t *testing.T) {
	st, err := readStatus()
	if err != nil {
		t.Fatalf("readStatus: %v", err)
	}
	m, err := maxRSS()
	if err != nil {
		t.Fatalf("maxRSS: %v", err)
	}
	// The two differ a little (ru_maxrss remembers the image before exec,
	// and the kernel's per-CPU RSS counters are summed approximately), but a
	// wrong unit would put them three orders of magnitude apart.
	if m < st.hwm/2 || m > 2*st.hwm {
		t.Fatalf("got ru_maxrss %d bytes, want within [%d, %d] (VmHWM %d)", m, st.hwm/2, 2*st.hwm, st.hwm)
	}
}
