package lab

import (
	"testing"
	"time"
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
	if p.N != 100 || p.P50 != 50 || p.P90 != 90 || p.P99 != 99 || p.Max != 100 {
		t.Errorf("got %+v, want n=100 p50=50 p90=90 p99=99 max=100", *p)
	}
}

func TestSteppers(t *testing.T) {
	for _, name := range Steppings {
		st, release, err := stepper(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if (st == nil) != (name == "off") {
			t.Errorf("%s: stepper %v", name, st)
		}
		release()
	}
	if _, _, err := stepper("nope"); err == nil {
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
