package netloop_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/netloop"
)

// TestDefaultLoops: a Server made without WithLoops runs one loop per four
// Ps, at least one, whatever GOMAXPROCS is when it is made.
func TestDefaultLoops(t *testing.T) {
	old := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
	for _, tc := range []struct{ procs, want int }{
		{1, 1}, {2, 1}, {4, 1}, {7, 1}, {8, 2}, {16, 4}, {17, 4},
	} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", tc.procs), func(t *testing.T) {
			runtime.GOMAXPROCS(tc.procs)
			assert.Equal(t, tc.want, netloop.DefaultLoops())
			srv, err := netloop.Listen("tcp", "127.0.0.1:0", newLines(nil))
			require.NoError(t, err)
			defer srv.Close()
			assert.Len(t, srv.Loops(), tc.want)
			assert.Len(t, srv.Stats().Loops, tc.want)
		})
	}
}
