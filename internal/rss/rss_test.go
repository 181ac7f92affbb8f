package rss

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sampleStatus = `Name:	cat
Umask:	0022
State:	R (running)
VmPeak:	    3060 kB
VmSize:	    3060 kB
VmLck:	       0 kB
VmHWM:	    1760 kB
VmRSS:	    1712 kB
VmData:	     360 kB
Threads:	1
`

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    status
		wantErr bool
	}{
		{name: "real", in: sampleStatus, want: status{hwm: 1760 << 10, rss: 1712 << 10}},
		{name: "zero", in: "VmHWM:\t0 kB\nVmRSS:\t0 kB\n", want: status{}},
		{name: "split", in: sampleStatus + "RssAnon:\t    2820 kB\nRssFile:\t    4824 kB\nRssShmem:\t       0 kB\n",
			want: status{hwm: 1760 << 10, rss: 1712 << 10, anon: 2820 << 10, file: 4824 << 10, split: true}},
		{name: "anon only", in: sampleStatus + "RssAnon:\t2820 kB\n", want: status{hwm: 1760 << 10, rss: 1712 << 10, anon: 2820 << 10}},
		{name: "bad anon", in: sampleStatus + "RssAnon:\t2820\nRssFile:\t1 kB\n", wantErr: true},
		{name: "no hwm", in: "VmRSS:\t1712 kB\n", wantErr: true},
		{name: "no rss", in: "VmHWM:\t1760 kB\n", wantErr: true},
		{name: "kernel thread", in: "Name:\tkthreadd\nThreads:\t1\n", wantErr: true},
		{name: "not a number", in: "VmHWM:\tlots kB\nVmRSS:\t1 kB\n", wantErr: true},
		{name: "negative", in: "VmHWM:\t-1 kB\nVmRSS:\t1 kB\n", wantErr: true},
		{name: "other unit", in: "VmHWM:\t1 MB\nVmRSS:\t1 kB\n", wantErr: true},
		{name: "no unit", in: "VmHWM:\t1\nVmRSS:\t1 kB\n", wantErr: true},
		{name: "trailing field", in: "VmHWM:\t1 kB x\nVmRSS:\t1 kB\n", wantErr: true},
		{name: "overflow", in: "VmHWM:\t18014398509481984 kB\nVmRSS:\t1 kB\n", wantErr: true},
		{name: "largest", in: "VmHWM:\t18014398509481983 kB\nVmRSS:\t1 kB", want: status{hwm: 18014398509481983 << 10, rss: 1 << 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatus([]byte(tt.in))
			if tt.wantErr {
				require.Error(t, err, "got %+v", got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// currentOrSkip returns Current, skipping the test where it is unsupported.
func currentOrSkip(t *testing.T) uint64 {
	t.Helper()
	cur, err := Current()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("current RSS is not available on %s", runtime.GOOS)
	}
	require.NoError(t, err, "Current")
	return cur
}

func TestPeakAtLeastCurrent(t *testing.T) {
	cur := currentOrSkip(t)
	peak, err := Peak()
	require.NoError(t, err, "Peak")
	assert.NotZero(t, cur, "current RSS")
	assert.GreaterOrEqual(t, peak, cur, "peak against current")
}

// TestPeakSeesTouchedMemory checks the unit end to end, on every system:
// while 32 MiB are touched and held the peak is at least that, and a wrong
// unit would be off by a factor of 1024 either way (32 KiB or 32 GiB).
func TestPeakSeesTouchedMemory(t *testing.T) {
	const (
		size  = 32 << 20
		limit = 16 << 30 // no test process gets near this; 1024 × size does
	)
	buf := make([]byte, size)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	peak, err := Peak()
	runtime.KeepAlive(buf)
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("peak RSS is not available on %s", runtime.GOOS)
	}
	require.NoError(t, err, "Peak")
	assert.GreaterOrEqual(t, peak, uint64(size*9/10), "peak while holding %d touched bytes", size)
	assert.LessOrEqual(t, peak, uint64(limit), "peak while holding %d touched bytes", size)
}
