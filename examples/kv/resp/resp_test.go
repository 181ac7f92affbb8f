package resp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/examples/kv/resp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		args []string
		n    int
		err  bool
	}{
		{in: "", n: 0},
		{in: "PING\r\n", args: []string{"PING"}, n: 6},
		{in: "PING\n", args: []string{"PING"}, n: 5},
		{in: "  set  k\tv \r\nGET k\r\n", args: []string{"set", "k", "v"}, n: 13},
		{in: "\r\n", args: nil, n: 2},
		{in: "*0\r\n", args: nil, n: 4},
		{in: "*-1\r\n", args: nil, n: 5},
		{in: "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", args: []string{"ECHO", ""}, n: 20},
		{in: "*1\r\n$4\r\nPI\r\n\r\n", args: []string{"PI\r\n"}, n: 14},
		{in: "*1\r\n$4\r\nPINGxx", err: true},
		{in: "*1\r\n:4\r\n", err: true},
		{in: "*x\r\n", err: true},
		{in: "*1\n", err: true},
		{in: "*1\r\n$-1\r\n", err: true},
		{in: "*99999999999\r\n", err: true},
		{in: "*1\r\n$999999999\r\n", err: true},
		{in: "*1234567890123456789012", err: true},
		{in: strings.Repeat("a", resp.MaxInline+1), err: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.in), func(t *testing.T) {
			args, n, err := resp.Parse([]byte(tt.in), nil)
			if tt.err {
				require.ErrorIs(t, err, resp.ErrProtocol)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.n, n)
			var got []string
			for _, a := range args {
				got = append(got, string(a))
			}
			assert.Equal(t, tt.args, got)
		})
	}
}

// TestParseSplit feeds every proper prefix of valid commands: each must
// read as incomplete, never as an error or as a shorter command.
func TestParseSplit(t *testing.T) {
	for _, cmd := range []string{
		"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$10\r\n0123456789\r\n",
		"*1\r\n$4\r\nPING\r\n",
		"SET key value\r\n",
	} {
		for i := range len(cmd) {
			_, n, err := resp.Parse([]byte(cmd[:i]), nil)
			require.NoError(t, err, "prefix %q", cmd[:i])
			require.Zero(t, n, "prefix %q", cmd[:i])
		}
		_, n, err := resp.Parse([]byte(cmd), nil)
		require.NoError(t, err)
		require.Equal(t, len(cmd), n)
	}
}

func TestServe(t *testing.T) {
	var s resp.Store
	in := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\nGET k\r\nGET nope\r\nDEL k nope\r\n" +
		"DBSIZE\r\nPING\r\nPING hi\r\nECHO x\r\nget\r\nset a b c\r\nFOO bar\r\n" +
		"CONFIG GET save\r\nCONFIG GET *\r\nCONFIG SET a b\r\nCOMMAND DOCS\r\nQUIT\r\nPING\r\n*1\r\n"
	want := "+OK\r\n$5\r\nhello\r\n$-1\r\n:1\r\n:0\r\n+PONG\r\n$2\r\nhi\r\n$1\r\nx\r\n" +
		"-ERR wrong number of arguments for 'get' command\r\n-ERR syntax error\r\n" +
		"-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n" +
		"*2\r\n$4\r\nsave\r\n$0\r\n\r\n*4\r\n$4\r\nsave\r\n$0\r\n\r\n$10\r\nappendonly\r\n$2\r\nno\r\n" +
		"-ERR only CONFIG GET <parameter> is supported\r\n*0\r\n+OK\r\n"
	out, n, quit := s.Serve(nil, []byte(in), 0)
	assert.Equal(t, want, string(out))
	assert.True(t, quit)
	assert.Equal(t, strings.Index(in, "PING\r\n*1"), n, "stops after QUIT")
	assert.Equal(t, uint64(16), s.Commands())
	assert.Zero(t, s.Len())
}

func TestServePipelinedAndLimit(t *testing.T) {
	var s resp.Store
	s.Set([]byte("big"), []byte(strings.Repeat("v", 1000)))
	in := []byte(strings.Repeat("GET big\r\n", 10) + "GET bi")
	out, n, quit := s.Serve(nil, in, 0)
	assert.False(t, quit)
	assert.Equal(t, 90, n, "the split command is left for later")
	assert.Equal(t, 10*1009, len(out))

	out, n, _ = s.Serve(nil, in, 2500)
	assert.Equal(t, 27, n, "stops once the output reaches the limit")
	assert.Equal(t, 3*1009, len(out))
}

func TestServeProtocolError(t *testing.T) {
	var s resp.Store
	out, _, quit := s.Serve(nil, []byte("PING\r\n*1\r\n:x\r\n"), 0)
	assert.True(t, quit)
	assert.Equal(t, "+PONG\r\n-ERR Protocol error: expected '$', got ':'\r\n", string(out))
}

func TestServeAllocs(t *testing.T) {
	var s resp.Store
	s.Set([]byte("k"), []byte("v"))
	in := []byte(strings.Repeat("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", 16))
	out := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() { s.Serve(out[:0], in, 0) })
	assert.Zero(t, allocs)
}

func Example() {
	var s resp.Store
	out, n, quit := s.Serve(nil, []byte("SET greeting hello\r\n*2\r\n$3\r\nGET\r\n$8\r\ngreeting\r\nGET gr"), 0)
	fmt.Printf("%q consumed=%d quit=%v\n", out, n, quit)
	// Output: "+OK\r\n$5\r\nhello\r\n" consumed=47 quit=false
}

// TestSetOverwriteInPlace: a value replaced by one of about its size keeps
// its memory, so a server overwriting keys makes no garbage; a much
// smaller or bigger value gets memory of its own.
func TestSetOverwriteInPlace(t *testing.T) {
	var s resp.Store
	s.Set([]byte("k"), []byte(strings.Repeat("a", 1000)))
	in := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$900\r\n" + strings.Repeat("b", 900) + "\r\n")
	out := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() { s.Serve(out[:0], in, 0) })
	assert.Zero(t, allocs, "SET over a value of about the same size")
	v, ok := s.Get([]byte("k"))
	require.True(t, ok)
	assert.Equal(t, strings.Repeat("b", 900), string(v))
	s.CopyValues = true
	allocs = testing.AllocsPerRun(100, func() { s.Serve(out[:0], in, 0) })
	assert.Equal(t, 1.0, allocs, "SET with CopyValues")
	s.CopyValues = false

	for _, n := range []int{10, 5000} {
		s.Set([]byte("k"), []byte(strings.Repeat("c", n)))
		v, _ = s.Get([]byte("k"))
		assert.Equal(t, strings.Repeat("c", n), string(v))
	}
	// A value that was copied out before the overwrite keeps its bytes.
	s.Set([]byte("k"), []byte(strings.Repeat("d", 5000)))
	assert.Equal(t, strings.Repeat("c", 5000), string(v))
}
