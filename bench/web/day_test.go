package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// daySess is a session whose RSS is pre plus excess MiB from 1 s to 3 s
// and pre otherwise, sampled every 100 ms, with one step.
func daySess(config string, round int, excess float64, p99 time.Duration, rps float64) daySession {
	const pre = 10 << 20
	s := daySession{Server: "web", Config: config, Round: round, PreRSS: pre, CPU: time.Second}
	for t := time.Duration(0); t <= 4*time.Second; t += 100 * time.Millisecond {
		rss := uint64(pre)
		if t >= time.Second && t < 3*time.Second {
			rss += uint64(excess * (1 << 20))
		}
		s.Samples = append(s.Samples, sample{T: t, RSS: rss})
	}
	s.Steps = []dayResult{{Start: time.Second, End: 2 * time.Second, GapEnd: int64(excess*(1<<20)) / 4,
		wrkResult: wrkResult{P99: p99, ReqPerSec: rps, Requests: 1000}}}
	return s
}

func TestExcessSeconds(t *testing.T) {
	s := daySess("off", 0, 8, time.Millisecond, 1000)
	assert.InDelta(t, 16, s.excessSeconds(), 0.01, "8 MiB for 2 s")
	s.PreRSS += 100 << 20 // below start-up counts as nothing, not less
	assert.Zero(t, s.excessSeconds())
}

func TestPrintDay(t *testing.T) {
	rep := &dayReport{Schedule: []dayStep{{Burst: time.Second, Conns: 8, Gap: 2 * time.Second}},
		Servers: []string{"web"}, Configs: []string{"on", "off"}, Rounds: 2}
	for r := range 2 {
		rep.Sessions = append(rep.Sessions, daySess("off", r, 8, 2*time.Millisecond, 1000),
			daySess("on", r, 2, 3*time.Millisecond, 900))
	}
	var b strings.Builder
	printDay(&b, rep)
	out := b.String()
	assert.Contains(t, out, "1s@8+2s")
	var on string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "on ") {
			on = l
		}
	}
	// RSS·s 4 MiB·s, 0.25 of off's; the gap's end 0.5 MiB, 0.25 of off;
	// p99 1.5×, req/s 0.9×, CPU a request the same.
	assert.Equal(t, []string{"on", "4", "MiB·s", "0.25", "0.5", "0.25", "0.25", "1.50", "0.90", "1000", "µs", "1.00", "0"},
		strings.Fields(on), out)
}
