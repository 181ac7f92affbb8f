package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	require.Len(t, names, 10, "benchmark names in the test output")
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
		assert.Equal(t, tc.rows, p.rows, "%s: rows", tc.key)
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
				assert.ElementsMatch(t, want, got, "%s: pattern %q for %s side %d selects", tc.key, pat, top, side)
			}
		}
	}
}

func TestCompareRow(t *testing.T) {
	old := []float64{3.01e-7, 3.02e-7, 3.03e-7, 3.04e-7, 3.05e-7, 3.06e-7}
	nw := []float64{6.1e-8, 6.2e-8, 6.3e-8, 6.4e-8, 6.5e-8, 6.6e-8}
	st := compareRow("Pass", old, nw)
	// Each median lies between its sample's two middle values.
	assert.GreaterOrEqual(t, st.old.Center, 3.03e-7, "old median")
	assert.LessOrEqual(t, st.old.Center, 3.04e-7, "old median")
	assert.GreaterOrEqual(t, st.new.Center, 6.3e-8, "new median")
	assert.LessOrEqual(t, st.new.Center, 6.4e-8, "new median")
	assert.NotEqual(t, "~", st.delta, "disjoint samples: delta, want a significant change")
	assert.Less(t, st.cmp.P, st.cmp.Alpha, "disjoint samples: p, want a significant change")
	assert.Equal(t, "~", compareRow("Same", old, old).delta, "identical samples: delta")
}

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{1.5, "1.500s"}, {2.5e-3, "2.500ms"}, {3.25e-6, "3.250µs"}, {6.35e-8, "63.50ns"}} {
		assert.Equal(t, tc.want, seconds(tc.v), "seconds(%g)", tc.v)
	}
}
