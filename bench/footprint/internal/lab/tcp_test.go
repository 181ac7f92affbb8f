package lab

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTCPWorkload runs the quick tcp workload with no stepper and checks
// what it reports, not how fast: every request answered and checked, the
// gaps marked, RSS read after every burst.
func TestTCPWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a client process and runs for about a second")
	}
	c := tcpConfig(true)
	var mu sync.Mutex
	var marks []bool
	res, err := runTCP(nil, runOptions{quick: true, mark: func(gap bool) {
		mu.Lock()
		marks = append(marks, gap)
		mu.Unlock()
	}})
	require.NoError(t, err)
	require.True(t, res.OK, res.Check)
	want := c.conns * c.bursts * c.perBurst
	assert.Len(t, res.Latencies, want)
	assert.EqualValues(t, want, res.Requests)
	assert.EqualValues(t, want*c.garbage, res.Bytes)
	// At least one read and one write per request, one accept per
	// connection.
	assert.GreaterOrEqual(t, res.HandlerSyscalls, uint64(2*want+c.conns))
	assert.NotZero(t, res.Loop.Syscalls)
	assert.GreaterOrEqual(t, res.Loop.Events, uint64(want+c.conns), "handler calls: one per request at least, and one per connection's end of file")
	mu.Lock()
	defer mu.Unlock()
	var wantMarks []bool
	for range c.bursts {
		wantMarks = append(wantMarks, false, true)
	}
	assert.Equal(t, wantMarks, marks, "a burst starts (false), then its gap (true)")
	require.Len(t, res.AfterBurst, c.bursts)
	for b, r := range res.AfterBurst {
		for i, off := range AfterBurstOffsets {
			if off <= c.gap {
				assert.NotZero(t, r[i], "burst %d, RSS %v after", b, off)
			} else {
				assert.Zero(t, r[i], "burst %d: %v is past the %v gap", b, off, c.gap)
			}
		}
	}
}
