package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBusyLevels runs two modes at two -busy levels: every mode runs at
// every level, and the runs at 50 % had a burner that took some CPU.
func TestBusyLevels(t *testing.T) {
	out, errOut, status := command(t, nil, "-len", "300001", "-readers", "3", "-chunk", "1000",
		"-mode", "off,idle", "-busy", "0,50", "-json")
	require.Equal(t, 0, status, errOut)
	rs := decodeLines(t, out)
	require.Len(t, rs, 4)
	var got []string
	for _, r := range rs {
		got = append(got, string(r.Mode)+"@"+map[int]string{0: "0", 50: "50"}[r.BusyPercent])
		assert.True(t, r.DigestOK, "%s at %d %%", r.Mode, r.BusyPercent)
		if r.BusyPercent == 0 {
			assert.Zero(t, r.BusyShare, "no burner at 0 %%")
		} else {
			assert.Positive(t, r.BusyShare, "%s: the burner ran", r.Mode)
		}
	}
	assert.Equal(t, []string{"off@0", "idle@0", "off@50", "idle@50"}, got, "interleaved: every mode at each level in turn")
}

func TestBusyTables(t *testing.T) {
	out, errOut, status := command(t, nil, "-len", "300001", "-readers", "3", "-chunk", "1000",
		"-mode", "off", "-busy", "0,100")
	require.Equal(t, 0, status, errOut)
	tables := strings.Split(strings.TrimSpace(out), "\n\n")
	require.Len(t, tables, 4, "a heading and a table per level:\n%s", out)
	assert.NotContains(t, tables[0], "busy")
	assert.Contains(t, tables[2], "100 % of one CPU kept busy by another process")
}
