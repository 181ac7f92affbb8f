package rss

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMaxRSSUnit checks getrusage, the fallback, against /proc on Linux:
// a wrong unit would be off by a factor of 1024.
func TestMaxRSSUnit(t *testing.T) {
	st, err := readStatus()
	require.NoError(t, err, "readStatus")
	m, err := maxRSS()
	require.NoError(t, err, "maxRSS")
	// ru_maxrss can be far above VmHWM: it keeps the peak of the image the
	// process replaced by exec (here, a fork of the go command). It is
	// never below it, and a unit taken for bytes instead of kilobytes
	// would put it three orders of magnitude below.
	const limit = 16 << 30 // more than any process in a test run holds
	assert.GreaterOrEqual(t, m, st.hwm/2, "ru_maxrss in bytes against half of VmHWM")
	assert.LessOrEqual(t, m, uint64(limit), "ru_maxrss in bytes (VmHWM %d)", st.hwm)
}

// TestCurrentMakesNoGarbage checks that reading the RSS allocates nothing:
// a sampler calls it a hundred times a second in a program whose garbage
// is being measured, and a floor without garbage must stay without it.
func TestCurrentMakesNoGarbage(t *testing.T) {
	_, err := Current()
	require.NoError(t, err, "Current")
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Current(); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs, "allocations per Current")
}

func TestSplit(t *testing.T) {
	anon, file, err := Split()
	if err != nil {
		t.Fatal(err)
	}
	cur, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	if anon == 0 || file == 0 {
		t.Errorf("RssAnon %d, RssFile %d: a Go test binary has both", anon, file)
	}
	// VmRSS is RssAnon + RssFile + RssShmem, each read at its own moment.
	if anon+file > cur+1<<20 {
		t.Errorf("RssAnon %d + RssFile %d is past VmRSS %d", anon, file, cur)
	}
}
