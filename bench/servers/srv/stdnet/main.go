// Command stdnet is the comparison's RESP server on the standard library:
// net.Listener and a goroutine per connection (-loops is ignored: Go's own
// netpoller does the multiplexing).
package main

import (
	"net"

	"github.com/idlemux/idlemux/bench/servers/internal/serve"
	"github.com/idlemux/idlemux/examples/kv/resp"
)

func handle(c net.Conn, store *resp.Store) {
	defer c.Close()
	in := make([]byte, 0, 4096)
	var out []byte
	for {
		if len(in) == cap(in) {
			in = append(in, make([]byte, cap(in))...)[:len(in)]
		}
		n, err := c.Read(in[len(in):cap(in)])
		if err != nil {
			return
		}
		in = in[:len(in)+n]
		// Replies go out in pieces of at most ReplyLimit: a blocking Write
		// is this server's backpressure.
		used := 0
		for {
			var k int
			var quit bool
			out, k, quit = store.Serve(out[:0], in[used:], serve.ReplyLimit)
			used += k
			if len(out) > 0 {
				if _, err := c.Write(out); err != nil {
					return
				}
			}
			if quit {
				return
			}
			if k == 0 {
				break
			}
		}
		in = in[:copy(in, in[used:])]
	}
}

func main() {
	cfg := serve.Parse()
	store := cfg.Store()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		serve.Fatalf("net: %v", err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c, store)
		}
	}()
	serve.Ready()
	serve.Wait()
	serve.Exit(store.Commands(), 0) // no loops of its own
}
