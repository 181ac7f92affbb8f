package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const wrkOutput = `Running 1s test @ http://127.0.0.1:41234/items?n=1000
  1 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     9.75ms    9.98ms 100.21ms   91.73%
    Req/Sec     1.74k   168.29     1.93k    80.00%
  Latency Distribution
     50%    8.49ms
     75%   10.12ms
     90%   14.98ms
     99%   60.46ms
  1731 requests in 1.00s, 93.66MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 4
Requests/sec:   1724.39
Transfer/sec:     93.27MB
`

func TestParseWrk(t *testing.T) {
	r, err := parseWrk(wrkOutput)
	require.NoError(t, err)
	assert.Equal(t, wrkResult{P50: 8490 * time.Microsecond, P99: 60460 * time.Microsecond,
		Requests: 1731, ReqPerSec: 1724.39, Errors: 7}, r)

	_, err = parseWrk("unable to connect to 127.0.0.1:1 Connection refused\n")
	assert.Error(t, err)
}

func TestParseWrkDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"812.00us": 812 * time.Microsecond,
		"3.21ms":   3210 * time.Microsecond,
		"1.50s":    1500 * time.Millisecond,
		"2.00m":    2 * time.Minute,
	} {
		got, err := parseWrkDuration(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "ms", "3.2x", "abcs"} {
		_, err := parseWrkDuration(in)
		assert.Error(t, err, in)
	}
}

func TestParseConfig(t *testing.T) {
	for in, want := range map[string]config{
		"on":          {Name: "on", Stepper: true},
		"off":         {Name: "off"},
		"gogc=25":     {Name: "gogc=25", GOGC: "25"},
		"off.2":       {Name: "off.2"},
		"on.3":        {Name: "on.3", Stepper: true},
		"memlimit=20": {Name: "memlimit=20", MemLimit: "20MiB"},
		"tuner":       {Name: "tuner", Baseline: "tuner"},
		"freeos":      {Name: "freeos", Baseline: "freeos"},
		"budget=10":   {Name: "budget=10", Stepper: true, Budget: "0.1"},
	} {
		got, err := parseConfig(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "maybe", "gogc=", "gogc=0", "gogc=x", "gogc=05", "off.", "off.1", "off.x", "x.2", "memlimit=", "memlimit=0", "memlimit=1GiB", "gctuner", "budget=", "budget=0", "budget=101", "budget=0.1"} {
		_, err := parseConfig(in)
		assert.Error(t, err, in)
	}
}

func TestMedian(t *testing.T) {
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
	assert.Equal(t, int64(2), median([]int64{4, 1, 3, 0}))
	assert.Zero(t, median([]float64{}))
}

func TestParseSchedule(t *testing.T) {
	got, err := parseSchedule("2s@32+5s, 1s@8+150ms")
	require.NoError(t, err)
	assert.Equal(t, []dayStep{{Burst: 2 * time.Second, Conns: 32, Gap: 5 * time.Second},
		{Burst: time.Second, Conns: 8, Gap: 150 * time.Millisecond}}, got)
	for name := range daySchedules {
		_, err := parseSchedule(name)
		assert.NoError(t, err, name)
	}
	for _, in := range []string{"", "2s", "2s@32", "2s+5s", "1500ms@8+1s", "0s@8+1s", "2s@0+1s", "2s@x+1s", "2s@8+0s", "2s@8+1s,"} {
		_, err := parseSchedule(in)
		assert.Error(t, err, in)
	}
}

const redisCSV = `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"SET","22831.05","0.961","0.168","0.631","3.271","6.983","11.743"
"GET","30959.75","0.661","0.056","0.543","1.407","3.247","6.543"
`

func TestParseRedisCSV(t *testing.T) {
	r, err := parseRedisCSV(redisCSV, 20000)
	require.NoError(t, err)
	assert.Equal(t, 40000, r.Requests)
	assert.Equal(t, 631*time.Microsecond, r.P50)
	assert.Equal(t, 6983*time.Microsecond, r.P99)
	secs := 20000/22831.05 + 20000/30959.75
	assert.InDelta(t, 40000/secs, r.ReqPerSec, 0.01)

	for _, bad := range []string{
		"",
		`"test","rps"` + "\n" + `"SET","1"` + "\n", // no latency columns
		strings.Replace(redisCSV, `"22831.05"`, `"0.00"`, 1),
		strings.Replace(redisCSV, `"6.983"`, `"x"`, 1),
		"Could not connect to Redis at 127.0.0.1:1: Connection refused\n",
	} {
		_, err := parseRedisCSV(bad, 20000)
		assert.Error(t, err, "%q", bad)
	}
}
