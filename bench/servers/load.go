package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// loadParams is one run of SET/GET load, in redis-benchmark's terms.
type loadParams struct {
	Tests    []string // "set", "get", in order
	Clients  int      // connections (-c)
	Requests int      // requests per test (-n)
	Size     int      // value size in bytes (-d)
	Keys     int      // keyspace (-r); keys are key:%012d as redis-benchmark's
	Pipeline int      // requests in flight per connection (-P)
}

// testResult is what one test (SET or GET) of a load run measured.
type testResult struct {
	Test     string  `json:"test"`
	Requests int     `json:"requests"`
	RPS      float64 `json:"rps"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
}

// loader runs load against a server at addr.
type loader interface {
	Name() string
	Run(ctx context.Context, addr string, p loadParams) ([]testResult, error)
}

// redisBenchmark drives the load with redis-benchmark (Debian's redis-tools),
// reading its --csv rows.
type redisBenchmark struct {
	path string
	pin  string // CPUs to run it on (taskset -c), "" for any
}

func (redisBenchmark) Name() string { return "redis-benchmark" }

func (rb redisBenchmark) Run(ctx context.Context, addr string, p loadParams) ([]testResult, error) {
	host, port, ok := strings.Cut(addr, ":")
	if !ok {
		return nil, fmt.Errorf("redis-benchmark: address %q has no port", addr)
	}
	args := []string{"-h", host, "-p", port, "-t", strings.Join(p.Tests, ","),
		"-c", strconv.Itoa(p.Clients), "-n", strconv.Itoa(p.Requests),
		"-d", strconv.Itoa(p.Size), "-r", strconv.Itoa(p.Keys),
		"-P", strconv.Itoa(max(p.Pipeline, 1)), "--csv"}
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, rb.path, args...)
	if rb.pin != "" {
		cmd = exec.CommandContext(ctx, "taskset", slices.Concat([]string{"-c", rb.pin, rb.path}, args)...)
	}
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("redis-benchmark %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	res, err := parseBenchmarkCSV(out.Bytes(), p.Requests)
	if err != nil {
		return nil, err
	}
	if len(res) != len(p.Tests) {
		return nil, fmt.Errorf("redis-benchmark printed %d result rows, want %d: %q", len(res), len(p.Tests), out.String())
	}
	return res, nil
}

// parseBenchmarkCSV reads redis-benchmark's --csv output (7.x): a header row
// "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
// "p95_latency_ms","p99_latency_ms","max_latency_ms", then a row per test.
// Columns are found by name, so an added column does not break it.
func parseBenchmarkCSV(b []byte, requests int) ([]testResult, error) {
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("redis-benchmark csv: %w", err)
	}
	if len(rows) < 1 {
		return nil, fmt.Errorf("redis-benchmark csv: empty")
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, h := range []string{"test", "rps", "p50_latency_ms", "p99_latency_ms"} {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("redis-benchmark csv: no %q column in %q", h, rows[0])
		}
	}
	var res []testResult
	for _, r := range rows[1:] {
		if len(r) != len(rows[0]) {
			return nil, fmt.Errorf("redis-benchmark csv: row %q has %d fields, header %d", r, len(r), len(rows[0]))
		}
		num := func(h string) (float64, error) {
			v, err := strconv.ParseFloat(r[col[h]], 64)
			if err != nil {
				return 0, fmt.Errorf("redis-benchmark csv: %s: %w", h, err)
			}
			return v, nil
		}
		t := testResult{Test: strings.ToLower(r[col["test"]]), Requests: requests}
		if t.RPS, err = num("rps"); err != nil {
			return nil, err
		}
		if t.P50ms, err = num("p50_latency_ms"); err != nil {
			return nil, err
		}
		if t.P99ms, err = num("p99_latency_ms"); err != nil {
			return nil, err
		}
		res = append(res, t)
	}
	return res, nil
}

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// sorted: the smallest value with at least p % of the values at or below it.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100 + 0.999999999)
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// median returns the median of xs (the mean of the middle two for an even
// count), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
