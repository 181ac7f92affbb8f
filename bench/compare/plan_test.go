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

func TestSecPerOp(t *testing.T) {
	csv := []byte(`,old.txt,,new.txt,,,
,sec/op,CI,sec/op,CI,vs base,P
Pass,3.035e-07,1%,6.35e-08,4%,-79.08%,p=0.002 n=6
Mutex/goroutines=2,2.35e-08,11%,2.35e-08,11%,~,p=1.000 n=6
geomean,8.44e-08,,3.86e-08,,-54.26%,

,old.txt,,new.txt,,,
,B/op,CI,B/op,CI,vs base,P
Pass,0,0%,0,0%,~,p=1.000 n=6
`)
	got, err := secPerOp(csv)
	if err != nil {
		t.Fatal(err)
	}
	want := []stat{
		{"Pass", 3.035e-07, 6.35e-08, "1%", "4%", "-79.08%", "p=0.002 n=6"},
		{"Mutex/goroutines=2", 2.35e-08, 2.35e-08, "11%", "11%", "~", "p=1.000 n=6"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
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
