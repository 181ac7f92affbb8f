package lab

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestHandleMatchesExpectedSum(t *testing.T) {
	for _, tc := range []struct{ size, seed uint32 }{{0, 1}, {64, 7}, {256 << 10, 0xdeadbeef}} {
		if got, want := handle(tc.size, tc.seed), expectedSum(tc.size, tc.seed); got != want {
			t.Errorf("handle(%d, %d) = %d, want %d", tc.size, tc.seed, got, want)
		}
	}
}

func TestPercentiles(t *testing.T) {
	if percentilesOf(nil) != nil {
		t.Error("percentiles of nothing: want nil")
	}
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i))
	}
	p := percentilesOf(d)
	if p.N != 100 || p.P50 != 50 || p.P90 != 90 || p.P99 != 99 || p.P999 != 100 || p.Max != 100 {
		t.Errorf("got %+v, want n=100 p50=50 p90=90 p99=99 p99.9=100 max=100", *p)
	}
}

// TestNearestRank pins the method: the ceil(p·n)-th smallest value, so a
// percentile is always a value measured, and the maximum when there are too
// few values to say more.
func TestNearestRank(t *testing.T) {
	seq := func(n int) []time.Duration {
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration(i + 1)
		}
		return s
	}
	for _, tc := range []struct {
		n, perMille int
		want        int64
	}{
		{1, 500, 1}, {1, 999, 1},
		{2, 500, 1}, // the lower of two, not the upper median
		{10, 990, 10}, {10, 500, 5},
		{200, 990, 198}, {200, 999, 200},
		{1000, 999, 999}, {1000, 990, 990}, {1001, 999, 1000},
		{4000, 999, 3996},
	} {
		assert.Equal(t, tc.want, nearestRank(seq(tc.n), tc.perMille), "n=%d p=%d‰", tc.n, tc.perMille)
	}
}

func TestSteppers(t *testing.T) {
	for _, name := range Steppings {
		st, release, err := stepper(name, false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if (st == nil) != (name == "off") {
			t.Errorf("%s: stepper %v", name, st)
		}
		release()
	}
	if _, _, err := stepper("nope", false); err == nil {
		t.Error("unknown policy: want an error")
	}
}

func TestGCSettings(t *testing.T) {
	for _, w := range Workloads {
		for _, quick := range []bool{false, true} {
			gcs := GCSettings(w, quick)
			if len(gcs) < 2 {
				t.Errorf("%s quick=%v: %d settings", w.Name, quick, len(gcs))
			}
			last := gcs[len(gcs)-1]
			if last.GOGC != "off" || last.MemLimit == "" {
				t.Errorf("%s: GOGC=off must come with a memory limit, got %+v", w.Name, last)
			}
		}
	}
}
