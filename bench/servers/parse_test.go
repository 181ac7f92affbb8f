package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPercentile(t *testing.T) {
	var xs []time.Duration
	for i := 1; i <= 100; i++ {
		xs = append(xs, time.Duration(i))
	}
	tests := []struct {
		p    float64
		want time.Duration
	}{{50, 50}, {99, 99}, {100, 100}, {0.5, 1}, {1, 1}}
	for _, tt := range tests {
		assert.Equal(t, tt.want, percentile(xs, tt.p), "p%v", tt.p)
	}
	assert.Equal(t, time.Duration(7), percentile([]time.Duration{7}, 99))
	assert.Zero(t, percentile(nil, 50))
}

func TestMedian(t *testing.T) {
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
	assert.Zero(t, median(nil))
}

func TestParseBenchmarkCSV(t *testing.T) {
	in := `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"SET","69930.07","0.402","0.104","0.383","0.615","1.071","3.455"
"GET","71428.57","0.389","0.096","0.375","0.583","0.999","2.111"
`
	got, err := parseBenchmarkCSV([]byte(in), 20000)
	require.NoError(t, err)
	assert.Equal(t, []testResult{
		{Test: "set", Requests: 20000, RPS: 69930.07, P50ms: 0.383, P99ms: 1.071},
		{Test: "get", Requests: 20000, RPS: 71428.57, P50ms: 0.375, P99ms: 0.999},
	}, got)

	_, err = parseBenchmarkCSV([]byte(`"test","rps"`+"\n"+`"SET","1"`+"\n"), 1)
	require.Error(t, err, "no latency columns")
	_, err = parseBenchmarkCSV([]byte(in[:strings.Index(in, "\n")+1]+`"SET","x","1","1","1","1","1","1"`+"\n"), 1)
	require.Error(t, err, "rps not a number")
}

func TestSummarize(t *testing.T) {
	rps, p50, p99 := summarize([]testResult{
		{Requests: 100, RPS: 100, P50ms: 1, P99ms: 5},  // 1 s
		{Requests: 100, RPS: 50, P50ms: 2, P99ms: 7},   // 2 s
		{Requests: 100, RPS: 100, P50ms: 3, P99ms: 10}, // 1 s
	})
	assert.InDelta(t, 75, rps, 1e-9) // 300 requests in 4 s
	assert.Equal(t, 2.0, p50)
	assert.Equal(t, 7.0, p99)
}

func TestReadReply(t *testing.T) {
	in := "+OK\r\n-ERR no\r\n:42\r\n$5\r\nhello\r\n$-1\r\n*2\r\n$1\r\na\r\n:1\r\n"
	r := bufio.NewReader(strings.NewReader(in))
	var kinds []byte
	for range 6 {
		rep, err := readReply(r, true)
		require.NoError(t, err)
		kinds = append(kinds, rep.Kind)
		switch rep.Kind {
		case '$':
			if rep.Len >= 0 {
				assert.Equal(t, "hello", string(rep.Bulk))
			}
		case '*':
			require.Len(t, rep.Elems, 2)
			assert.Equal(t, "a", string(rep.Elems[0].Bulk))
		}
	}
	assert.Equal(t, "+-:$$*", string(kinds))
	_, err := readReply(bufio.NewReader(strings.NewReader("?x\r\n")), true)
	require.ErrorIs(t, err, errProtocol)
	_, err = readReply(bufio.NewReader(strings.NewReader("$abc\r\n")), true)
	require.ErrorIs(t, err, errProtocol)
}

func TestBurstyChecks(t *testing.T) {
	var ss []session
	for r := range 3 {
		ss = append(ss,
			session{Server: "netloop-step", Round: r, RPS: 95, P99ms: 1.0, Peak: 60, After: 30},
			session{Server: "netloop", Round: r, RPS: 90, P99ms: 1.2, Peak: 100, After: 100},
			session{Server: "gnet", Round: r, RPS: 100, P99ms: 2.0, Peak: 100, After: 100},
			session{Server: "nbio", Round: r, RPS: 80, P99ms: 1.0, Peak: 80, After: 60},
		)
	}
	got := map[string]check{}
	for _, c := range burstyChecks(ss) {
		got[c.What] = c
	}
	want := map[string]struct {
		ratio float64
		ok    bool
	}{
		"netloop-step req/s / best of gnet, nbio":                  {0.95, true}, // best rate: gnet
		"netloop-step p99 / best of gnet, nbio":                    {1.0, true},  // best p99: nbio
		"netloop-step peak RSS / best of gnet, nbio":               {0.75, true}, // 60/80
		"netloop-step RSS 3 s after the load / best of gnet, nbio": {0.5, true},  // 30/60
		"netloop req/s / best of gnet, nbio":                       {0.9, false},
		"netloop p99 / best of gnet, nbio":                         {1.2, false},
		"netloop-step median req/s / best median of gnet, nbio":    {0.95, true},
		"netloop-step median p99 / best median of gnet, nbio":      {1.0, true},
		"netloop median req/s / best median of gnet, nbio":         {0.9, false},
		"netloop median p99 / best median of gnet, nbio":           {1.2, false},
	}
	require.Len(t, got, len(want))
	for what, w := range want {
		c, ok := got[what]
		require.True(t, ok, what)
		assert.InDelta(t, w.ratio, c.Ratio, 1e-9, what)
		assert.Equal(t, w.ok, c.OK, what)
		assert.Equal(t, 3, c.Rounds, what)
	}
}

// TestBurstyMedianChecks: the per-round ratios and the ratios of medians
// differ when the rounds do.
func TestBurstyMedianChecks(t *testing.T) {
	var ss []session
	for r, x := range [][2]float64{{90, 120}, {100, 80}, {110, 100}} {
		ss = append(ss,
			session{Server: "netloop-step", Round: r, RPS: x[0], P99ms: 1},
			session{Server: "gnet", Round: r, RPS: x[1], P99ms: 1})
	}
	got := map[string]float64{}
	for _, c := range burstyChecks(ss) {
		got[c.What] = c.Ratio
	}
	assert.InDelta(t, 1.1, got["netloop-step req/s / best of gnet, nbio"], 1e-9)               // of 0.75, 1.25, 1.1
	assert.InDelta(t, 1.0, got["netloop-step median req/s / best median of gnet, nbio"], 1e-9) // 100 / 100
}

func TestLoopRatios(t *testing.T) {
	loops := func(n string) map[string]string { return map[string]string{"loops": n} }
	var ss []session
	for r, two := range []float64{80, 90, 120} {
		ss = append(ss,
			// netloop-step's default ran one loop: it is the one-loop session.
			session{Server: "netloop-step", Round: r, RPS: 100, P99ms: 2, CPU: 4, Stats: loops("1")},
			session{Server: "netloop-step-2", Round: r, RPS: two, P99ms: 3, CPU: 5, Stats: loops("2")},
			session{Server: "gnet", Round: r, RPS: 90, P99ms: 1, CPU: 6, Stats: loops("2")},
			session{Server: "gnet-1", Round: r, RPS: 100, P99ms: 1, CPU: 4, Stats: loops("1")},
			session{Server: "nbio", Round: r, RPS: 100, P99ms: 1, CPU: 4, Stats: loops("1")}, // no pair
		)
	}
	ss = append(ss, session{Server: "netloop-2", Round: 0, RPS: 50, Stats: loops("2")}) // no one-loop netloop
	got := loopRatios(ss)
	require.Len(t, got, 2)
	assert.Equal(t, "gnet", got[0].Family)
	assert.InDelta(t, 0.9, got[0].RPS, 1e-9)
	assert.InDelta(t, 1.5, got[0].CPU, 1e-9)
	assert.Equal(t, "netloop-step", got[1].Family)
	assert.Equal(t, "2", got[1].Loops)
	assert.InDelta(t, 0.9, got[1].RPS, 1e-9) // median of 0.8, 0.9, 1.2
	assert.InDelta(t, 1.5, got[1].P99, 1e-9)
	assert.InDelta(t, 1.25, got[1].CPU, 1e-9)
	assert.Equal(t, 3, got[1].Rounds)
}

func TestPipelineChecks(t *testing.T) {
	cs := pipelineChecks([]pipeResult{
		{Server: "s", Loops: 1, Round: 0, RPS: 100}, {Server: "s", Loops: 2, Round: 0, RPS: 150},
		{Server: "s", Loops: 1, Round: 1, RPS: 100}, {Server: "s", Loops: 2, Round: 1, RPS: 90},
		{Server: "s", Loops: 1, Round: 2, RPS: 100}, {Server: "s", Loops: 2, Round: 2, RPS: 120},
	})
	require.Len(t, cs, 1)
	assert.InDelta(t, 1.2, cs[0].Ratio, 1e-9)
	assert.True(t, cs[0].OK)
}

func TestRotate(t *testing.T) {
	xs := []int{1, 2, 3}
	assert.Equal(t, []int{1, 2, 3}, rotate(xs, 0))
	assert.Equal(t, []int{2, 3, 1}, rotate(xs, 1))
	assert.Equal(t, []int{1, 2, 3}, rotate(xs, 3))
	assert.Equal(t, []int{1, 2, 3}, xs)
}

func TestIdleChecks(t *testing.T) {
	cs := idleChecks([]idleResult{
		{Server: "netloop-step", Round: 0, PerConn: 400}, {Server: "gnet", Round: 0, PerConn: 500},
		{Server: "netloop", Round: 0, PerConn: 600},
	})
	require.Len(t, cs, 2)
	assert.InDelta(t, 0.8, cs[0].Ratio, 1e-9)
	assert.True(t, cs[0].OK)
	assert.InDelta(t, 1.2, cs[1].Ratio, 1e-9)
	assert.False(t, cs[1].OK)
}

func TestMergeReports(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r report) string {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	params := burstyParams{Bursts: 2, Load: loadParams{Requests: 10}}
	names := []string{"netloop-step", "gnet", "nbio"}
	one := func(round int, rps float64) []session {
		return []session{{Server: "netloop-step", Round: round, RPS: rps}, {Server: "gnet", Round: round, RPS: 100}, {Server: "nbio", Round: round, RPS: 50}}
	}
	a := write("a.json", report{Load: "go", Bursty: params, ServerSet: names, Sessions: slices.Concat(one(0, 90), one(1, 80))})
	b := write("b.json", report{Load: "go", Bursty: params, ServerSet: names, Sessions: one(0, 120)})

	rep, err := mergeReports([]string{a, b})
	require.NoError(t, err)
	require.Len(t, rep.Sessions, 9)
	assert.Equal(t, 2, rep.Sessions[8].Round, "b's round 0 follows a's rounds 0 and 1")
	require.NotEmpty(t, rep.Summary)
	assert.Equal(t, 3, rep.Summary[0].Rounds)
	assert.Equal(t, 90.0, rep.Summary[0].RPS)
	require.NotEmpty(t, rep.Checks)
	assert.InDelta(t, 0.9, rep.Checks[0].Ratio, 1e-9) // ratios 0.9, 0.8, 1.2

	other := write("c.json", report{Load: "go", Bursty: burstyParams{Bursts: 3}, ServerSet: names, Sessions: one(0, 1)})
	_, err = mergeReports([]string{a, other})
	require.Error(t, err, "other parameters")
}

func TestParseSwitches(t *testing.T) {
	in := "Name:\tnetloop\nThreads:\t5\nvoluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t7\n"
	assert.Equal(t, uint64(127), parseSwitches([]byte(in)))
	assert.Zero(t, parseSwitches([]byte("Name:\tx\n")))
}

func TestPeakOfTakesTheHigherOfHWMAndSamples(t *testing.T) {
	samples := []sample{{RSS: 10 << 20}, {RSS: 14 << 20}, {RSS: 9 << 20}}
	assert.Equal(t, uint64(14<<20), peakOf(13<<20, samples), "VmHWM below the highest sample")
	assert.Equal(t, uint64(15<<20), peakOf(15<<20, samples), "VmHWM above every sample")
	assert.Equal(t, uint64(12<<20), peakOf(12<<20, nil), "no samples")
}
