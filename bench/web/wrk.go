package main

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// wrkResult is what one wrk run reports.
type wrkResult struct {
	P50, P99  time.Duration
	Requests  int
	ReqPerSec float64
	Errors    int // socket errors and non-2xx/3xx responses
}

// webTargetFor is examples/web under wrk, GET /items?n=items.
func webTargetFor(items int) target {
	return target{Name: "web", ready: "web: serving on ", load: func(ctx context.Context, addr string, conns int, d time.Duration) (wrkResult, error) {
		return runWrk(ctx, fmt.Sprintf("%s/items?n=%d", addr, items), conns, d)
	}}
}

// runWrk runs one burst: wrk with one thread, conns connections, for d
// (whole seconds: wrk knows no shorter unit), against url.
func runWrk(ctx context.Context, url string, conns int, d time.Duration) (wrkResult, error) {
	secs := max(int(d/time.Second), 1)
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "wrk", "-t1", "-c"+strconv.Itoa(conns), "-d"+strconv.Itoa(secs)+"s", "--latency", url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %v: %s", err, out)
	}
	return parseWrk(string(out))
}

// parseWrk reads wrk's --latency output.
func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	var have50, have99, haveRate bool
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && (f[0] == "50%" || f[0] == "99%"):
			d, err := parseWrkDuration(f[1])
			if err != nil {
				return r, err
			}
			if f[0] == "50%" {
				r.P50, have50 = d, true
			} else {
				r.P99, have99 = d, true
			}
		case len(f) >= 3 && f[1] == "requests" && f[2] == "in":
			n, err := strconv.Atoi(f[0])
			if err != nil {
				return r, fmt.Errorf("wrk: bad line %q", sc.Text())
			}
			r.Requests = n
		case len(f) == 2 && f[0] == "Requests/sec:":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return r, fmt.Errorf("wrk: bad line %q", sc.Text())
			}
			r.ReqPerSec, haveRate = v, true
		case len(f) >= 2 && f[0] == "Socket" && f[1] == "errors:":
			// Socket errors: connect 0, read 0, write 0, timeout 0
			for i := 3; i < len(f); i += 2 {
				n, err := strconv.Atoi(strings.TrimSuffix(f[i], ","))
				if err != nil {
					return r, fmt.Errorf("wrk: bad line %q", sc.Text())
				}
				r.Errors += n
			}
		case len(f) == 5 && f[0] == "Non-2xx":
			n, err := strconv.Atoi(f[4])
			if err != nil {
				return r, fmt.Errorf("wrk: bad line %q", sc.Text())
			}
			r.Errors += n
		}
	}
	if !have50 || !have99 || !haveRate {
		return r, fmt.Errorf("wrk: no latency distribution or rate in %q", out)
	}
	return r, nil
}

// parseWrkDuration parses wrk's times: 812.00us, 3.21ms, 1.02s, 1.50m.
func parseWrkDuration(s string) (time.Duration, error) {
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("wrk: bad time %q", s)
			}
			return time.Duration(f * float64(u.unit)), nil
		}
	}
	return 0, fmt.Errorf("wrk: bad time %q", s)
}
