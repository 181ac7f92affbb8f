package procfs

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Mem
		wantErr bool
	}{
		{name: "both", in: "Name:\tx\nVmHWM:\t    1760 kB\nVmRSS:\t    1712 kB\nThreads:\t3\n", want: Mem{RSS: 1712 << 10, Peak: 1760 << 10}},
		{name: "web", in: "Name:\tweb\nVmHWM:\t  20000 kB\nVmRSS:\t   10760 kB\n", want: Mem{RSS: 10760 << 10, Peak: 20000 << 10}},
		{name: "neither", in: "Name:\tweb\n", wantErr: true},
		{name: "no hwm", in: "VmRSS:\t1712 kB\n", wantErr: true},
		{name: "no rss", in: "VmHWM:\t1760 kB\n", wantErr: true},
		{name: "not a number", in: "VmHWM:\tlots kB\nVmRSS:\t1 kB\n", wantErr: true},
		{name: "other unit", in: "VmHWM:\t1 MB\nVmRSS:\t1 kB\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatus([]byte(tt.in))
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseStat(t *testing.T) {
	// A command name with a space and a parenthesis must not shift the fields.
	line := "4242 (srv (x) y) S 1 4242 4242 0 -1 4194560 120 0 0 0 250 75 0 0 20 0 5 0 100 0 0\n"
	got, err := ParseStat([]byte(line))
	require.NoError(t, err)
	assert.Equal(t, 3250*time.Millisecond, got) // (250+75) ticks of 10 ms

	got, err = ParseStat([]byte("123 (web (x)) S 1 2 3 4 5 6 7 8 9 10 150 50 0 0 20 0"))
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, got)

	_, err = ParseStat([]byte("4242 (srv) S 1 2"))
	require.Error(t, err)
	_, err = ParseStat([]byte("no parenthesis"))
	require.Error(t, err)
}

func TestReadOwnProc(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	st, err := Status(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, st.RSS)
	assert.GreaterOrEqual(t, st.Peak, st.RSS)
	_, err = CPU(os.Getpid())
	require.NoError(t, err)
}
