package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// loopRatio is one library's many loops against its one loop in the bursty
// experiment: per-round ratios of the session with more loops to the
// session with one, medians over the rounds that had both.
type loopRatio struct {
	Family string  // the configuration less its loop suffix: netloop-step, gnet...
	Loops  string  // the many-loop session's loop count, as the server reported it
	RPS    float64 // requests/s, many / one
	P99    float64 // p99, many / one
	CPU    float64 // CPU, many / one
	Rounds int
}

// family is a configuration's name less its loop suffix ("-1", "-2"):
// the sessions of one family differ only in their loop count.
func family(name string) string {
	for _, suf := range []string{"-1", "-2"} {
		if f, ok := strings.CutSuffix(name, suf); ok {
			return f
		}
	}
	return name
}

// loopRatios pairs, round by round, each family's sessions that ran more
// than one loop with the family's one-loop session, by the loop count the
// server reported (netloop's default may be one loop or several).
func loopRatios(ss []session) []loopRatio {
	type key struct{ family, loops string }
	type acc struct{ rps, p99, cpu []float64 }
	ratios := map[key]*acc{}
	var order []key
	byRound := map[int][]session{}
	for _, s := range ss {
		byRound[s.Round] = append(byRound[s.Round], s)
	}
	for _, r := range byRound {
		for _, many := range r {
			if n := many.Stats["loops"]; n == "" || n == "0" || n == "1" {
				continue
			}
			i := slices.IndexFunc(r, func(one session) bool {
				return family(one.Server) == family(many.Server) && one.Stats["loops"] == "1"
			})
			if i < 0 || r[i].RPS == 0 || r[i].P99ms == 0 || r[i].CPU == 0 {
				continue
			}
			one := r[i]
			k := key{family(many.Server), many.Stats["loops"]}
			if ratios[k] == nil {
				ratios[k] = &acc{}
				order = append(order, k)
			}
			a := ratios[k]
			a.rps = append(a.rps, many.RPS/one.RPS)
			a.p99 = append(a.p99, many.P99ms/one.P99ms)
			a.cpu = append(a.cpu, many.CPU/one.CPU)
		}
	}
	slices.SortFunc(order, func(a, b key) int { return strings.Compare(a.family+a.loops, b.family+b.loops) })
	var out []loopRatio
	for _, k := range order {
		a := ratios[k]
		out = append(out, loopRatio{Family: k.family, Loops: k.loops, RPS: median(a.rps), P99: median(a.p99),
			CPU: median(a.cpu), Rounds: len(a.rps)})
	}
	return out
}

// printLoopRatios prints loopRatios of the bursty sessions.
func printLoopRatios(w io.Writer, rep *report) {
	rs := loopRatios(rep.Sessions)
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nmore loops against one, same library (per-round ratios, medians):")
	for _, r := range rs {
		fmt.Fprintf(w, "  %-14s %s loops / 1: req/s %.2f  p99 %.2f  CPU %.2f  (%d rounds)\n",
			r.Family, r.Loops, r.RPS, r.P99, r.CPU, r.Rounds)
	}
}
