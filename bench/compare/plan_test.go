package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// matches applies a -test.bench pattern to a full benchmark name the way
// package testing does: one regexp per slash-separated level.
func matches(pattern string, n benchName) bool {
	pats := strings.Split(pattern, "/")
	if len(pats) > len(n) {
		return false
	}
	for i, p := range pats {
		part := n[i]
		if i == 0 {
			part = "Benchmark" + part
		}
		if !regexp.MustCompile(p).MatchString(part) {
			return false
		}
	}
	return true
}

var testOutput = []byte(`goos: linux
BenchmarkPass/impl=gvl-2         	  378922	       325.7 ns/op	         1.000 switches/op	       0 B/op	       0 allocs/op
BenchmarkPass/impl=mutex-2       	 1650700	        63.89 ns/op	         0.3903 switches/op	       0 B/op	       0 allocs/op
BenchmarkMutex/impl=gvl/goroutines=1-2   	12485108	         9.343 ns/op
BenchmarkMutex/impl=gvl/goroutines=2-2   	 5701634	       182.2 ns/op
BenchmarkMutex/impl=mutex/goroutines=1-2 	17999331	         6.285 ns/op
BenchmarkMutex/impl=mutex/goroutines=2-2 	16794540	         8.687 ns/op
BenchmarkPipe/impl=gvl/step=off-2         	    2934	    153276 ns/op
BenchmarkPipe/impl=gvl/step=on-2          	    1501	    171573 ns/op
BenchmarkPipe/impl=os-2                   	   39012	      5320 ns/op
BenchmarkLonely/impl=gvl-2                	   39012	      5320 ns/op
PASS
`)

func TestPlan(t *testing.T) {
	names := benchNames(testOutput)
	if len(names) != 10 {
		t.Fatalf("got %d names, want 10: %v", len(names), names)
	}
	for _, tc := range []struct {
		key  string
		rows []row
	}{
		{"impl", []row{
			{"Pass", "Pass/impl=mutex", "Pass/impl=gvl", "mutex"},
			{"Mutex/goroutines=1", "Mutex/impl=mutex/goroutines=1", "Mutex/impl=gvl/goroutines=1", "mutex"},
			{"Mutex/goroutines=2", "Mutex/impl=mutex/goroutines=2", "Mutex/impl=gvl/goroutines=2", "mutex"},
			{"Pipe/step=off", "Pipe/impl=os", "Pipe/impl=gvl/step=off", "os"},
			{"Pipe/step=on", "Pipe/impl=os", "Pipe/impl=gvl/step=on", "os"},
		}},
		{"step", []row{
			{"Pipe/impl=gvl", "Pipe/impl=gvl/step=off", "Pipe/impl=gvl/step=on", "off"},
		}},
	} {
		p := comparisons[tc.key].plan(names)
		if !slices.Equal(p.rows, tc.rows) {
			t.Errorf("%s: rows\n%v\nwant\n%v", tc.key, p.rows, tc.rows)
		}
		// Each side's pattern selects exactly that side's names.
		for _, top := range p.tops {
			for side := range 2 {
				pat := p.pattern(top, side)
				var want []string
				for _, r := range p.rows {
					n := []string{r.old, r.new}[side]
					if strings.HasPrefix(n, top+"/") && !slices.Contains(want, n) {
						want = append(want, n)
					}
				}
				var got []string
				for _, n := range names {
					if matches(pat, n) {
						got = append(got, n.String())
					}
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("%s: pattern %q for %s side %d selects %v, want %v", tc.key, pat, top, side, got, want)
				}
			}
		}
	}
}

func TestCompareRow(t *testing.T) {
	old := []float64{3.01e-7, 3.02e-7, 3.03e-7, 3.04e-7, 3.05e-7, 3.06e-7}
	nw := []float64{6.1e-8, 6.2e-8, 6.3e-8, 6.4e-8, 6.5e-8, 6.6e-8}
	st := compareRow("Pass", old, nw)
	if st.old.Center < 3.03e-7 || st.old.Center > 3.04e-7 || st.new.Center < 6.3e-8 || st.new.Center > 6.4e-8 {
		t.Errorf("medians %g, %g; want between the middle samples", st.old.Center, st.new.Center)
	}
	if st.delta == "~" || !(st.cmp.P < st.cmp.Alpha) {
		t.Errorf("disjoint samples: delta %q, p %v; want a significant change", st.delta, st.cmp.P)
	}
	same := compareRow("Same", old, old)
	if same.delta != "~" {
		t.Errorf("identical samples: delta %q, want ~", same.delta)
	}
}

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{1.5, "1.500s"}, {2.5e-3, "2.500ms"}, {3.25e-6, "3.250µs"}, {6.35e-8, "63.50ns"}} {
		if got := seconds(tc.v); got != tc.want {
			t.Errorf("seconds(%g) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
