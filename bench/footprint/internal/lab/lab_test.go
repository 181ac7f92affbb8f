package lab

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	for _, name := range append(Steppings[:len(Steppings):len(Steppings)], "default") {
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

func TestStreamWorkloads(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 40 MiB through pipes")
	}
	for _, name := range []string{"paced", "chunk", "urandom"} {
		w, ok := FindWorkload(name)
		require.True(t, ok, name)
		for _, floor := range []bool{false, true} {
			res, err := w.run(nil, runOptions{quick: true, floor: floor, mark: func(bool) {}})
			require.NoError(t, err, "%s floor=%v", name, floor)
			assert.True(t, res.OK, "%s floor=%v: %s", name, floor, res.Check)
			assert.Positive(t, res.Bytes)
		}
	}
}

func TestAnswerFloorAnswersAlike(t *testing.T) {
	var req [msgSize]byte
	binary.LittleEndian.PutUint64(req[:], 42)
	binary.LittleEndian.PutUint32(req[8:], 4096)
	binary.LittleEndian.PutUint32(req[12:], 7)
	a, sa := answer(req[:])
	f, sf := answerFloor(req[:])
	assert.Equal(t, a, f)
	assert.Equal(t, sa, sf)
	assert.Zero(t, testing.AllocsPerRun(10, func() { answerFloor(req[:]) }), "the floor makes no garbage")
}

func TestPeakOf(t *testing.T) {
	s := []Sample{{RSS: 5 << 20}, {RSS: 8 << 20}, {RSS: 7 << 20}}
	if got := peakOf(7<<20, s); got != 8<<20 {
		t.Errorf("a sample above VmHWM: peak %d, want %d", got, 8<<20)
	}
	if got := peakOf(9<<20, s); got != 9<<20 {
		t.Errorf("VmHWM above every sample: peak %d, want %d", got, 9<<20)
	}
	if got := peakOf(0, nil); got != 0 {
		t.Errorf("nothing read: peak %d", got)
	}
}
