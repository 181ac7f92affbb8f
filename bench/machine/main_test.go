package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/internal/machine"
)

func TestRunRejectsBadFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"-rounds", "0"}, &out, &errOut))
	assert.Equal(t, "machine: -rounds must be at least 1\n", errOut.String())
	errOut.Reset()
	assert.Equal(t, 2, run([]string{"-nope"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "-nope")
	assert.Empty(t, out.String())
}

func TestTableAndJSON(t *testing.T) {
	costs := []machine.Cost{{Name: "gc-cycle", Procs: 2, Median: 263000, Min: 208000, Max: 382000}, {Name: "syscall", Median: 900, Min: 800, Max: 1000}}
	var buf bytes.Buffer
	printTable(&buf, costs)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 5)
	assert.Equal(t, []string{"gc-cycle", "2", "263.00", "µs", "208.00", "µs", "382.00", "µs"}, strings.Fields(lines[3]))
	assert.Equal(t, []string{"syscall", "-", "900", "ns", "800", "ns", "1.00", "µs"}, strings.Fields(lines[4]))

	b, err := json.Marshal(costs[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"gc-cycle","gomaxprocs":2,"median_ns":263000,"min_ns":208000,"max_ns":382000}`, string(b))
}
