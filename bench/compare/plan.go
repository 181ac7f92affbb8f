package main

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// A comparison is one configuration key and which of its values form the
// old side (index 0, the reference) and the new side (index 1).
type comparison struct {
	key   string
	title string
	// isNew reports whether a value of key belongs to the new side;
	// isOld whether it belongs to the old side.
	isOld, isNew func(v string) bool
	// oldLabel and newLabel head the table's columns.
	oldLabel, newLabel string
}

var comparisons = map[string]comparison{
	"impl": {
		key:      "impl",
		title:    "gvl against the plain-Go baseline",
		isOld:    func(v string) bool { return v != "gvl" },
		isNew:    func(v string) bool { return v == "gvl" },
		oldLabel: "baseline",
		newLabel: "impl=gvl",
	},
	"step": {
		key:      "step",
		title:    "idle stepping off against on",
		isOld:    func(v string) bool { return v == "off" },
		isNew:    func(v string) bool { return v == "on" },
		oldLabel: "step=off",
		newLabel: "step=on",
	},
	"depth": {
		key:      "depth",
		title:    "stack depth 0 against 2000 (seed 002)",
		isOld:    func(v string) bool { return v == "0" },
		isNew:    func(v string) bool { return v == "2000" },
		oldLabel: "depth=0",
		newLabel: "depth=2000",
	},
}

// A benchName is a benchmark's name split at its slashes, without the
// "Benchmark" prefix and the -GOMAXPROCS suffix: [Mutex impl=gvl goroutines=2].
type benchName []string

func (n benchName) String() string { return strings.Join(n, "/") }

// A result is one benchmark result and its parsed name.
type result struct {
	name benchName
	res  *benchfmt.Result
}

// parseResults reads `go test -bench` output with benchfmt and returns its
// results, skipping everything else.
func parseResults(out []byte) []result {
	var rs []result
	r := benchfmt.NewReader(bytes.NewReader(out), "bench")
	for r.Scan() {
		if res, ok := r.Result().(*benchfmt.Result); ok {
			rs = append(rs, result{parseName(string(res.Name)), res.Clone()})
		}
	}
	return rs
}

// parseName splits a full benchmark name, Mutex/impl=gvl/goroutines=2-2
// (with or without the Benchmark prefix).
func parseName(full string) benchName {
	full = strings.TrimPrefix(full, "Benchmark")
	if i := strings.LastIndexByte(full, '-'); i > 0 {
		if _, err := strconv.Atoi(full[i+1:]); err == nil {
			full = full[:i]
		}
	}
	return strings.Split(full, "/")
}

// value returns the value of key in n and the index of that part, or -1.
func (n benchName) value(key string) (string, int) {
	for i, p := range n[1:] {
		if v, ok := strings.CutPrefix(p, key+"="); ok {
			return v, i + 1
		}
	}
	return "", -1
}

// benchNames returns the distinct benchmark names in out, in order.
func benchNames(out []byte) []benchName {
	var names []benchName
	seen := map[string]bool{}
	for _, r := range parseResults(out) {
		if !seen[r.name.String()] {
			seen[r.name.String()] = true
			names = append(names, r.name)
		}
	}
	return names
}

// A row is one line of the table: the benchmark with the compared key
// removed, and the full names of its two sides.
type row struct {
	name     string
	old, new string // full names
	oldValue string // the old side's value of the key (the baseline's name)
}

// A plan says which benchmarks run on each side and how they pair up.
type plan struct {
	rows []row
	tops []string                  // top-level benchmarks involved, in order
	side [2]map[string][]benchName // top-level name → names, per side
}

// plan pairs every new-side benchmark with its old-side counterpart: the
// old name with the key removed must equal the new one with the key removed,
// or, failing that, be a subset of its parts (the baseline Pipe/impl=os
// stands beside both Pipe/impl=gvl/step=off and step=on).
func (c comparison) plan(names []benchName) plan {
	p := plan{side: [2]map[string][]benchName{{}, {}}}
	strip := func(n benchName, i int) benchName {
		return slices.Concat(n[:i], n[i+1:])
	}
	var olds []benchName
	for _, n := range names {
		if v, i := n.value(c.key); i > 0 && c.isOld(v) {
			olds = append(olds, n)
		}
	}
	used := map[string]bool{}
	for _, n := range names {
		v, i := n.value(c.key)
		if i < 0 || !c.isNew(v) {
			continue
		}
		rest := strip(n, i)
		var match benchName
		for _, o := range olds {
			_, j := o.value(c.key)
			ro := strip(o, j)
			if slices.Equal(ro, rest) {
				match = o
				break
			}
			if match == nil && subset(ro, rest) {
				match = o
			}
		}
		if match == nil {
			continue
		}
		ov, _ := match.value(c.key)
		p.rows = append(p.rows, row{name: rest.String(), old: match.String(), new: n.String(), oldValue: ov})
		top := n[0]
		if !slices.Contains(p.tops, top) {
			p.tops = append(p.tops, top)
		}
		p.side[1][top] = append(p.side[1][top], n)
		if !used[match.String()] {
			used[match.String()] = true
			p.side[0][top] = append(p.side[0][top], match)
		}
	}
	return p
}

// subset reports whether every part of a is in b, with the same first part.
func subset(a, b benchName) bool {
	if len(a) == 0 || len(b) == 0 || a[0] != b[0] {
		return false
	}
	for _, x := range a[1:] {
		if !slices.Contains(b[1:], x) {
			return false
		}
	}
	return true
}

// pattern returns a -test.bench pattern that selects exactly the given
// side's benchmarks under top: one anchored alternation per level, which
// selects nothing else because the names under one top-level benchmark on
// one side differ only in levels whose alternatives all belong to that side.
// (Should a cross product ever select more, samples.add keeps only the names
// the plan asked for.)
func (p plan) pattern(top string, side int) string {
	names := p.side[side][top]
	if len(names) == 0 {
		return ""
	}
	var levels [][]string
	for _, n := range names {
		for i, part := range n {
			if i >= len(levels) {
				levels = append(levels, nil)
			}
			if i == 0 {
				part = "Benchmark" + part
			}
			q := regexp.QuoteMeta(part)
			if !slices.Contains(levels[i], q) {
				levels[i] = append(levels[i], q)
			}
		}
	}
	parts := make([]string, len(levels))
	for i, alts := range levels {
		parts[i] = fmt.Sprintf("^(%s)$", strings.Join(alts, "|"))
	}
	return strings.Join(parts, "/")
}
