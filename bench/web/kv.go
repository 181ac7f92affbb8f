package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// kvTarget is examples/kv under redis-benchmark: SET then GET of size
// bytes on keys random keys. redis-benchmark runs a number of requests,
// not a duration, so a burst of d is d×rate requests of each command:
// about d long where the server serves rate a second (set -kv-rate near
// what this machine does), longer where it serves fewer.
func kvTarget(rate, size, keys int) target {
	return target{Name: "kv", ready: "kv: serving on ", load: func(ctx context.Context, addr string, conns int, d time.Duration) (wrkResult, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return wrkResult{}, err
		}
		n := max(int(d.Seconds()*float64(rate)/2), conns)
		ctx, cancel := context.WithTimeout(ctx, 10*d+30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "redis-benchmark", "-h", host, "-p", port, "-t", "set,get",
			"-n", strconv.Itoa(n), "-c", strconv.Itoa(conns), "-d", strconv.Itoa(size),
			"-r", strconv.Itoa(keys), "--csv")
		out, err := cmd.Output()
		if err != nil {
			return wrkResult{}, fmt.Errorf("redis-benchmark: %v: %s", err, out)
		}
		return parseRedisCSV(string(out), n)
	}}
}

// parseRedisCSV reads redis-benchmark's --csv report of n requests per
// test: the requests of all tests, their rate over the tests' summed
// time, and the worst of the tests' p50 and p99.
func parseRedisCSV(out string, n int) (wrkResult, error) {
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		return wrkResult{}, fmt.Errorf("redis-benchmark: %v: %q", err, out)
	}
	if len(recs) < 2 {
		return wrkResult{}, fmt.Errorf("redis-benchmark: no results in %q", out)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, h := range []string{"test", "rps", "p50_latency_ms", "p99_latency_ms"} {
		if _, ok := col[h]; !ok {
			return wrkResult{}, fmt.Errorf("redis-benchmark: no column %q in %q", h, recs[0])
		}
	}
	var r wrkResult
	var secs float64
	for _, rec := range recs[1:] {
		if len(rec) != len(recs[0]) {
			return wrkResult{}, fmt.Errorf("redis-benchmark: row %q", rec)
		}
		var v [3]float64
		for i, h := range []string{"rps", "p50_latency_ms", "p99_latency_ms"} {
			if v[i], err = strconv.ParseFloat(rec[col[h]], 64); err != nil || v[i] < 0 {
				return wrkResult{}, fmt.Errorf("redis-benchmark: %s of %s: %q", h, rec[col["test"]], rec[col[h]])
			}
		}
		if v[0] == 0 {
			return wrkResult{}, fmt.Errorf("redis-benchmark: %s: no requests a second", rec[col["test"]])
		}
		r.Requests += n
		secs += float64(n) / v[0]
		r.P50 = max(r.P50, time.Duration(v[1]*float64(time.Millisecond)))
		r.P99 = max(r.P99, time.Duration(v[2]*float64(time.Millisecond)))
	}
	r.ReqPerSec = float64(r.Requests) / secs
	return r, nil
}
