package main

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServersSpeakRESP builds every server and checks that each answers
// the same way: commands split into single bytes, pipelined commands, a
// big value, CONFIG GET as redis-benchmark sends it, and QUIT.
func TestServersSpeakRESP(t *testing.T) {
	bin := t.TempDir()
	require.NoError(t, buildServers(bin, servers))
	for _, srv := range servers {
		t.Run(srv.Name, func(t *testing.T) {
			c, err := startServer(bin, srv, 0)
			require.NoError(t, err)
			defer func() {
				stats, err := c.stop()
				require.NoError(t, err)
				assert.Contains(t, stats, "commands")
				if srv.Loops > 0 {
					assert.Equal(t, strconv.Itoa(srv.Loops), stats["loops"])
				}
			}()
			conn, err := net.Dial("tcp", c.Addr)
			require.NoError(t, err)
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			r := bufio.NewReader(conn)
			expect := func(kind byte, line string, bulk string) {
				t.Helper()
				rep, err := readReply(r, true)
				require.NoError(t, err)
				assert.Equal(t, string(kind), string(rep.Kind))
				if line != "" {
					assert.Equal(t, line, rep.Line)
				}
				if kind == '$' {
					assert.Equal(t, bulk, string(rep.Bulk))
				}
			}

			// One byte per write: every server must wait for the rest.
			for _, b := range appendCommand(nil, "SET", "k", "hello") {
				_, err := conn.Write([]byte{b})
				require.NoError(t, err)
				time.Sleep(time.Millisecond)
			}
			expect('+', "OK", "")

			var p []byte
			p = appendCommand(p, "GET", "k")
			p = appendCommand(p, "PING")
			p = appendCommand(p, "ECHO", "e")
			p = appendCommand(p, "DBSIZE")
			p = appendCommand(p, "DEL", "k")
			p = appendCommand(p, "GET", "k")
			_, err = conn.Write(p)
			require.NoError(t, err)
			expect('$', "", "hello")
			expect('+', "PONG", "")
			expect('$', "", "e")
			expect(':', "1", "")
			expect(':', "1", "")
			rep, err := readReply(r, true)
			require.NoError(t, err)
			assert.Equal(t, -1, rep.Len, "GET of a deleted key")

			big := strings.Repeat("b", 3<<20+7)
			_, err = conn.Write(appendCommand(appendCommand(nil, "SET", "big", big), "GET", "big"))
			require.NoError(t, err)
			expect('+', "OK", "")
			expect('$', "", big)

			_, err = conn.Write(appendCommand(nil, "CONFIG", "GET", "save"))
			require.NoError(t, err)
			rep, err = readReply(r, true)
			require.NoError(t, err)
			assert.Equal(t, "*", string(rep.Kind))

			_, err = conn.Write(appendCommand(nil, "QUIT"))
			require.NoError(t, err)
			expect('+', "OK", "")
			_, err = r.ReadByte()
			assert.Error(t, err, "the connection stays open after QUIT")
		})
	}
}

// TestGoLoad runs the Go load generator against one server and checks that
// it counts what it sent.
func TestGoLoad(t *testing.T) {
	bin := t.TempDir()
	srv, _ := findServer("net")
	require.NoError(t, buildServers(bin, []server{srv}))
	c, err := startServer(bin, srv, 0)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, pipe := range []int{1, 4} {
		res, err := goLoad{}.Run(ctx, c.Addr, loadParams{Tests: []string{"set", "get"}, Clients: 3, Requests: 301, Size: 10, Keys: 5, Pipeline: pipe})
		require.NoError(t, err)
		require.Len(t, res, 2)
		for _, r := range res {
			assert.Equal(t, 301, r.Requests)
			assert.Positive(t, r.RPS)
			assert.LessOrEqual(t, r.P50ms, r.P99ms)
		}
	}
	stats, err := c.stop()
	require.NoError(t, err)
	// 2×301 per pipelining depth, and the driver's PING.
	assert.Equal(t, "1205", stats["commands"])
}
