package rss

import (
	"errors"
	"runtime"
	"strings"
	"testing"
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
		{name: "no hwm", in: "VmRSS:\t1712 kB\n", wantErr: true},
		{name: "no rss", in: "VmHWM:\t1760 kB\n", wantErr: true},
		{name: "kernel thread", in: "Name:\tkthreadd\nThreads:\t1\n", wantErr: true},
		{name: "not a number", in: "VmHWM:\tlots kB\nVmRSS:\t1 kB\n", wantErr: true},
		{name: "negative", in: "VmHWM:\t-1 kB\nVmRSS:\t1 kB\n", wantErr: true},
		{name: "other unit", in: "VmHWM:\t1 MB\nVmRSS:\t1 kB\n", wantErr: true},
		{name: "no unit", in: "VmHWM:\t1\nVmRSS:\t1 kB\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatus(strings.NewReader(tt.in))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %+v, nil error, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want %+v", err, tt.want)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
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
	if err != nil {
		t.Fatalf("Current: %v", err)
	}
	return cur
}

func TestPeakAtLeastCurrent(t *testing.T) {
	cur := currentOrSkip(t)
	peak, err := Peak()
	if err != nil {
		t.Fatalf("Peak: %v", err)
	}
	if cur == 0 {
		t.Fatalf("got current RSS 0, want > 0")
	}
	if peak < cur {
		t.Fatalf("got peak %d < current %d", peak, cur)
	}
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
	if err != nil {
		t.Fatalf("Peak: %v", err)
	}
	if peak < size*9/10 || peak > limit {
		t.Fatalf("got peak %d while holding %d touched bytes, want within [%d, %d]", peak, size, size*9/10, limit)
	}
}
